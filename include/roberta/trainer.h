// Fine-tuning, evaluation and initialisation of RoBERTa classifiers on CPU: what Hugging
// Face's Trainer does, with HF's defaults and HF's output layout. The CLI's `train`, `eval`
// and `init` commands are thin wrappers over fit(), evaluate() and init_model().
//
// Output folder of fit():
//   config.json (id2label, label2id, problem_type), model.safetensors, tokenizer files,
//   training_args.json, trainer_state.json (log_history as HF writes it), eval_results.json,
//   train_results.json, metrics.jsonl, report.html, and checkpoint-N/ folders that also hold
//   optimizer.safetensors (AdamW m, v) and the step / data-order / RNG state for --resume.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace rc {

struct TrainOptions {
  std::filesystem::path model_dir;  // HF checkpoint to start from (roberta init makes one)
  std::filesystem::path data;       // TweetEval folder, CSV/TSV/JSONL file or folder of them
  std::filesystem::path output_dir;
  std::string text_column = "text", label_column = "label";
  std::vector<std::string> labels;  // non-empty: new classification head with these labels
  // transformers' config.problem_type: single_label_classification | multi_label_classification
  // | regression. Empty: what the data says (a list label → multi-label, a non-integer number →
  // regression), else the starting classifier's, else one label → regression, else single-label.
  std::string problem_type;
  double threshold = 0.5;  // multi-label: a label is predicted when sigmoid(logit) > threshold
  // text-classification (RobertaForSequenceClassification) or token-classification
  // (RobertaForTokenClassification: NER). Empty: the starting checkpoint's head, else text.
  std::string task;
  // Token classification: the data's fields (JSONL; CoNLL files have columns) and run_ner.py's
  // --label_all_tokens (every sub-token gets its word's label, B- turned to I-).
  std::string tokens_column = "tokens", tags_column = "ner_tags";
  bool label_all_tokens = false;

  int64_t epochs = 10;
  int64_t batch_size = 16;
  double lr = 1e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_epsilon = 1e-8;
  double max_grad_norm = 1.0;  // 0 disables clipping
  // Layer-wise lr decay: encoder layer l of L trains at lr · d^(L-l), the embeddings at
  // lr · d^(L+1), the head at lr (torch param groups, as ELECTRA and most recipes). 1: off.
  double layer_lr_decay = 1.0;
  // HF's label_smoothing_factor ε: cross-entropy against (1 - ε)·onehot + ε/K (single-label and
  // token classification). 0: off.
  double label_smoothing_factor = 0.0;
  std::string lr_scheduler = "linear";  // linear | constant | cosine
  double warmup_ratio = 0.0;
  int64_t warmup_steps = 0;  // > 0 overrides warmup_ratio (as HF)
  int64_t grad_accum = 1;
  int64_t max_steps = 0;  // > 0 overrides epochs
  int max_length = 512;   // tokens incl. <s> </s>; clamped to the model's limit
  uint64_t seed = 42;
  bool bf16 = false;
  std::string device = "cpu";  // cpu | cuda | cuda:N | auto: where the step runs
  bool shuffle = true;
  bool group_by_length = false;
  std::optional<float> dropout;  // overrides every dropout probability of the config

  int64_t eval_every = 0;  // 0: at the end of each epoch; N: every N optimizer steps
  // Best checkpoint by this; loss, mse and mae: lower is better. Empty: the problem type's
  // (macro_recall, micro_f1, or mse for regression).
  std::string metric;
  int64_t eval_batch_size = 64;
  int64_t logging_steps = 10;    // log_history / progress lines every N steps
  int64_t save_total_limit = 0;  // keep at most N checkpoints (the best is always kept)
  bool resume = false;
  std::filesystem::path metrics_file;     // JSON Lines per optimizer step; default OUT/metrics.jsonl
  std::filesystem::path tensorboard_dir;  // empty: no event files
  int progress = -1;                      // 1 bar, 0 plain lines, -1 bar iff stdout is a terminal

  // Data parallel (docs/distributed.md): the launch contract is read from the environment
  // (torchrun, mpirun, Slurm, SageMaker); a dead or hung rank ends every rank after this long.
  double dist_timeout_s = 300;
  // Data parallel on CPUs: all-reduce each encoder layer's gradients on a communication
  // thread while the backward continues (false: all of them after the backward).
  bool dist_overlap = true;
  // Called at the start of every optimizer step with the step about to run (tests use it to
  // kill or signal the process at a chosen step).
  std::function<void(int64_t step)> on_step_begin;
};

struct EvalResult {
  std::string split;
  int64_t num_examples = 0;
  double loss = 0, accuracy = 0, macro_f1 = 0, macro_recall = 0, macro_precision = 0;
  std::vector<std::string> labels;
  std::vector<double> precision, recall, f1;
  std::vector<int64_t> support;
  std::vector<std::vector<int64_t>> confusion;  // [true][predicted] (single-label classification)
  // The problem type's other metrics, named as they are written ("micro_f1", "exact_match",
  // "mse", "mae", "pearson", "spearman"); NaN (an undefined correlation) is written as null.
  // Per-label precision / recall / F1 / support above hold the multi-label ones.
  std::string problem_type = "single_label_classification";
  std::vector<std::pair<std::string, double>> metrics;
  double runtime_s = 0;
  // The metrics as HF names them ("<prefix>_loss", "<prefix>_accuracy", ...) in one JSON
  // object, per-class values and the confusion matrix included.
  std::string to_json(const std::string& prefix = "eval", int indent = 2) const;
};

struct TrainSummary {
  int64_t global_step = 0;
  double epoch = 0, train_loss = 0, train_runtime = 0, train_samples_per_second = 0, train_steps_per_second = 0,
         train_tokens_per_second = 0;
  std::optional<EvalResult> best_eval, test;
  std::string best_checkpoint;
  bool interrupted = false;        // stopped by SIGINT/SIGTERM after saving a checkpoint
  bool world_process_zero = true;  // false on data-parallel ranks > 0 (they save nothing)
  std::string to_json(int indent = 2) const;
};

// Runs the whole fine-tuning. Throws rc::Error on bad input before any work is lost; on
// SIGINT/SIGTERM saves a checkpoint and returns with interrupted = true.
TrainSummary fit(const TrainOptions& options);

struct EvalOptions {
  std::filesystem::path model_dir, data;
  std::string split = "test";
  std::string text_column = "text", label_column = "label";
  double threshold = 0.5;                                          // multi-label models
  std::string tokens_column = "tokens", tags_column = "ner_tags";  // token classification (JSONL)
  int64_t batch_size = 64;
  int max_length = 512;
  bool bf16 = false;
  std::string device = "cpu";  // cpu | cuda | cuda:N | auto
};
EvalResult evaluate(const EvalOptions& options);

struct InitOptions {
  std::string config = "small";         // tiny | small | base | path to a config.json
  std::filesystem::path tokenizer_dir;  // vocab.json + merges.txt or tokenizer.json
  std::vector<std::string> labels;      // id2label
  std::filesystem::path output_dir;
  uint64_t seed = 42;
};
// Writes a freshly initialised HF checkpoint (HF's _init_weights) with the tokenizer files.
void init_model(const InitOptions& options);

}  // namespace rc
