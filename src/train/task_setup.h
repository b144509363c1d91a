// fit()'s first step: the task a run trains (sequence or token classification), its data read
// and tokenized, and the model with that task's head and labels — a new head when the labels
// or the head kind change, as from_pretrained does; the checkpoint's own on --resume.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "model/roberta_model.h"
#include "roberta/trainer.h"
#include "train/task.h"

namespace rc::train {

struct TaskSetup {
  std::unique_ptr<model::RobertaModel> model;
  std::unique_ptr<Task> task;
  std::string layout;        // the data's ("tweeteval", "jsonl", "conll", ...)
  std::string problem_type;  // config.problem_type, or "token_classification"
  std::string eval_counts;   // ", 40 val, 40 test" for the log line
};

// --task token-classification, or (no --task) a starting checkpoint that is a
// *ForTokenClassification. Throws invalid_argument for an unknown --task.
bool is_token_task(const TrainOptions& o);
// resume_dir: the checkpoint to resume from (rank 0), or empty. evaluate_splits: whether this
// process scores val / test (rank 0 only).
TaskSetup setup_sequence_task(const TrainOptions& o, const std::filesystem::path& resume_dir, bool evaluate_splits);
TaskSetup setup_token_task(const TrainOptions& o, const std::filesystem::path& resume_dir, bool evaluate_splits);

}  // namespace rc::train
