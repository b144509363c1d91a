// rc::run_benchmark (include/roberta/benchmark.h): the product's own code paths, timed.
// infer is model::forward_logits in the model's weight format (a masked-LM model:
// model::forward_mlm_logits, what fill-mask runs); train is train::TrainEngine::step (a
// masked-LM model: the step `roberta pretrain` takes, on its collator's masks). --device cuda
// runs the same functions on a GPU (bf16 there: fp32 weights, bf16 GEMMs). The profile
// (kernels/profile.h) runs after the timing, so the timed figures never carry its (small) cost.
#include "roberta/benchmark.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "core/check.h"
#include "core/clock.h"
#include "device/cpu_isa.h"
#include "device/device_choice.h"
#include "kernels/profile.h"
#include "model/checkpoint.h"
#include "model/mlm_head.h"
#include "model/roberta_model.h"
#include "train/mlm_collator.h"
#include "train/train_step.h"

namespace rc {

namespace {

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
    const double a0 = all_busy_s(), s0 = self_busy_s(), w0 = monotonic_seconds();
    do {
      const double t0 = monotonic_seconds();
      fn();
      block.push_back((monotonic_seconds() - t0) * 1e3);
    } while (monotonic_seconds() - w0 < 0.25 && int(t.ms.size() + block.size()) < iters);
    const double wall = monotonic_seconds() - w0;
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

// Forward FLOPs per sequence of T tokens: the matmuls (2·params touched per token) plus
// attention's two T×T products per layer, plus the head on one token.
double encoder_flops(const model::RobertaConfig& c, int64_t T) {
  const double C = double(c.hidden_size), I = double(c.intermediate_size), L = double(c.num_hidden_layers);
  const double per_token = 2.0 * L * (4 * C * C + 2 * C * I) + 4.0 * L * double(T) * C;
  return per_token * double(T);
}
double forward_flops(const model::RobertaConfig& c, int64_t T) {
  const double C = double(c.hidden_size);
  return encoder_flops(c, T) + 2.0 * (C * C + C * double(c.num_labels()));
}
// The lm_head on one masked row: dense (C×C) and the decoder over the vocabulary (V×C).
double mlm_head_flops(const model::RobertaConfig& c) {
  const double C = double(c.hidden_size);
  return 2.0 * (C * C + C * double(c.vocab_size));
}

// The head a bench row names: what the checkpoint's architectures say it is.
const char* head_name(model::HeadKind head) {
  switch (head) {
    case model::HeadKind::masked_lm:
      return "masked-lm";
    case model::HeadKind::token_classifier:
      return "token-classification";
    default:
      return "sequence-classification";
  }
}

// A masked-LM batch's targets as `roberta pretrain` draws them (train::mask_batch, the
// collator's draws: 15% of the real non-special tokens, most of them replaced by the mask id in
// ids, in place), step `step`. A row left without a target gets its second token as one, so
// that every shape times the lm_head (a fill-mask text has at least one <mask>). labels (B·T):
// the original id at a target, -100 elsewhere.
std::vector<int32_t> mlm_bench_labels(const model::RobertaConfig& c, int64_t B, int64_t T, std::vector<int32_t>& ids,
                                      const std::vector<int32_t>& lens, int64_t step) {
  train::MlmMasking masking;
  // The model folder alone says no mask id (no tokenizer is read): the last id, RoBERTa's and
  // XLM-R's <mask>; another family's [MASK] elsewhere costs the same.
  masking.mask_id = int32_t(c.vocab_size - 1);
  masking.random_vocab = c.vocab_size;
  masking.special_ids = {c.bos_token_id, c.eos_token_id, c.pad_token_id, masking.mask_id};
  train::PaddedBatch pb;
  pb.B = B;
  pb.T = T;
  pb.ids = std::move(ids);
  pb.seq_lens = lens;
  std::vector<int64_t> example(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) example[size_t(b)] = b;
  std::vector<int32_t> labels;
  train::mask_batch(masking, 1234, step, example, pb, labels);
  ids = std::move(pb.ids);
  for (int64_t b = 0; b < B; ++b) {
    const auto row = labels.begin() + b * T;
    if (lens[size_t(b)] > 1 && std::all_of(row, row + T, [](int32_t l) { return l == model::kIgnoreLabel; })) {
      labels[size_t(b * T + 1)] = ids[size_t(b * T + 1)];
      ids[size_t(b * T + 1)] = masking.mask_id;
    }
  }
  return labels;
}

std::vector<int64_t> target_positions(const std::vector<int32_t>& labels) {
  std::vector<int64_t> positions;
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] != model::kIgnoreLabel) positions.push_back(int64_t(i));
  return positions;
}

