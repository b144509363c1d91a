// What the training loop (fit, trainer.cpp) asks of a task, and nothing more: the train
// examples, how rows of them become a micro-batch with the head's targets, how a split is
// scored and by which metric the best checkpoint is kept. The loop knows no head, loss, label
// format or metric; the model layer's heads take the targets (model::Targets).
//
// Tasks (task_*.cpp):
//   - sequence classification, all three problem types (single-label, multi-label,
//     regression: the head's loss follows config.problem_type);
//   - token classification (NER): per-token labels aligned as run_ner.py, seqeval metrics;
//   - embedding models (task_embedding.cpp): sentence-transformers' MultipleNegativesRankingLoss
//     on (anchor, positive[, negative]) rows, retrieval / similarity metrics;
//   - cross-encoders (task_embedding.cpp): a one-label classifier over (query, text), BCE.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/exec_ctx.h"
#include "model/mnrl.h"
#include "model/roberta_model.h"
#include "roberta/tokenizer.h"
#include "roberta/trainer.h"
#include "train/data_order.h"
#include "train/evaluator.h"
#include "train/token_data.h"
#include "train/train_step.h"

namespace rc::train {

// One micro-batch as a task fills it: the padded ids (pb) and, for per-token tasks, the B·T
// labels (-100 on padding and on tokens without a target). Sized once (reserve): filling
// allocates nothing.
struct TaskBatch {
  PaddedBatch pb;
  std::vector<int32_t> token_labels;
  model::MnrlConfig ranking;  // an embedding task's anchors and loss (anchors 0: not one)
  model::Batch batch() const {
    return model::Batch{pb.B, pb.T, pb.ids.data(), pb.seq_lens.data(),
                        pb.token_types.empty() ? nullptr : pb.token_types.data()};
  }
};

class Task {
 public:
  virtual ~Task() = default;
  // The training examples (their lengths drive the epoch order and --group-by-length; the
  // fingerprint of their ids identifies the run's data on resume and across ranks).
  virtual const TokenizedSplit& train_examples() const = 0;
  virtual void reserve(TaskBatch& b, int64_t max_B, int64_t max_T) const = 0;
  // Rows idx of the train examples as one micro-batch for optimizer step `step` (the masked-LM
  // task draws its masks from it), and what the head scores them against.
  virtual void collate(std::span<const int64_t> idx, int64_t step, int32_t pad_id, TaskBatch& out) const = 0;
  virtual model::Targets targets(const TaskBatch& b) const = 0;
  // The evaluation splits the data has ("val", "test"), their longest example, and scoring.
  virtual bool has_split(const std::string& name) const = 0;
  virtual int64_t max_eval_length() const = 0;
  virtual EvalResult evaluate(const kernels::ExecCtx& ctx, const model::RobertaModel& model, const std::string& split,
                              int64_t batch_size, model::InferenceWorkspace& ws) const = 0;
  // --metric when the user gives none.
  virtual std::string default_metric() const = 0;
  // Whether only the batch's rows of the word embeddings get gradient (data parallel sends
  // those alone); not with a decoder tied to them (masked LM).
  virtual bool sparse_word_grads() const { return true; }
  // Rows of the batch per example (an embedding task's anchor, positive and any negative are
  // each a row): the engine's largest batch is batch size × this.
  virtual int64_t rows_per_example() const { return 1; }
  // Writes what the output folder needs beside the model's config and weights (a
  // sentence-transformers folder's modules.json, 1_Pooling/, ...). Called after each save
  // (checkpoint-N/ and the final output).
  virtual void save_files(const std::filesystem::path&) const {}
  // Parameters the task trains beside the model's (an embedding model's Dense modules: each
  // layer's weight, then its bias, the layout mnrl.h's dense_grads takes); the loop hands them
  // to the engine (TrainEngine::set_extra_params). save_files writes them.
  virtual std::vector<ExtraParam> extra_params() { return {}; }
  // Reads them back from a folder save_files wrote (the best checkpoint, at the end of a run).
  virtual void load_extra_params(const std::filesystem::path&) {}
};

// Dense modules' weights and biases as the engine trains them beside the model (the layout
// mnrl.h's dense_grads takes); weight decay on the weights only, as HF Trainer's
// get_decay_parameter_names leaves out every bias.
std::vector<ExtraParam> dense_extra_params(std::span<model::DenseLayer> dense);

// Sequence classification of prepared splits (evaluator.h) for the model's problem type;
// threshold: multi-label's.
std::unique_ptr<Task> sequence_classification_task(PreparedSplit train, std::vector<PreparedSplit> eval_splits,
                                                   ProblemType problem, double threshold);

// Token classification: sentences already tokenized and aligned (token_data.h).
std::unique_ptr<Task> token_classification_task(TokenLabelledSplit train, std::vector<TokenLabelledSplit> eval_splits,
                                                std::vector<std::string> eval_names);

// Masked-LM pretraining (run_mlm.py): examples from mlm_examples (line by line or packed
// blocks), masks from (seed, step, example) (mlm_collator.h), evaluation = the masked-LM loss
// over the held-out examples with fixed masks, and its perplexity.
// Whole-word masking when the splits carry word starts.
struct MlmMasking;
struct MlmSplit;
std::unique_ptr<Task> masked_lm_task(MlmSplit train, std::optional<MlmSplit> eval, const MlmMasking& masking,
                                     uint64_t seed);

// ELECTRA's replaced-token detection (replaced_tokens.h): the model is a two-label token
// classifier (original, replaced) trained on the texts as `replacer`'s frozen generator
// corrupts them; evaluation scores the held-out texts corrupted once (step -1): the loss, token
// accuracy and the replaced class's precision, recall and F1.
class TokenReplacer;
std::unique_ptr<Task> replaced_token_task(MlmSplit train, std::optional<MlmSplit> eval,
                                          std::unique_ptr<TokenReplacer> replacer, int32_t pad_id, int64_t eval_batch);

// The token classifier's evaluation of one split: the mean cross-entropy over the labelled
// tokens and seqeval's entity metrics (precision, recall, f1 overall and per entity type;
// token accuracy), as transformers' run_ner.py reports them. Shared by fit() and evaluate().
EvalResult evaluate_token_split(const kernels::ExecCtx& ctx, const model::RobertaModel& model,
                                const TokenLabelledSplit& s, const std::string& name, int64_t batch_size,
                                model::InferenceWorkspace& ws);

}  // namespace rc::train
