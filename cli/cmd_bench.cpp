// roberta bench infer|train: a thin command over rc::run_benchmark (roberta/benchmark.h),
// which times the product's own forward and optimizer step. One JSON line per shape on
// stdout (the fields bench/compare.py and scripts/gpu-check.sh read); with --profile the
// per-op-family table goes to stderr and the same figures into the JSON line's "profile".
// Engine probes (raw GEMM rates) are developer tools in bench/ (bench_gemm_peak).
#include <cstdio>
#include <sstream>

#include "commands.h"
#include "roberta/benchmark.h"
#include "roberta/error.h"

namespace rc::cli {
namespace {

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      throw Error(Errc::invalid_argument, "'" + s + "' is not a comma-separated list of numbers",
                  "e.g. --batch-size 1,32");
    out.push_back(v);
  }
  if (out.empty()) throw Error(Errc::invalid_argument, "empty list", "e.g. --seq-len 32,64");
  return out;
}

struct BenchArgs {
  BenchOptions opts;
  std::string model, batch = "1,32", seq = "32,64", precision = "fp32", lengths;
  int threads = 0;
};

}  // namespace

void add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "Time inference or a training step; one JSON line per shape");
  cmd->add_option("mode", a->opts.mode, "infer | train")->required()->check(CLI::IsMember({"infer", "train"}));
  cmd->add_option("--model", a->model, "Checkpoint folder (e.g. tools/make_checkpoint.py --size base)")->required();
  cmd->add_option("--batch-size", a->batch, "Comma list of batch sizes");
  cmd->add_option("--seq-len", a->seq, "Comma list of sequence lengths (tokens incl. <s> </s>)");
  cmd->add_option("--precision", a->precision,
                  "fp32 | bf16 | int8 (infer: packed weights, fused forward; train: fp32 | bf16)");
  cmd->add_option("--iters", a->opts.iters, "Timed iterations per shape")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", a->opts.warmup, "Untimed iterations first")->check(CLI::NonNegativeNumber);
  cmd->add_option("--busy-threshold", a->opts.busy_threshold,
                  "Discard a timing block when other processes used more cores than this");
  cmd->add_option("--lengths", a->lengths,
                  "train: draw each batch's real lengths from this file (one per line, e.g. "
                  "bench/gpu/tweeteval_train_lengths.txt; shuffled, seed 1234), padded to a multiple of 8; "
                  "--iters steps after one warm-up step per padded length");
  cmd->add_option("--peak-tflops", a->opts.peak_tflops,
                  "Report mfu = useful TFLOP/s / this peak (e.g. 790 for an H200's dense bf16)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--profile", a->opts.profile,
                "After the timing, run --iters more iterations timing each op family (each GEMM kind, "
                "attention, LayerNorm, GELU, conversions, embedding, head, loss, optimizer, dropout): a table on "
                "stderr, the same under \"profile\" in the JSON line. CPU only (not with --device cuda or --lengths)");
  cmd->add_flag("--master-weights", a->opts.master_weights,
                "infer --precision fp32: run on views of the fp32 master weights, as training's evaluation "
                "does, instead of the packed fp32 weights `predict` and `serve` use");
  add_threads_option(*cmd, a->threads);
  add_device_option(*cmd, a->opts.device);
  cmd->callback([a] {
    apply_threads(a->threads);
    BenchOptions o = a->opts;
    o.model_dir = a->model;
    o.batch_sizes = parse_list(a->batch);
    o.seq_lens = parse_list(a->seq);
    o.precision = parse_precision(a->precision);
    o.lengths = a->lengths;
    run_benchmark(o, [&](const BenchResult& r) {
      std::printf("%s\n", r.json.c_str());
      std::fflush(stdout);
      if (r.profile) {
        std::fprintf(stderr, "bench %s %s, batch %d x seq %d, %s:\n\n%s\n", o.mode.c_str(), precision_name(o.precision),
                     r.batch, r.seq, a->model.c_str(), r.profile->to_table().c_str());
        std::fflush(stderr);
      }
    });
  });
}

}  // namespace rc::cli
