// The flags of the one training loop (training_flags.h).
#include "training_flags.h"

#include <csignal>
#include <cstdlib>

#include "commands.h"
#include "core/check.h"
#include "device/device_choice.h"

namespace rc::cli {

void add_training_flags(CLI::App& cmd, TrainOptions& o, TrainingFlags& f) {
  cmd.add_option("--epochs", o.epochs, "Training epochs")->capture_default_str();
  cmd.add_option("--max-steps", o.max_steps, "Stop after N optimizer steps (overrides --epochs)");
  cmd.add_option(
         "--batch-size", o.batch_size,
         "Examples per micro-batch, per process (data parallel: the global batch is ranks x this x --grad-accum)")
      ->capture_default_str();
  cmd.add_option("--grad-accum", o.grad_accum, "Micro-batches per optimizer step")->capture_default_str();
  cmd.add_option("--lr", o.lr, "Peak learning rate")->capture_default_str();
  cmd.add_option("--weight-decay", o.weight_decay,
                 "AdamW decoupled weight decay (biases and LayerNorm weights excluded, as HF)")
      ->capture_default_str();
  cmd.add_option("--layer-lr-decay", o.layer_lr_decay,
                 "Layer-wise lr decay d in (0, 1]: the head trains at --lr, the top encoder layer at lr*d, each layer "
                 "below at d times the one above, the embeddings last (1: off; 0.8-0.95 is usual)")
      ->check(CLI::Range(1e-6, 1.0))
      ->capture_default_str();
  cmd.add_option("--label-smoothing-factor", o.label_smoothing_factor,
                 "HF's label_smoothing_factor e in [0, 1): cross-entropy against (1-e)*onehot + e/num_labels "
                 "(single-label and token classification; 0: off)")
      ->check(CLI::Range(0.0, 0.999999))
      ->capture_default_str();
  cmd.add_option("--adam-beta2", o.adam_beta2, "AdamW beta2 (RoBERTa's pretraining used 0.98)")->capture_default_str();
  cmd.add_option("--warmup-ratio", o.warmup_ratio, "Fraction of the steps spent warming the lr up from 0")
      ->capture_default_str();
  cmd.add_option("--warmup-steps", o.warmup_steps, "Warmup steps (overrides --warmup-ratio when > 0)");
  cmd.add_option("--lr-scheduler", o.lr_scheduler, "linear (HF default) | constant | cosine")->capture_default_str();
  cmd.add_option("--max-grad-norm", o.max_grad_norm, "Clip gradients to this global L2 norm (0: off)")
      ->capture_default_str();
  cmd.add_flag("--bf16", o.bf16, "bf16 GEMMs (AVX512-BF16/AMX, CUDA) with fp32 master weights: faster, ~1e-3 noisier");
  cmd.add_option("--dropout", f.dropout, "Override every dropout probability (0 turns dropout off)");
  cmd.add_flag("--no-shuffle", f.no_shuffle, "Keep the data order (parity tests)");
  cmd.add_flag("--group-by-length", o.group_by_length,
               "Batch rows of similar length (less padding, faster; slightly less random)");
  cmd.add_option("--eval-every", f.eval_every, "'epoch' or N optimizer steps (a checkpoint is saved each time)")
      ->capture_default_str();
  cmd.add_option("--eval-batch-size", o.eval_batch_size, "Examples per evaluation batch")->capture_default_str();
  cmd.add_option("--logging-steps", o.logging_steps, "Log (trainer_state, progress lines) every N steps")
      ->capture_default_str();
  cmd.add_option("--save-total-limit", o.save_total_limit, "Keep at most N checkpoints (the best is kept)");
  cmd.add_flag("--resume", o.resume, "Continue from the last checkpoint-N in --output (bit-identical)");
  cmd.add_option("--metrics", f.metrics, "JSON Lines per optimizer step (default OUTPUT/metrics.jsonl)");
  cmd.add_option("--tensorboard", f.tensorboard, "Write TensorBoard event files to this folder");
  cmd.add_flag("--progress", f.progress, "Force the progress bar (default: only on a terminal)");
  cmd.add_flag("--no-progress", f.no_progress, "Plain log lines even on a terminal");
  cmd.add_option("--dist-timeout", o.dist_timeout_s,
                 "Data parallel: seconds a rank waits for the others (rendezvous, each all-reduce) before every "
                 "rank ends with an error")
      ->capture_default_str();
  cmd.add_flag("--dist-no-overlap{false}", o.dist_overlap,
               "Data parallel: all-reduce the gradients after the backward instead of layer by layer during it "
               "(the same result; for measuring the overlap)");
  add_threads_option(cmd, f.threads);
  add_device_option(cmd, o.device);
}

void apply_training_flags(const TrainingFlags& f, TrainOptions& o) {
  apply_threads(f.threads);
  resolve_device_choice(o.device);  // no CUDA device: exit 4 before reading any data
  if (f.eval_every != "epoch") {
    char* end = nullptr;
    const long long n = std::strtoll(f.eval_every.c_str(), &end, 10);
    RC_CHECK(end && *end == 0 && n > 0, Errc::invalid_argument,
             "--eval-every must be 'epoch' or a positive step count, got '", f.eval_every, "'");
    o.eval_every = n;
  }
  RC_CHECK(o.logging_steps > 0, Errc::invalid_argument, "--logging-steps must be > 0");
  o.shuffle = !f.no_shuffle;
  if (f.dropout >= 0) o.dropout = f.dropout;
  o.metrics_file = f.metrics;
  o.tensorboard_dir = f.tensorboard;
  o.progress = f.progress ? 1 : (f.no_progress ? 0 : -1);
  // Test hooks (tests/train, tests/dist): SIGKILL, SIGTERM or SIGSTOP (a hung rank) this
  // process at the start of a chosen step.
  auto step_of = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoll(v) : -1;
  };
  const long long kill_at = step_of("RC_TRAIN_TEST_KILL_AT_STEP"), term_at = step_of("RC_TRAIN_TEST_SIGNAL_AT_STEP"),
                  stop_at = step_of("RC_TRAIN_TEST_HANG_AT_STEP");
  if (kill_at >= 0 || term_at >= 0 || stop_at >= 0) {
    o.on_step_begin = [=](int64_t step) {
      if (step == kill_at) std::raise(SIGKILL);
      if (step == term_at) std::raise(SIGTERM);
      if (step == stop_at) std::raise(SIGSTOP);
    };
  }
}

}  // namespace rc::cli
