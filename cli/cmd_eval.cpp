// roberta eval — score a checkpoint on one split of a dataset; prints the metrics as JSON
// (loss, accuracy, macro F1 / recall / precision, per-class values, confusion matrix).
#include <cstdio>

#include "commands.h"
#include "device/device_choice.h"
#include "model_source.h"
#include "roberta/trainer.h"

namespace rc::cli {

void add_eval_command(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  auto threads = std::make_shared<int>(0);
  auto revision = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("eval", "Evaluate a checkpoint on a dataset split; prints metrics JSON");
  cmd->add_option("--model", o->model_dir, "Checkpoint folder (HF layout) or Hugging Face model id (org/name[@rev])")
      ->required();
  add_revision_option(*cmd, *revision);
  cmd->add_option("--data", o->data, "TweetEval folder, CSV/TSV/JSONL file or folder")->required();
  cmd->add_option("--split", o->split, "train | val | test (a single file is its own split)")->capture_default_str();
  cmd->add_option("--batch-size", o->batch_size, "Examples per batch")->capture_default_str();
  cmd->add_option("--max-length", o->max_length, "Truncate to this many tokens incl. <s> </s>")->capture_default_str();
  cmd->add_option("--text-column", o->text_column, "CSV/TSV/JSONL text field")->capture_default_str();
  cmd->add_option("--label-column", o->label_column, "CSV/TSV/JSONL label field")->capture_default_str();
  cmd->add_option("--threshold", o->threshold, "Multi-label: predict a label when sigmoid(logit) > this")
      ->capture_default_str();
  cmd->add_option("--tokens-column", o->tokens_column, "Token classification: JSONL words field")
      ->capture_default_str();
  cmd->add_option("--tags-column", o->tags_column, "Token classification: JSONL tags field")->capture_default_str();
  cmd->add_flag("--bf16", o->bf16, "bf16 GEMMs where the CPU has them");
  add_threads_option(*cmd, *threads);
  add_device_option(*cmd, o->device);
  cmd->callback([o, threads, revision] {
    apply_threads(*threads);
    resolve_device_choice(o->device);  // no CUDA device: exit 4 before reading any data
    o->model_dir = resolve_model_source(o->model_dir.string(), *revision);
    const EvalResult r = evaluate(*o);
    std::printf("%s\n", r.to_json(o->split == "val" ? "eval" : o->split, 2).c_str());
  });
}

}  // namespace rc::cli
