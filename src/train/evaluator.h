// Evaluation during and after training: an eval-mode forward over a tokenized split, rows run
// sorted by length so batches carry little padding (the metrics do not depend on the order),
// and the metrics as HF names them.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/exec_ctx.h"
#include "model/roberta_model.h"
#include "roberta/trainer.h"
#include "train/data_order.h"
#include "train/dataset.h"
#include "train/label_mapping.h"

namespace rc::train {

struct PreparedSplit {
  std::string name;
  TokenizedSplit tok;
};

// Labels mapped to the model's targets for its problem type (single-label ids; multi-hot or
// regression floats in tok.targets), texts tokenized (and truncated to max_length).
PreparedSplit prepare_split(const TextSplit& split, const std::vector<std::string>& data_names,
                            const std::vector<std::string>& model_labels, const Tokenizer& tokenizer, int max_length,
                            ProblemType problem = ProblemType::single_label);

// The problem type of a sequence classifier's config (model::sequence_loss_of's rule).
ProblemType problem_type_of(const model::RobertaConfig& config);

// The eval-mode forward, the problem type's loss (as the model trains it) and its metrics;
// threshold: multi-label's.
EvalResult evaluate_tokenized(const kernels::ExecCtx& ctx, const model::RobertaModel& model, const PreparedSplit& s,
                              int64_t batch_size, model::InferenceWorkspace& ws, double threshold = 0.5);

// --metric when empty: macro_recall (single-label), micro_f1 (multi-label), mse (regression).
std::string default_metric(ProblemType p);
// loss, mse and mae fall; everything else rises.
bool greater_is_better(const std::string& metric);

// "<prefix>_loss", "<prefix>_accuracy", ... (HF's names), per-class values and the confusion matrix.
nlohmann::json eval_json(const EvalResult& e, const std::string& prefix);
// The --metric value of a result; throws Errc::invalid_argument for an unknown metric.
double metric_value(const EvalResult& e, const std::string& metric);
// One progress line: "eval: step N | val loss ... | accuracy ... | ...".
std::string eval_line(const EvalResult& e, int64_t step);

}  // namespace rc::train