// `iters` runs of fn with a profiler attached (attach(&prof) … attach(nullptr)); means per iteration.
template <class Attach, class Fn>
BenchProfile profile_runs(Attach attach, int iters, Fn fn) {
  kernels::Profiler prof;
  attach(&prof);
  double wall = 0;
  for (int i = 0; i < iters; ++i) {
    const double t0 = monotonic_seconds();
    fn();
    wall += monotonic_seconds() - t0;
  }
  attach(nullptr);
  BenchProfile p;
  p.iterations = iters;
  const double per = 1e3 / double(iters);
  p.wall_ms = wall * per;
  double gemm_fwd = 0, gemm_all = 0;
  for (int f = 0; f < kernels::kOpFamilies; ++f) {
    const auto fam = kernels::OpFamily(f);
    OpTime t;
    t.family = kernels::op_family_name(fam);
    t.gemm = kernels::op_family_is_gemm(fam);
    t.forward_ms = prof.seconds(kernels::Phase::forward, fam) * per;
    t.backward_ms = prof.seconds(kernels::Phase::backward, fam) * per;
    t.optimizer_ms = prof.seconds(kernels::Phase::optimizer, fam) * per;
    int64_t calls = 0;
    for (int ph = 0; ph < kernels::kPhases; ++ph) calls += prof.calls(kernels::Phase(ph), fam);
    t.calls = double(calls) / double(iters);
    if (calls == 0) continue;
    p.forward_ms += t.forward_ms;
    p.backward_ms += t.backward_ms;
    p.optimizer_ms += t.optimizer_ms;
    if (t.gemm) {
      gemm_fwd += t.forward_ms;
      gemm_all += t.total_ms();
    }
    p.ops.push_back(std::move(t));
  }
  std::stable_sort(p.ops.begin(), p.ops.end(), [](const OpTime& a, const OpTime& b) {
    return a.gemm != b.gemm ? a.gemm : a.gemm ? false : a.total_ms() > b.total_ms();
  });
  const double all = p.forward_ms + p.backward_ms + p.optimizer_ms;
  p.attributed_pct = p.wall_ms > 0 ? 100.0 * all / p.wall_ms : 0.0;
  p.non_gemm_forward_pct = p.forward_ms > 0 ? 100.0 * (p.forward_ms - gemm_fwd) / p.forward_ms : 0.0;
  p.non_gemm_step_pct = all > 0 ? 100.0 * (all - gemm_all) / all : 0.0;
  return p;
}

model::Batch random_batch(const model::RobertaConfig& c, int B, int T, std::mt19937& rng, std::vector<int32_t>& ids,
                          std::vector<int32_t>& lens, std::vector<int32_t>& labels) {
  std::uniform_int_distribution<int32_t> token(3, int32_t(std::min<int64_t>(c.vocab_size, 50000)) - 1);
  ids.assign(size_t(B) * size_t(T), 0);
  lens.assign(size_t(B), T);
  labels.assign(size_t(B), 0);
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) ids[size_t(b) * T + t] = token(rng);
    ids[size_t(b) * T] = c.bos_token_id;
    ids[size_t(b) * T + T - 1] = c.eos_token_id;
    labels[size_t(b)] = b % int(c.num_labels());
  }
  return model::Batch{B, T, ids.data(), lens.data(), nullptr};
}

train::OptimConfig bench_optim() {
  train::OptimConfig oc;
  oc.weight_decay = 0.01;
  oc.schedule.kind = train::LrScheduleKind::constant;
  oc.schedule.base_lr = 2e-5;
  return oc;
}

