// roberta train — fine-tune a checkpoint on a labelled dataset (rc::train in
// include/roberta/trainer.h). Flags and defaults follow the reference pipeline (HF Trainer:
// 10 epochs, lr 1e-5, batch 16, evaluation each epoch, best checkpoint by macro recall).
#include <cstdio>
#include <cstdlib>

#include "commands.h"
#include "core/check.h"
#include "model_source.h"
#include "roberta/trainer.h"
#include "sagemaker_train.h"
#include "training_flags.h"

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
  TrainingFlags loop;
  std::string labels, revision;
};

}  // namespace

void add_train_command(CLI::App& app) {
  auto f = std::make_shared<TrainFlags>();
  auto* cmd = app.add_subcommand("train",
                                 "Fine-tune a checkpoint on labelled data: text classification (single-label, "
                                 "multi-label, regression) or token classification (NER)");
  cmd->add_option("--model", f->o.model_dir,
                  "Starting checkpoint: HF folder (`roberta init` makes one) or Hugging Face model id (org/name[@rev])")
      ->required();
  add_revision_option(*cmd, f->revision);
  cmd->add_option("--data", f->o.data,
                  "TweetEval folder ({train,val,test}_text.txt + _labels.txt + mapping.txt), a CSV/TSV/JSONL file, "
                  "or a folder of train/val/test files")
      ->required();
  cmd->add_option("--output", f->o.output_dir, "Output folder (HF layout; checkpoint-N/ inside)")->required();
  cmd->add_option("--max-length", f->o.max_length,
                  "Truncate to this many tokens incl. <s> </s>; batches are padded only to their longest row")
      ->capture_default_str();
  cmd->add_option("--seed", f->o.seed, "Seeds data order, dropout and any new head")->capture_default_str();
  cmd->add_option("--metric", f->o.metric,
                  "Best-checkpoint metric: macro_recall | macro_f1 | accuracy | loss (single-label; default "
                  "macro_recall), micro_f1 | exact_match (multi-label; default micro_f1), mse | mae | pearson | "
                  "spearman (regression; default mse), ndcg@10 | mrr@10 | recall@1 | recall@5 | recall@10 | "
                  "spearman_cosine | pearson_cosine (embedding; default ndcg@10, or spearman_cosine on scored "
                  "pairs; cross-encoder: mrr@10)");
  cmd->add_option("--problem-type", f->o.problem_type,
                  "single_label_classification | multi_label_classification | regression (config.problem_type). "
                  "Default: list labels are multi-label, non-integer numbers regression, else the starting "
                  "classifier's, else one --labels name is regression, else single-label");
  cmd->add_option("--threshold", f->o.threshold, "Multi-label: predict a label when sigmoid(logit) > this")
      ->capture_default_str();
  cmd->add_option("--task", f->o.task,
                  "text-classification | token-classification (NER: JSONL {\"tokens\", \"ner_tags\"} or CoNLL "
                  "files) | embedding (sentence-transformers MultipleNegativesRankingLoss on JSONL {\"anchor\", "
                  "\"positive\"[, \"negative\"]}) | cross-encoder (one-output BCE on JSONL {\"query\", \"text\", "
                  "\"label\"}). Default: the starting checkpoint's head, else text-classification");
  cmd->add_option("--tokens-column", f->o.tokens_column, "Token classification: JSONL words field")
      ->capture_default_str();
  cmd->add_option("--tags-column", f->o.tags_column, "Token classification: JSONL tags field")->capture_default_str();
  cmd->add_flag("--label-all-tokens", f->o.label_all_tokens,
                "Token classification: every sub-token gets its word's label (B- as I-), as run_ner.py's flag");
  cmd->add_option("--labels", f->labels, "a,b,c: give the model a new classification head with these labels");
  cmd->add_option("--text-column", f->o.text_column, "CSV/TSV/JSONL text field")->capture_default_str();
  cmd->add_option("--label-column", f->o.label_column,
                  "CSV/TSV/JSONL label field: a name or id, a list of names or 0/1 flags (multi-label: "
                  "[\"joy\", \"optimism\"], [] for none), or a number (regression)")
      ->capture_default_str();
  add_training_flags(*cmd, f->o, f->loop);
  relax_required_flags_for_sagemaker(*cmd);  // `train` with no flags in a SageMaker job
  cmd->callback([f, cmd] {
    if (run_sagemaker_training(*cmd)) return;  // re-enters this command with flags from /opt/ml
    TrainOptions o = f->o;
    apply_training_flags(f->loop, o);
    o.model_dir = resolve_model_source(o.model_dir.string(), f->revision);
    if (!f->labels.empty()) o.labels = split_commas(f->labels);
    const TrainSummary s = fit(o);
    if (s.world_process_zero) std::printf("%s\n", s.to_json(2).c_str());  // data parallel: rank 0 reports
    std::fflush(stdout);
    if (s.interrupted) std::exit(130);  // as a shell reports a SIGINT-ended command
  });
}

}  // namespace rc::cli
