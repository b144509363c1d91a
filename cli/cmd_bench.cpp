// roberta bench infer|train: times the engine on random ids of exactly --seq-len tokens
// and prints one JSON line per (batch, seq), with the same fields as the PyTorch and ONNX
// Runtime runners (bench/torch, bench/ort) so bench/compare.py can put them side by side.
//
// Timing runs in blocks of >= 0.25 s; a block during which OTHER processes used more than
// --busy-threshold cores (from /proc/stat minus this process's own CPU time) is discarded
// and repeated (ANCHORS.md lesson 5), at most 10 times per measurement.
//
// Both modes run the product's code: infer is model::forward_logits in the model's weight
// format (fp32, or bf16 / int8 packed once at load, exactly as `predict --precision` does);
// train is train::TrainEngine::step, the trainer's optimizer step (fp32 | bf16 GEMM inputs).
// --device cuda runs the same functions on a GPU (bf16 there: fp32 weights, bf16 GEMMs).
// Each line also reports the measured GEMM peak for that precision on this machine (a packed
// 2048×768·768ᵀ… product set shaped like the model's, same threads) and the share of it the
// whole model achieved, plus the time to load the checkpoint and to pack it.
//
// This is a developer tool, so it reaches below the public API into model/ and kernels/.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "commands.h"
#include "core/check.h"
#include "device/cpu_isa.h"
#include "device/device_choice.h"
#include "kernels/linear.h"
#include "kernels/optimizer.h"
#include "model/checkpoint.h"
#include "model/roberta_model.h"
#include "roberta/classifier.h"
#include "train/train_step.h"

namespace rc::cli {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// CPU seconds used by all processes (from /proc/stat) and by this one.
double all_busy_s() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  long long v[8] = {};
  in >> cpu;
  for (long long& x : v) in >> x;
  const double hz = double(sysconf(_SC_CLK_TCK));
  long long total = 0;
  for (long long x : v) total += x;
  return double(total - v[3] - v[4]) / hz;
}
double self_busy_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

struct Timing {
  std::vector<double> ms;
  int busy_retries = 0;
  double others_cores = 0;
};

// Runs fn in guarded blocks until `iters` clean samples are collected.
template <class Fn>
Timing time_guarded(Fn fn, int iters, int warmup, double busy_threshold) {
  for (int i = 0; i < warmup; ++i) fn();
  Timing t;
  double others_sum = 0;
  int blocks = 0;
  while (int(t.ms.size()) < iters) {
    std::vector<double> block;
    const double a0 = all_busy_s(), s0 = self_busy_s(), w0 = now_s();
    do {
      const double t0 = now_s();
      fn();
      block.push_back((now_s() - t0) * 1e3);
    } while (now_s() - w0 < 0.25 && int(t.ms.size() + block.size()) < iters);
    const double wall = now_s() - w0;
    const double others = std::max(0.0, ((all_busy_s() - a0) - (self_busy_s() - s0)) / wall);
    if (others > busy_threshold && t.busy_retries < 10) {
      ++t.busy_retries;
      continue;
    }
    others_sum += others;
    ++blocks;
    t.ms.insert(t.ms.end(), block.begin(), block.end());
  }
  t.others_cores = blocks ? others_sum / blocks : 0;
  return t;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double idx = p * double(v.size() - 1);
  const size_t lo = size_t(std::floor(idx)), hi = size_t(std::ceil(idx));
  return v[lo] + (v[hi] - v[lo]) * (idx - double(lo));
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      out.push_back(std::stoi(item));
    } catch (...) {
      RC_THROW(Errc::invalid_argument, "'", s, "' is not a comma-separated list of numbers");
    }
    RC_CHECK(out.back() > 0, Errc::invalid_argument, "sizes must be positive, got ", out.back());
  }
  RC_CHECK(!out.empty(), Errc::invalid_argument, "empty list");
  return out;
}

// Forward FLOPs per sequence of T tokens: the matmuls (2·params touched per token) plus
// attention's two T×T products per layer, plus the head on one token.
double forward_flops(const model::RobertaConfig& c, int64_t T) {
  const double C = double(c.hidden_size), I = double(c.intermediate_size), L = double(c.num_hidden_layers);
  const double per_token = 2.0 * L * (4 * C * C + 2 * C * I) + 4.0 * L * double(T) * C;
  return per_token * double(T) + 2.0 * (C * C + C * double(c.num_labels()));
}