// bench train with lengths: the trainer's optimizer step on batches whose real lengths follow
// a file's distribution (dynamic padding to a multiple of 8, as a length-bucketed trainer runs
// them). FLOPs are the useful ones over real tokens: 6·(12·C²·L + head)·tokens + 12·L·C·Σ len²
// (bench/gpu/torch2_baseline.py counts the same).
BenchResult bench_train_lengths(const kernels::ExecCtx& ctx, model::RobertaModel& m, const DeviceChoice& dev, int B,
                                const BenchOptions& o, double load_ms) {
  const model::RobertaConfig& c = m.config();
  std::ifstream in(o.lengths);
  RC_CHECK(in, Errc::not_found, o.lengths.string(), ": cannot open the lengths file");
  std::vector<int32_t> all;
  for (long long x; in >> x;) all.push_back(int32_t(std::clamp<long long>(x, 2, c.max_tokens())));
  RC_CHECK(!all.empty(), Errc::format, o.lengths.string(), ": no lengths in it");
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
  train::TrainEngine engine(m, bench_optim(), ctx, model::DropoutConfig::from(c), 42, B, max_T);
  std::uniform_int_distribution<int32_t> token(3, int32_t(std::min<int64_t>(c.vocab_size, 50000)) - 1);
  const bool mlm = m.head_kind() == model::HeadKind::masked_lm;
  struct Host {
    std::vector<int32_t> ids, lens, labels;  // labels: one per row, or a masked LM's per token
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
    if (mlm) h.labels = mlm_bench_labels(c, B, T, h.ids, h.lens, int64_t(i));
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
  // A masked LM's head runs on its target rows only (3x: forward and the two backward GEMMs).
  const double per_token = L * 12 * C * C + (mlm ? 0.0 : C * C + K * C);
  double flops = 0, tokens = 0;
  const double t0 = monotonic_seconds();
  for (const Host& h : host) {
    step(h);
    for (int32_t n : h.lens) {
      tokens += n;
      flops += 6.0 * per_token * n + 12.0 * L * C * double(n) * n;
    }
    if (mlm) flops += 3.0 * mlm_head_flops(c) * double(target_positions(h.labels).size());
  }
  const double sec = monotonic_seconds() - t0;
  const double tflops = flops / sec / 1e12;
  nlohmann::ordered_json j;
  j["engine"] = "roberta.cpp";
  j["mode"] = "train";
  j["head"] = head_name(m.head_kind());
  j["precision"] = precision_name(o.precision);
  j["batch"] = B;
  j["lengths"] = o.lengths.string();
  j["steps"] = o.iters;
  j["padded_lengths"] = seen.size();
  j["device"] = dev.name();
  j["threads"] = rc::num_threads();
  j["ms_per_step"] = sec * 1e3 / double(o.iters);
  j["tok_per_s"] = tokens / sec;
  j["tflops"] = tflops;
  if (o.peak_tflops > 0) j["mfu"] = tflops / o.peak_tflops;
  j["load_ms"] = load_ms;
  return {B, 0, j.dump(), std::nullopt};
}

}  // namespace

std::string BenchProfile::to_json() const {
  nlohmann::ordered_json j;
  j["iterations"] = iterations;
  j["wall_ms"] = wall_ms;
  j["forward_ms"] = forward_ms;
  j["backward_ms"] = backward_ms;
  j["optimizer_ms"] = optimizer_ms;
  j["attributed_pct"] = attributed_pct;
  j["non_gemm_forward_pct"] = non_gemm_forward_pct;
  j["non_gemm_step_pct"] = non_gemm_step_pct;
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const OpTime& t : ops) {
    nlohmann::ordered_json o;
    o["family"] = t.family;
    o["gemm"] = t.gemm;
    o["forward_ms"] = t.forward_ms;
    o["backward_ms"] = t.backward_ms;
    o["optimizer_ms"] = t.optimizer_ms;
    o["calls"] = t.calls;
    arr.push_back(std::move(o));
  }
  j["ops"] = std::move(arr);
  return j.dump();
}

std::string BenchProfile::to_table() const {
  const double all = forward_ms + backward_ms + optimizer_ms;
  const bool phases = backward_ms > 0 || optimizer_ms > 0;  // a training step: one column per phase
  std::ostringstream s;
  char line[320];
  s << (phases ? "| op family | forward ms | backward ms | optimizer ms | total ms | share | calls/iter |\n"
                 "|---|---|---|---|---|---|---|\n"
               : "| op family | ms | share | calls/iter |\n|---|---|---|---|\n");
  for (const OpTime& t : ops) {
    const double share = all > 0 ? 100.0 * t.total_ms() / all : 0.0;
    const std::string name = t.family + (t.gemm ? " (GEMM)" : "");
    if (phases)
      std::snprintf(line, sizeof line, "| %s | %.3f | %.3f | %.3f | %.3f | %.1f%% | %.0f |\n", name.c_str(),
                    t.forward_ms, t.backward_ms, t.optimizer_ms, t.total_ms(), share, t.calls);
    else
      std::snprintf(line, sizeof line, "| %s | %.3f | %.1f%% | %.0f |\n", name.c_str(), t.total_ms(), share, t.calls);
    s << line;
  }
  if (phases)
    std::snprintf(line, sizeof line, "| all families | %.3f | %.3f | %.3f | %.3f | 100%% | |\n", forward_ms,
                  backward_ms, optimizer_ms, all);
  else
    std::snprintf(line, sizeof line, "| all families | %.3f | 100%% | |\n", all);
  s << line;
  std::snprintf(line, sizeof line,
                "\nThe families cover %.1f%% of the %.3f ms wall time per iteration (mean of %d, profiler on). "
                "Non-GEMM share: %.1f%% of the forward",
                attributed_pct, wall_ms, iterations, non_gemm_forward_pct);
  s << line;
  if (phases) {
    std::snprintf(line, sizeof line, ", %.1f%% of the whole step", non_gemm_step_pct);
    s << line;
  }
  s << ".\n";
  return s.str();
}

