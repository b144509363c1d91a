// fit()'s first step: the task a run trains (sequence or token classification), its data read
// and tokenized, and the model with that task's head and labels — a new head when the labels
// or the head kind change, as from_pretrained does; the checkpoint's own on --resume.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "model/roberta_model.h"
#include "roberta/pretrain.h"
#include "roberta/trainer.h"
#include "train/task.h"

namespace rc::train {

struct TaskSetup {
  std::unique_ptr<model::RobertaModel> model;
  std::unique_ptr<Task> task;
  std::string layout;            // the data's ("tweeteval", "jsonl", "conll", ...)
  std::string problem_type;      // config.problem_type, or "token_classification"
  std::string eval_counts;       // ", 40 val, 40 test" for the log line
  bool load_best_at_end = true;  // HF's load_best_model_at_end (false: the last weights are the output)
  std::string task_options;      // RunIdentity::task_options
};

// The one training loop (trainer.cpp): fit() and pretrain() differ only in the setup.
using TaskSetupFn = std::function<TaskSetup(const std::filesystem::path& resume_dir, bool main_rank)>;
TrainSummary run_training(const TrainOptions& o, const TaskSetupFn& make_setup);

// --task token-classification, or (no --task) a starting checkpoint that is a
// *ForTokenClassification. Throws invalid_argument for an unknown --task.
bool is_token_task(const TrainOptions& o);
// resume_dir: the checkpoint to resume from (rank 0), or empty. evaluate_splits: whether this
// process scores val / test (rank 0 only).
// The task --task names (or the starting checkpoint implies): one of the setups below.
TaskSetup setup_task(const TrainOptions& o, const std::filesystem::path& resume_dir, bool evaluate_splits);
TaskSetup setup_sequence_task(const TrainOptions& o, const std::filesystem::path& resume_dir, bool evaluate_splits);
TaskSetup setup_token_task(const TrainOptions& o, const std::filesystem::path& resume_dir, bool evaluate_splits);
// --task embedding (task_embedding.cpp): a sentence-transformers folder (or a plain encoder,
// mean pooling, as SentenceTransformer makes from one) trained with MultipleNegativesRankingLoss
// on JSONL {"anchor", "positive"[, "negative"]}; the output is a sentence-transformers folder.
TaskSetup setup_embedding_task(const TrainOptions& o, const std::filesystem::path& resume_dir, bool evaluate_splits);
// --task cross-encoder: sentence-transformers' CrossEncoder with num_labels 1 (BCEWithLogits)
// on JSONL {"query", "text", "label"}, the pair encoded as tokenizer(query, text).
TaskSetup setup_cross_encoder_task(const TrainOptions& o, const std::filesystem::path& resume_dir,
                                   bool evaluate_splits);
// Masked-LM pretraining (run_mlm.py): texts read, held out and tokenized as `p` says; the
// model a RobertaForMaskedLM (a missing lm_head gets HF's init).
TaskSetup setup_masked_lm_task(const PretrainOptions& p, const std::filesystem::path& resume_dir);

}  // namespace rc::train