// TFLOP/s of the packed GEMMs a layer runs (QKV, out, FFN in with GELU, FFN out) at M rows, for
// one weight type: the ceiling the whole model is measured against.
double gemm_peak_tflops(kernels::PackedType type, int64_t M, int64_t C, int64_t I) {
  const kernels::ExecCtx ctx;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  auto randv = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = nd(rng);
    return v;
  };
  const auto w1 = randv(3 * C * C), w2 = randv(C * C), w3 = randv(I * C), w4 = randv(C * I);
  const auto p1 = kernels::PackedLinear::pack(w1.data(), 3 * C, C, type);
  const auto p2 = kernels::PackedLinear::pack(w2.data(), C, C, type);
  const auto p3 = kernels::PackedLinear::pack(w3.data(), I, C, type);
  const auto p4 = kernels::PackedLinear::pack(w4.data(), C, I, type);
  const auto x = randv(M * std::max(C, I));
  std::vector<float> y(size_t(M * std::max(3 * C, I)));
  auto run = [&] {
    kernels::linear_forward(ctx, y.data(), x.data(), p1, nullptr, M, kernels::Epilogue::none);
    kernels::linear_forward(ctx, y.data(), x.data(), p2, nullptr, M, kernels::Epilogue::none);
    kernels::linear_forward(ctx, y.data(), x.data(), p3, nullptr, M, kernels::Epilogue::gelu_erf);
    kernels::linear_forward(ctx, y.data(), x.data(), p4, nullptr, M, kernels::Epilogue::none);
  };
  run();
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = now_s();
    run();
    best = std::min(best, now_s() - t0);
  }
  const double flops = 2.0 * double(M) * (4.0 * double(C * C) + 2.0 * double(C * I));
  return flops / best / 1e12;
}

struct BenchOpts {
  std::string mode, model, batch = "1,32", seq = "32,64", precision = "fp32", device = "cpu";
  std::string lengths;
  int threads = 0, iters = 20, warmup = 3;
  double busy_threshold = 0.3, peak_tflops = 0;
};

