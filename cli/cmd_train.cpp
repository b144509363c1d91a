// roberta train — fine-tune a checkpoint on a labelled dataset (rc::train in
// include/roberta/trainer.h). Flags and defaults follow the reference pipeline (HF Trainer:
// 10 epochs, lr 1e-5, batch 16, evaluation each epoch, best checkpoint by macro recall).
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "commands.h"
#include "device/device_choice.h"
#include "core/check.h"
#include "model_source.h"
#include "roberta/trainer.h"
#include "sagemaker_train.h"

namespace rc::cli {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

struct TrainFlags {
  TrainOptions o;
  std::string eval_every = "epoch", labels, metrics, tensorboard, revision;
  float dropout = -1;
  bool no_shuffle = false, progress = false, no_progress = false;
  int threads = 0;
};

}  // namespace

void add_train_command(CLI::App& app) {
  auto f = std::make_shared<TrainFlags>();
  auto* cmd = app.add_subcommand("train", "Fine-tune a RoBERTa checkpoint on a labelled text dataset (CPU)");
  cmd->add_option("--model", f->o.model_dir,
                  "Starting checkpoint: HF folder (`roberta init` makes one) or Hugging Face model id (org/name[@rev])")
      ->required();
  add_revision_option(*cmd, f->revision);
  cmd->add_option("--data", f->o.data,
                  "TweetEval folder ({train,val,test}_text.txt + _labels.txt + mapping.txt), a CSV/TSV/JSONL file, "
                  "or a folder of train/val/test files")
      ->required();
  cmd->add_option("--output", f->o.output_dir, "Output folder (HF layout; checkpoint-N/ inside)")->required();
  cmd->add_option("--epochs", f->o.epochs, "Training epochs")->capture_default_str();
  cmd->add_option(
         "--batch-size", f->o.batch_size,
         "Examples per micro-batch, per process (data parallel: the global batch is ranks x this x --grad-accum)")
      ->capture_default_str();
  cmd->add_option("--lr", f->o.lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--weight-decay", f->o.weight_decay,
                  "AdamW decoupled weight decay (biases and LayerNorm weights excluded, as HF)")
      ->capture_default_str();
  cmd->add_option("--warmup-ratio", f->o.warmup_ratio, "Fraction of the steps spent warming the lr up from 0")
      ->capture_default_str();
  cmd->add_option("--warmup-steps", f->o.warmup_steps, "Warmup steps (overrides --warmup-ratio when > 0)");
  cmd->add_option("--lr-scheduler", f->o.lr_scheduler, "linear (HF default) | constant | cosine")
      ->capture_default_str();
  cmd->add_option("--max-grad-norm", f->o.max_grad_norm, "Clip gradients to this global L2 norm (0: off)")
      ->capture_default_str();
  cmd->add_option("--max-length", f->o.max_length,
                  "Truncate to this many tokens incl. <s> </s>; batches are padded only to their longest row")
      ->capture_default_str();
  cmd->add_option("--seed", f->o.seed, "Seeds data order, dropout and any new head")->capture_default_str();
  cmd->add_flag("--bf16", f->o.bf16, "bf16 GEMMs (AVX512-BF16/AMX) with fp32 master weights: faster, ~1e-3 noisier");
  cmd->add_option("--grad-accum", f->o.grad_accum, "Micro-batches per optimizer step")->capture_default_str();
  cmd->add_option("--eval-every", f->eval_every, "'epoch' or N optimizer steps (a checkpoint is saved each time)")
      ->capture_default_str();
  cmd->add_option("--metric", f->o.metric,
                  "Best-checkpoint metric: macro_recall | macro_f1 | accuracy | loss (single-label; default "
                  "macro_recall), micro_f1 | exact_match (multi-label; default micro_f1), mse | mae | pearson | "
                  "spearman (regression; default mse)");
  cmd->add_option("--problem-type", f->o.problem_type,
                  "single_label_classification | multi_label_classification | regression (config.problem_type). "
                  "Default: list labels are multi-label, non-integer numbers regression, else the starting "
                  "classifier's, else one --labels name is regression, else single-label");
  cmd->add_option("--threshold", f->o.threshold, "Multi-label: predict a label when sigmoid(logit) > this")
      ->capture_default_str();
  cmd->add_option("--task", f->o.task,
                  "text-classification | token-classification (NER: JSONL {\"tokens\", \"ner_tags\"} or CoNLL "
                  "files). Default: the starting checkpoint's head, else text-classification");
  cmd->add_option("--tokens-column", f->o.tokens_column, "Token classification: JSONL words field")
      ->capture_default_str();
  cmd->add_option("--tags-column", f->o.tags_column, "Token classification: JSONL tags field")->capture_default_str();
  cmd->add_flag("--label-all-tokens", f->o.label_all_tokens,
                "Token classification: every sub-token gets its word's label (B- as I-), as run_ner.py's flag");
  cmd->add_option("--max-steps", f->o.max_steps, "Stop after N optimizer steps (overrides --epochs)");
  cmd->add_flag("--no-shuffle", f->no_shuffle, "Keep the data order (parity tests)");
  cmd->add_flag("--group-by-length", f->o.group_by_length,
                "Batch rows of similar length (less padding, faster; slightly less random)");
  cmd->add_option("--dropout", f->dropout, "Override every dropout probability (0 turns dropout off)");
  cmd->add_option("--metrics", f->metrics, "JSON Lines per optimizer step (default OUTPUT/metrics.jsonl)");
  cmd->add_flag("--resume", f->o.resume, "Continue from the last checkpoint-N in --output");
  cmd->add_option("--save-total-limit", f->o.save_total_limit, "Keep at most N checkpoints (the best is kept)");
  cmd->add_option("--tensorboard", f->tensorboard, "Write TensorBoard event files to this folder");
  cmd->add_option("--labels", f->labels, "a,b,c: give the model a new classification head with these labels");
  cmd->add_option("--text-column", f->o.text_column, "CSV/TSV/JSONL text field")->capture_default_str();
  cmd->add_option("--label-column", f->o.label_column,
                  "CSV/TSV/JSONL label field: a name or id, a list of names or 0/1 flags (multi-label: "
                  "[\"joy\", \"optimism\"], [] for none), or a number (regression)")
      ->capture_default_str();
  cmd->add_option("--logging-steps", f->o.logging_steps, "Log (trainer_state, progress lines) every N steps")
      ->capture_default_str();
  cmd->add_option("--eval-batch-size", f->o.eval_batch_size, "Examples per evaluation batch")->capture_default_str();
  cmd->add_flag("--progress", f->progress, "Force the progress bar (default: only on a terminal)");
  cmd->add_flag("--no-progress", f->no_progress, "Plain log lines even on a terminal");
  cmd->add_option("--dist-timeout", f->o.dist_timeout_s,
                  "Data parallel: seconds a rank waits for the others (rendezvous, each all-reduce) before every "
                  "rank ends with an error")
      ->capture_default_str();
  cmd->add_flag("--dist-no-overlap{false}", f->o.dist_overlap,
                "Data parallel: all-reduce the gradients after the backward instead of layer by layer during it "
                "(the same result; for measuring the overlap)");
  add_threads_option(*cmd, f->threads);
  add_device_option(*cmd, f->o.device);
  relax_required_flags_for_sagemaker(*cmd);  // `train` with no flags in a SageMaker job
  cmd->callback([f, cmd] {
    if (run_sagemaker_training(*cmd)) return;  // re-enters this command with flags from /opt/ml
    apply_threads(f->threads);
    resolve_device_choice(f->o.device);  // no CUDA device: exit 4 before reading any data
    TrainOptions o = f->o;
    o.model_dir = resolve_model_source(o.model_dir.string(), f->revision);
    if (f->eval_every != "epoch") {
      char* end = nullptr;
      const long long n = std::strtoll(f->eval_every.c_str(), &end, 10);
      RC_CHECK(end && *end == 0 && n > 0, Errc::invalid_argument,
               "--eval-every must be 'epoch' or a positive step count, got '", f->eval_every, "'");
      o.eval_every = n;
    }
    RC_CHECK(o.logging_steps > 0, Errc::invalid_argument, "--logging-steps must be > 0");
    o.shuffle = !f->no_shuffle;
    if (f->dropout >= 0) o.dropout = f->dropout;
    if (!f->labels.empty()) o.labels = split_commas(f->labels);
    o.metrics_file = f->metrics;
    o.tensorboard_dir = f->tensorboard;
    o.progress = f->progress ? 1 : (f->no_progress ? 0 : -1);
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
    const TrainSummary s = fit(o);
    if (s.world_process_zero) std::printf("%s\n", s.to_json(2).c_str());  // data parallel: rank 0 reports
    std::fflush(stdout);
    if (s.interrupted) std::exit(130);  // as a shell reports a SIGINT-ended command
  });
}

}  // namespace rc::cli
