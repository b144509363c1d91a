// roberta bench infer|train: times the engine on random ids of exactly --seq-len tokens
// and prints one JSON line per (batch, seq), with the same fields as the PyTorch and ONNX
// Runtime runners (bench/torch, bench/ort) so bench/compare.py can put them side by side.
//
// Timing runs in blocks of >= 0.25 s; a block during which OTHER processes used more than
// --busy-threshold cores (from /proc/stat minus this process's own CPU time) is discarded
// and repeated (ANCHORS.md lesson 5), at most 10 times per measurement.
//
// --precision: infer fp32 runs model::forward_logits (the fp32 path); bf16 and int8 run the
// packed model (model/packed_model.h: weights packed once, fused forward) exactly as
// `predict --precision` does.  train fp32 | bf16 (GEMM inputs rounded to bf16 per call).
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
#include "kernels/linear.h"
#include "kernels/optimizer.h"
#include "model/checkpoint.h"
#include "model/packed_model.h"
#include "model/roberta_model.h"
#include "roberta/classifier.h"

namespace rc::cli {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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

}  // namespace

void add_bench_command(CLI::App& app) {
  struct Opts {
    std::string mode, model, batch = "1,32", seq = "32,64", precision = "fp32";
    int threads = 0, iters = 20, warmup = 3;
    double busy_threshold = 0.3;
  };
  auto opts = std::make_shared<Opts>();
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
  add_threads_option(*cmd, opts->threads);
  cmd->callback([opts] {
    apply_threads(opts->threads);
    const Precision precision = parse_precision(opts->precision);
    RC_CHECK(opts->mode == "infer" || precision != Precision::int8, Errc::unsupported,
             "int8 is for inference only\nHINT: train with --precision fp32 or bf16");
    kernels::ExecCtx ctx;
    if (precision == Precision::bf16 && opts->mode == "train") ctx.matmul_precision = kernels::MatmulPrecision::bf16;
    const double load0 = now_s();
    auto m = model::load_checkpoint(opts->model, {});
    const double load_ms = (now_s() - load0) * 1e3;
    const model::RobertaConfig& c = m->config();
    std::unique_ptr<model::PackedModel> packed;
    double pack_ms = 0;
    if (opts->mode == "infer" && precision != Precision::fp32) {
      const double t0 = now_s();
      packed = std::make_unique<model::PackedModel>(
          *m, precision == Precision::int8 ? model::PackedPrecision::int8 : model::PackedPrecision::bf16);
      pack_ms = (now_s() - t0) * 1e3;
    }
    const kernels::PackedType peak_type = precision == Precision::int8   ? kernels::PackedType::s8
                                          : precision == Precision::bf16 ? kernels::PackedType::bf16
                                                                         : kernels::PackedType::f32;
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> token(3, int32_t(std::min<int64_t>(c.vocab_size, 50000)) - 1);
    for (int B : parse_list(opts->batch)) {
      for (int T : parse_list(opts->seq)) {
        RC_CHECK(T <= c.max_tokens() && T >= 2, Errc::invalid_argument, "--seq-len ", T, " outside [2, ",
                 c.max_tokens(), "]");
        std::vector<int32_t> ids(static_cast<size_t>(B) * T), lens(static_cast<size_t>(B), T), labels(static_cast<size_t>(B));
        for (int b = 0; b < B; ++b) {
          for (int t = 0; t < T; ++t) ids[size_t(b) * T + t] = token(rng);
          ids[size_t(b) * T] = c.bos_token_id;
          ids[size_t(b) * T + T - 1] = c.eos_token_id;
          labels[b] = b % int(c.num_labels());
        }
        const model::Batch batch{B, T, ids.data(), lens.data(), nullptr};
        Timing timing;
        double flops = forward_flops(c, T) * B;
        if (opts->mode == "infer" && packed) {
          model::PackedWorkspace ws(c, B, T);
          std::vector<float> logits(size_t(B) * c.num_labels());
          timing = time_guarded([&] { packed->forward_logits(ctx, batch, ws, logits.data()); }, opts->iters,
                                opts->warmup, opts->busy_threshold);
        } else if (opts->mode == "infer") {
          model::InferenceWorkspace ws(c, B, T);
          std::vector<float> logits(size_t(B) * c.num_labels());
          timing = time_guarded([&] { model::forward_logits(ctx, *m, batch, ws, logits.data()); }, opts->iters,
                                opts->warmup, opts->busy_threshold);
        } else {
          // One optimizer step as the trainer runs it: forward + backward with dropout,
          // global-norm clipping, fused AdamW over the flat buffers.
          flops *= 3;
          model::TrainWorkspace ws(c, B, T);
          const int64_t n = m->num_params();
          model::FloatBuffer grads(n), mom(n), vel(n);
          std::vector<kernels::AdamWSegment> segs;
          for (const auto& e : m->layout().entries()) segs.push_back({e.offset, e.numel, e.decay});
          const auto dropout = model::DropoutConfig::from(c);
          int64_t step = 0;
          timing = time_guarded(
              [&] {
                kernels::zero(ctx, grads.data(), n);
                model::forward_backward(ctx, *m, batch, labels.data(), dropout, uint64_t(step), 1.0f, grads.data(),
                                        ws, nullptr);
                const double norm = std::sqrt(kernels::sum_squares(ctx, grads.data(), n));
                kernels::AdamWHyper h;
                h.lr = 2e-5f;
                h.weight_decay = 0.01f;
                h.step = ++step;
                h.grad_scale = norm > 1.0 ? float(1.0 / (norm + 1e-6)) : 1.0f;
                kernels::adamw_step(ctx, m->params(), grads.data(), mom.data(), vel.data(), segs.data(),
                                    int64_t(segs.size()), h);
              },
              opts->iters, opts->warmup, opts->busy_threshold);
        }
        const double med = percentile(timing.ms, 0.5);
        const double tflops = flops / (med / 1e3) / 1e12;
        const double peak = gemm_peak_tflops(peak_type, int64_t(B) * T, c.hidden_size, c.intermediate_size);
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
        j["pct_of_gemm_peak"] = 100.0 * tflops / peak;
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