// bench train --lengths: the trainer's optimizer step on batches whose real lengths follow a
// file's distribution (dynamic padding to a multiple of 8, as a length-bucketed trainer runs
// them). FLOPs are the useful ones over real tokens: 6·(12·C²·L + head)·tokens + 12·L·C·Σ len²
// (bench/gpu/torch2_baseline.py counts the same).
void bench_train_lengths(const kernels::ExecCtx& ctx, model::RobertaModel& m, const DeviceChoice& dev, int B,
                         const BenchOpts& o, double load_ms) {
  const model::RobertaConfig& c = m.config();
  std::ifstream in(o.lengths);
  RC_CHECK(in, Errc::not_found, o.lengths, ": cannot open the lengths file");
  std::vector<int32_t> all;
  for (long long x; in >> x;) all.push_back(int32_t(std::clamp<long long>(x, 2, c.max_tokens())));
  RC_CHECK(!all.empty(), Errc::format, o.lengths, ": no lengths in it");
  std::mt19937_64 gen(1234);
  std::shuffle(all.begin(), all.end(), gen);
  auto padded = [&](const std::vector<int32_t>& lens) {
    const int64_t mx = *std::max_element(lens.begin(), lens.end());
    return std::min<int64_t>((mx + 7) / 8 * 8, c.max_tokens());
  };
  std::vector<std::vector<int32_t>> batches(size_t(o.iters));
  for (int i = 0; i < o.iters; ++i)
    for (int j = 0; j < B; ++j) batches[size_t(i)].push_back(all[size_t(int64_t(i) * B + j) % all.size()]);
  int64_t max_T = 8;
  for (const auto& b : batches) max_T = std::max(max_T, padded(b));
  train::OptimConfig oc;
  oc.weight_decay = 0.01;
  oc.schedule.kind = train::LrScheduleKind::constant;
  oc.schedule.base_lr = 2e-5;
  train::TrainEngine engine(m, oc, ctx, model::DropoutConfig::from(c), 42, B, max_T);
  std::uniform_int_distribution<int32_t> token(3, int32_t(std::min<int64_t>(c.vocab_size, 50000)) - 1);
  struct Host {
    std::vector<int32_t> ids, lens, labels;
    model::Batch batch;
  };
  std::vector<Host> host(batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    const int64_t T = padded(batches[i]);
    Host& h = host[i];
    h.ids.assign(size_t(B * T), c.pad_token_id);
    h.lens = batches[i];
    h.labels.resize(size_t(B));
    for (int b = 0; b < B; ++b) {
      const int32_t n = h.lens[size_t(b)];
      for (int32_t t = 0; t < n; ++t) h.ids[size_t(b * T + t)] = token(gen);
      h.ids[size_t(b * T)] = c.bos_token_id;
      h.ids[size_t(b * T + n - 1)] = c.eos_token_id;
      h.labels[size_t(b)] = b % int(c.num_labels());
    }
    h.batch = model::Batch{B, T, h.ids.data(), h.lens.data(), nullptr};
  }
  auto step = [&](const Host& h) {
    const model::Batch micro[] = {h.batch};
    const int32_t* labels[] = {h.labels.data()};
    engine.step(micro, labels);  // synchronises (the loss and gradient norm come back to the host)
  };
  // Warm-up: one step per distinct padded length (caches, GEMM plans), outside the timing.
  std::vector<int64_t> seen;
  for (const Host& h : host)
    if (std::find(seen.begin(), seen.end(), h.batch.T) == seen.end()) {
      seen.push_back(h.batch.T);
      step(h);
    }
  const double C = double(c.hidden_size), L = double(c.num_hidden_layers), K = double(c.num_labels());
  const double per_token = L * 12 * C * C + C * C + K * C;
  double flops = 0, tokens = 0;
  const double t0 = now_s();
  for (const Host& h : host) {
    step(h);
    for (int32_t n : h.lens) {
      tokens += n;
      flops += 6.0 * per_token * n + 12.0 * L * C * double(n) * n;
    }
  }
  const double sec = now_s() - t0;
  const double tflops = flops / sec / 1e12;
  nlohmann::ordered_json j;
  j["engine"] = "roberta.cpp";
  j["mode"] = "train";
  j["precision"] = o.precision;
  j["batch"] = B;
  j["lengths"] = o.lengths;
  j["steps"] = o.iters;
  j["padded_lengths"] = seen.size();
  j["device"] = dev.name();
  j["threads"] = rc::num_threads();
  j["ms_per_step"] = sec * 1e3 / double(o.iters);
  j["tok_per_s"] = tokens / sec;
  j["tflops"] = tflops;
  if (o.peak_tflops > 0) j["mfu"] = tflops / o.peak_tflops;
  j["load_ms"] = load_ms;
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto opts = std::make_shared<BenchOpts>();
  auto* cmd = app.add_subcommand("bench", "Time inference or a training step; one JSON line per shape");
  cmd->add_option("mode", opts->mode, "infer | train")->required()->check(CLI::IsMember({"infer", "train"}));
  cmd->add_option("--model", opts->model, "Checkpoint folder (e.g. tools/make_checkpoint.py --size base)")->required();
  cmd->add_option("--batch-size", opts->batch, "Comma list of batch sizes");
  cmd->add_option("--seq-len", opts->seq, "Comma list of sequence lengths (tokens incl. <s> </s>)");
  cmd->add_option("--precision", opts->precision,
                  "fp32 | bf16 | int8 (infer: packed weights, fused forward; train: fp32 | bf16)");
  cmd->add_option("--iters", opts->iters, "Timed iterations per shape")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", opts->warmup, "Untimed iterations first")->check(CLI::NonNegativeNumber);
  cmd->add_option("--busy-threshold", opts->busy_threshold,
                  "Discard a timing block when other processes used more cores than this");
  cmd->add_option("--lengths", opts->lengths,
                  "train: draw each batch's real lengths from this file (one per line, e.g. "
                  "bench/gpu/tweeteval_train_lengths.txt; shuffled, seed 1234), padded to a multiple of 8; "
                  "--iters steps after one warm-up step per padded length");
  cmd->add_option("--peak-tflops", opts->peak_tflops,
                  "Report mfu = useful TFLOP/s / this peak (e.g. 790 for an H200's dense bf16)")
      ->check(CLI::NonNegativeNumber);
  add_threads_option(*cmd, opts->threads);
  add_device_option(*cmd, opts->device);
  cmd->callback([opts] {
    apply_threads(opts->threads);
    const DeviceChoice dev = resolve_device_choice(opts->device);
    const Precision precision = parse_precision(opts->precision);
    RC_CHECK(opts->mode == "infer" || precision != Precision::int8, Errc::unsupported,
             "int8 is for inference only\nHINT: train with --precision fp32 or bf16");
    RC_CHECK(!dev.cuda || precision != Precision::int8, Errc::unsupported,
             "int8 runs on the CPU only\nHINT: use --precision bf16 with --device cuda");
    kernels::ExecCtx ctx;
    if (dev.cuda) {
      ctx.device = Device::cuda;
      ctx.device_index = dev.index;
      select_device(ctx.device, ctx.device_index);
    }
    // Packed weights on the CPU for inference; bf16 GEMM inputs for training and on CUDA.
    const bool packed = opts->mode == "infer" && precision != Precision::fp32 && !dev.cuda;
    if (precision == Precision::bf16 && !packed) ctx.matmul_precision = kernels::MatmulPrecision::bf16;
    const double load0 = now_s();
    auto m = model::load_checkpoint(opts->model, {});
    m->to_device(ctx);
    const double load_ms = (now_s() - load0) * 1e3;
    const model::RobertaConfig& c = m->config();
    double pack_ms = 0;
    if (packed) {
      const double t0 = now_s();
      m->set_weight_format(precision == Precision::int8 ? model::WeightFormat::int8 : model::WeightFormat::bf16);
      pack_ms = (now_s() - t0) * 1e3;
    }
    const kernels::PackedType peak_type = precision == Precision::int8   ? kernels::PackedType::s8
                                          : precision == Precision::bf16 ? kernels::PackedType::bf16
                                                                         : kernels::PackedType::f32;
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> token(3, int32_t(std::min<int64_t>(c.vocab_size, 50000)) - 1);
    if (!opts->lengths.empty()) {
      RC_CHECK(opts->mode == "train", Errc::invalid_argument, "--lengths is for `bench train`");
      for (int B : parse_list(opts->batch)) bench_train_lengths(ctx, *m, dev, B, *opts, load_ms);
      return;
    }
    for (int B : parse_list(opts->batch)) {
      for (int T : parse_list(opts->seq)) {
        RC_CHECK(T <= c.max_tokens() && T >= 2, Errc::invalid_argument, "--seq-len ", T, " outside [2, ",
                 c.max_tokens(), "]");
        std::vector<int32_t> ids(static_cast<size_t>(B) * T), lens(static_cast<size_t>(B), T),
            labels(static_cast<size_t>(B));
        for (int b = 0; b < B; ++b) {
          for (int t = 0; t < T; ++t) ids[size_t(b) * T + t] = token(rng);
          ids[size_t(b) * T] = c.bos_token_id;
          ids[size_t(b) * T + T - 1] = c.eos_token_id;
          labels[b] = b % int(c.num_labels());
        }
        const model::Batch batch{B, T, ids.data(), lens.data(), nullptr};
        Timing timing;
        double flops = forward_flops(c, T) * B;
        if (opts->mode == "infer") {
          model::InferenceWorkspace ws(ctx, c, B, T);
          std::vector<float> logits(size_t(B) * c.num_labels());
          // forward_logits returns host logits: on CUDA each call ends synchronised.
          timing = time_guarded([&] { model::forward_logits(ctx, *m, batch, ws, logits.data()); }, opts->iters,
                                opts->warmup, opts->busy_threshold);
        } else {
          // One optimizer step exactly as the trainer takes it (train::TrainEngine): forward +
          // backward with dropout, global-norm clipping, fused AdamW over the flat buffers.
          flops *= 3;
          train::OptimConfig oc;
          oc.weight_decay = 0.01;
          oc.schedule.kind = train::LrScheduleKind::constant;
          oc.schedule.base_lr = 2e-5;
          train::TrainEngine engine(*m, oc, ctx, model::DropoutConfig::from(c), 42, B, T);
          const model::Batch micro[] = {batch};
          const int32_t* micro_labels[] = {labels.data()};
          timing =
              time_guarded([&] { engine.step(micro, micro_labels); }, opts->iters, opts->warmup, opts->busy_threshold);
        }
        const double med = percentile(timing.ms, 0.5);
        const double tflops = flops / (med / 1e3) / 1e12;
        // The CPU GEMM ceiling (a GPU run reports 0: the GPU peak is in scripts/gpu-check.sh).
        const double peak =
            dev.cuda ? 0.0 : gemm_peak_tflops(peak_type, int64_t(B) * T, c.hidden_size, c.intermediate_size);
        nlohmann::ordered_json j;
        j["engine"] = "roberta.cpp";
        j["mode"] = opts->mode;
        j["precision"] = opts->precision;
        j["batch"] = B;
        j["seq"] = T;
        j["threads"] = rc::num_threads();
        j["isa"] = std::string(cpu_isa_name(cpu_isa()));
        j["iters"] = int(timing.ms.size());
        j["ms_median"] = med;
        j["ms_p10"] = percentile(timing.ms, 0.1);
        j["ms_p90"] = percentile(timing.ms, 0.9);
        j["seq_per_s"] = B / (med / 1e3);
        j["tok_per_s"] = double(B) * T / (med / 1e3);
        j["tflops"] = tflops;
        j["gemm_peak_tflops"] = peak;
        j["pct_of_gemm_peak"] = peak > 0 ? 100.0 * tflops / peak : 0.0;
        if (opts->peak_tflops > 0) j["mfu"] = tflops / opts->peak_tflops;
        j["device"] = dev.name();
        j["load_ms"] = load_ms;
        j["pack_ms"] = pack_ms;
        j["busy_retries"] = timing.busy_retries;
        j["others_cores"] = timing.others_cores;
        std::printf("%s\n", j.dump().c_str());
        std::fflush(stdout);
      }
    }
  });
}

}  // namespace rc::cli