void run_benchmark(const BenchOptions& o, const std::function<void(const BenchResult&)>& on_result) {
  RC_CHECK(o.mode == "infer" || o.mode == "train", Errc::invalid_argument, "bench mode '", o.mode,
           "': use infer or train");
  RC_CHECK(!o.batch_sizes.empty() && !o.seq_lens.empty(), Errc::invalid_argument, "bench: empty size list");
  for (int v : o.batch_sizes) RC_CHECK(v > 0, Errc::invalid_argument, "batch sizes must be positive, got ", v);
  for (int v : o.seq_lens) RC_CHECK(v > 0, Errc::invalid_argument, "sequence lengths must be positive, got ", v);
  RC_CHECK(o.iters > 0 && o.warmup >= 0, Errc::invalid_argument, "bench: --iters must be positive");
  const DeviceChoice dev = resolve_device_choice(o.device);
  const Precision precision = o.precision;
  RC_CHECK(o.mode == "infer" || precision != Precision::int8, Errc::unsupported,
           "int8 is for inference only\nHINT: train with --precision fp32 or bf16");
  RC_CHECK(!dev.cuda || precision != Precision::int8, Errc::unsupported,
           "int8 runs on the CPU only\nHINT: use --precision bf16 with --device cuda");
  RC_CHECK(
      !o.profile || !dev.cuda, Errc::unsupported,
      "--profile times CPU ops only for now (CUDA ops are asynchronous)\nHINT: drop --profile or use --device cpu");
  RC_CHECK(!o.profile || o.lengths.empty(), Errc::invalid_argument,
           "--profile runs on fixed shapes\nHINT: use --batch-size and --seq-len without --lengths");
  RC_CHECK(o.lengths.empty() || o.mode == "train", Errc::invalid_argument, "--lengths is for `bench train`");
  kernels::ExecCtx ctx;
  if (dev.cuda) {
    ctx.device = Device::cuda;
    ctx.device_index = dev.index;
    select_device(ctx.device, ctx.device_index);
  }
  // Packed weights on the CPU for inference, as a Classifier serves (fp32 too, unless
  // --master-weights); bf16 GEMM inputs for training and on CUDA.
  RC_CHECK(!o.master_weights || (o.mode == "infer" && precision == Precision::fp32 && !dev.cuda),
           Errc::invalid_argument, "--master-weights is for `bench infer --precision fp32` on the CPU",
           "\nHINT: drop --master-weights (training and bf16 / int8 inference have one weight path each)");
  const bool packed = o.mode == "infer" && !dev.cuda && !o.master_weights;
  if (precision == Precision::bf16 && !packed) ctx.matmul_precision = kernels::MatmulPrecision::bf16;
  const double load0 = monotonic_seconds();
  // The checkpoint's own head (config.json's architectures): a sequence or a token classifier.
  model::CheckpointLoadOptions lo;
  // A masked-LM model (*ForMaskedLM) is timed as fill-mask and `roberta pretrain` run it.
  lo.head = model::checkpoint_head_kind(o.model_dir);
  const bool per_token = lo.head == model::HeadKind::token_classifier;
  const bool mlm = lo.head == model::HeadKind::masked_lm;
  auto m = model::load_checkpoint(o.model_dir, lo);
  m->to_device(ctx);
  const double load_ms = (monotonic_seconds() - load0) * 1e3;
  const model::RobertaConfig& c = m->config();
  double pack_ms = 0;
  if (packed) {
    const double t0 = monotonic_seconds();
    m->set_weight_format(model::packed_weight_format(precision));
    pack_ms = (monotonic_seconds() - t0) * 1e3;
  }
  if (!o.lengths.empty()) {
    for (int B : o.batch_sizes) on_result(bench_train_lengths(ctx, *m, dev, B, o, load_ms));
    return;
  }
  std::mt19937 rng(1234);
  for (int B : o.batch_sizes) {
    for (int T : o.seq_lens) {
      RC_CHECK(T <= c.max_tokens() && T >= 2, Errc::invalid_argument, "--seq-len ", T, " outside [2, ", c.max_tokens(),
               "]");
      std::vector<int32_t> ids, lens, labels;
      const model::Batch batch = random_batch(c, B, T, rng, ids, lens, labels);
      // A masked LM's targets (and their <mask> ids, in place: batch reads ids).
      const std::vector<int32_t> mlm_labels = mlm ? mlm_bench_labels(c, B, T, ids, lens, 0) : std::vector<int32_t>();
      const std::vector<int64_t> mlm_positions = target_positions(mlm_labels);
      Timing timing;
      double flops =
          mlm ? encoder_flops(c, T) * B + mlm_head_flops(c) * double(mlm_positions.size()) : forward_flops(c, T) * B;
      std::optional<BenchProfile> profile;
      if (o.mode == "infer" && mlm) {
        // fill-mask's forward: the encoder in the model's weight format, the lm_head (fp32) on
        // the target rows; host logits, so on CUDA each call ends synchronised.
        model::InferenceWorkspace ws(ctx, c, B, T);
        model::MlmWorkspace mlm_ws(ctx, c, int64_t(mlm_positions.size()));
        std::vector<float> logits(mlm_positions.size() * size_t(c.vocab_size));
        auto run = [&] { model::forward_mlm_logits(ctx, *m, batch, ws, mlm_positions, logits.data(), mlm_ws); };
        timing = time_guarded(run, o.iters, o.warmup, o.busy_threshold);
        if (o.profile) profile = profile_runs([&](kernels::Profiler* p) { ctx.profiler = p; }, o.iters, run);
      } else if (o.mode == "infer") {
        model::InferenceWorkspace ws(ctx, c, B, T);
        std::vector<float> logits(size_t(B) * size_t(per_token ? T : 1) * c.num_labels());
        // forward_logits returns host logits: on CUDA each call ends synchronised.
        auto run = [&] { model::forward_logits(ctx, *m, batch, ws, logits.data()); };
        timing = time_guarded(run, o.iters, o.warmup, o.busy_threshold);
        if (o.profile) profile = profile_runs([&](kernels::Profiler* p) { ctx.profiler = p; }, o.iters, run);
      } else {
        // One optimizer step exactly as the trainer takes it (train::TrainEngine): forward +
        // backward with dropout, global-norm clipping, fused AdamW over the flat buffers.
        flops *= 3;
        train::TrainEngine engine(*m, bench_optim(), ctx, model::DropoutConfig::from(c), 42, B, T);
        const model::Batch micro[] = {batch};
        // A token classifier scores every real token (its label: the row's, for the shape).
        std::vector<int32_t> token_labels;
        if (per_token)
          for (int b = 0; b < B; ++b)
            for (int t = 0; t < T; ++t) token_labels.push_back(t < lens[size_t(b)] ? labels[size_t(b)] : -100);
        const int32_t* micro_labels[] = {mlm ? mlm_labels.data() : per_token ? token_labels.data() : labels.data()};
        auto run = [&] { engine.step(micro, micro_labels); };
        timing = time_guarded(run, o.iters, o.warmup, o.busy_threshold);
        if (o.profile) profile = profile_runs([&](kernels::Profiler* p) { engine.set_profiler(p); }, o.iters, run);
      }
      const double med = percentile(timing.ms, 0.5);
      const double tflops = flops / (med / 1e3) / 1e12;
      nlohmann::ordered_json j;
      j["engine"] = "roberta.cpp";
      j["mode"] = o.mode;
      j["head"] = head_name(lo.head);
      j["precision"] = precision_name(precision);
      j["weights"] = packed ? "packed" : "master";
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
      if (o.peak_tflops > 0) j["mfu"] = tflops / o.peak_tflops;
      j["device"] = dev.name();
      j["load_ms"] = load_ms;
      j["pack_ms"] = pack_ms;
      j["busy_retries"] = timing.busy_retries;
      j["others_cores"] = timing.others_cores;
      if (profile) j["profile"] = nlohmann::ordered_json::parse(profile->to_json());
      on_result(BenchResult{B, T, j.dump(), std::move(profile)});
    }
  }
}

}  // namespace rc
