// Timing the engine as `roberta bench infer|train` does: the inference forward in a weight
// format (fp32, or bf16 / int8 packed once at load, exactly as `predict --precision` runs it)
// or one optimizer step exactly as the trainer takes it, on random ids of exactly seq_len
// tokens. The checkpoint's own head runs: a sequence or token classifier, or a masked LM (its
// forward as fill-mask runs it, the lm_head on the targets `roberta pretrain`'s collator would
// draw, at least one per row; its step as pretrain takes it), named in the "head" field.
// Each (batch, seq) gives one result: a JSON line with the same fields as the PyTorch
// and ONNX Runtime runners (bench/torch, bench/ort), so bench/compare.py can put them side by
// side, and optionally a per-op-family profile.
//
// Timing runs in blocks of >= 0.25 s; a block during which OTHER processes used more than
// busy_threshold cores (from /proc/stat minus this process's CPU time) is discarded and
// repeated, at most 10 times per measurement.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "roberta/classifier.h"

namespace rc {

struct BenchOptions {
  std::string mode = "infer";  // infer | train
  std::filesystem::path model_dir;
  std::vector<int> batch_sizes{1, 32};
  std::vector<int> seq_lens{32, 64};
  Precision precision = Precision::fp32;  // infer: fp32 | bf16 | int8; train: fp32 | bf16
  std::string device = "cpu";             // cpu | cuda | cuda:N | auto
  int iters = 20, warmup = 3;
  double busy_threshold = 0.3;
  // train: each batch's real lengths drawn from this file (one per line), padded to a
  // multiple of 8; `iters` steps after one warm-up step per padded length.
  std::filesystem::path lengths;
  double peak_tflops = 0;  // > 0: report mfu = useful TFLOP/s / this
  // Per-op-family times over `iters` more iterations after the timed ones (CPU only).
  bool profile = false;
  // infer, fp32, CPU: run on views of the fp32 master weights (what training's evaluation
  // runs) instead of the packed fp32 weights a Classifier serves with.
  bool master_weights = false;
};

// One op family's mean time per iteration, split by the part of a training step it ran in.
struct OpTime {
  std::string family;  // gemm_qkv, attention, layernorm, convert, ... (kernels/profile.h)
  bool gemm = false;
  double forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
  double calls = 0;  // scopes per iteration
  double total_ms() const { return forward_ms + backward_ms + optimizer_ms; }
};

struct BenchProfile {
  int iterations = 0;
  double wall_ms = 0;  // mean wall time of one profiled iteration (the profiler on)
  double forward_ms = 0, backward_ms = 0, optimizer_ms = 0;  // sums of the families per phase
  double attributed_pct = 0;                                 // 100 · Σ families / wall_ms: what the scopes cover
  double non_gemm_forward_pct = 0;                           // 100 · non-GEMM / all, forward phase
  double non_gemm_step_pct = 0;                              // the same over every phase (= forward for infer)
  std::vector<OpTime> ops;                                   // every family that ran: GEMMs first, then by time
  std::string to_json() const;                               // one JSON object
  std::string to_table() const;                              // a markdown table with the shares under it
};

struct BenchResult {
  int batch = 0, seq = 0;  // seq 0 with lengths
  std::string json;        // one line; with a profile, its object under "profile"
  std::optional<BenchProfile> profile;
};

// Loads the checkpoint, then calls on_result once per (batch, seq) (or per batch with
// lengths). Throws rc::Error on bad options (Errc::invalid_argument / unsupported) or a bad
// checkpoint, Errc::device without the requested device.
void run_benchmark(const BenchOptions& options, const std::function<void(const BenchResult&)>& on_result);

}  // namespace rc
