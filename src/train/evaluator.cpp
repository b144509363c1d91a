// Evaluation (evaluator.h).
#include "train/evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/check.h"
#include "core/clock.h"
#include "model/batch.h"
#include "train/eval_metrics.h"
#include "train/label_mapping.h"
#include "train/multilabel_metrics.h"

namespace rc {

std::string EvalResult::to_json(const std::string& prefix, int indent) const {
  return train::eval_json(*this, prefix).dump(indent);
}

namespace train {
using json = nlohmann::json;

namespace {
std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}
}  // namespace

PreparedSplit prepare_split(const TextSplit& split, const std::vector<std::string>& data_names,
                            const std::vector<std::string>& model_labels, const Tokenizer& tokenizer, int max_length,
                            ProblemType problem) {
  PreparedSplit p;
  p.name = split.name;
  if (problem == ProblemType::single_label) {
    const std::vector<int32_t> labels = map_labels(split, data_names, model_labels);
    p.tok = tokenize_split(tokenizer, split.texts, labels, max_length, split.text_pairs);
    return p;
  }
  // Float targets first: a bad label fails before the tokenizer runs.
  std::vector<float> targets =
      problem == ProblemType::multi_label ? multi_hot_targets(split, model_labels) : regression_targets(split);
  RC_CHECK(problem == ProblemType::multi_label || model_labels.size() == 1, Errc::invalid_argument,
           "regression needs a model with one label, this one has ", model_labels.size(),
           "\nHINT: pass --labels NAME for a new one-output head");
  const std::vector<int32_t> unused(split.texts.size(), 0);
  p.tok = tokenize_split(tokenizer, split.texts, unused, max_length, split.text_pairs);
  p.tok.targets = std::move(targets);
  p.tok.target_width = int64_t(model_labels.size());
  return p;
}

ProblemType problem_type_of(const model::RobertaConfig& config) {
  switch (model::sequence_loss_of(config)) {
    case model::SequenceLoss::bce_with_logits:
      return ProblemType::multi_label;
    case model::SequenceLoss::mse:
      return ProblemType::regression;
    case model::SequenceLoss::cross_entropy:
      break;
  }
  return ProblemType::single_label;
}

std::string default_metric(ProblemType p) {
  switch (p) {
    case ProblemType::multi_label:
      return "micro_f1";
    case ProblemType::regression:
      return "mse";
    case ProblemType::single_label:
      break;
  }
  return "macro_recall";
}

bool greater_is_better(const std::string& metric) { return metric != "loss" && metric != "mse" && metric != "mae"; }

namespace {

// BCE-with-logits / squared error over every element, in double (the trained loss's definition).
double pointwise_mean(std::span<const float> logits, std::span<const float> targets, bool bce) {
  double s = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const double x = logits[i], y = targets[i];
    s += bce ? std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::fabs(x))) : (x - y) * (x - y);
  }
  return logits.empty() ? 0.0 : s / double(logits.size());
}

void fill_float_metrics(EvalResult& e, ProblemType problem, std::span<const float> logits,
                        std::span<const float> targets, int64_t K, double threshold) {
  e.loss = pointwise_mean(logits, targets, problem == ProblemType::multi_label);
  if (problem == ProblemType::multi_label) {
    const MultiLabelMetrics m = multilabel_metrics(targets, logits, K, ScoreKind::logits, threshold);
    e.precision = m.precision;
    e.recall = m.recall;
    e.f1 = m.f1;
    e.support = m.support;
    e.macro_precision = m.macro_precision;
    e.macro_recall = m.macro_recall;
    e.macro_f1 = m.macro_f1;
    e.accuracy = m.exact_match;
    e.metrics = {{"micro_f1", m.micro_f1}, {"micro_precision", m.micro_precision}, {"micro_recall", m.micro_recall},
                 {"macro_f1", m.macro_f1}, {"exact_match", m.exact_match},         {"threshold", threshold}};
    return;
  }
  const RegressionMetrics m = regression_metrics(targets, logits, K);
  e.metrics = {{"mse", m.mse}, {"mae", m.mae}, {"pearson", m.pearson[0]}, {"spearman", m.spearman[0]}};
}

}  // namespace

EvalResult evaluate_tokenized(const kernels::ExecCtx& ctx, const model::RobertaModel& model, const PreparedSplit& s,
                              int64_t batch_size, model::InferenceWorkspace& ws, double threshold) {
  const double t0 = monotonic_seconds();
  const int64_t N = s.tok.size(), K = model.config().num_labels();
  // The batching order of Classifier::predict (model/batch.h).
  std::vector<int64_t> order(static_cast<size_t>(N));
  {
    const auto by_length = model::length_sorted_order(size_t(N), [&](size_t i) { return s.tok.lengths[i]; });
    std::copy(by_length.begin(), by_length.end(), order.begin());
  }
  std::vector<float> logits(static_cast<size_t>(N * K)), batch_logits(static_cast<size_t>(batch_size * K));
  PaddedBatch pb;
  pb.reserve(batch_size, s.tok.max_length());
  for (int64_t start = 0; start < N; start += batch_size) {
    const int64_t n = std::min(batch_size, N - start);
    std::span<const int64_t> idx(order.data() + start, size_t(n));
    fill_batch(s.tok, idx, model.config().pad_token_id, pb);
    model::Batch b{pb.B, pb.T, pb.ids.data(), pb.seq_lens.data(),
                   pb.token_types.empty() ? nullptr : pb.token_types.data()};
    model::forward_logits(ctx, model, b, ws, batch_logits.data());
    for (int64_t r = 0; r < n; ++r) std::copy_n(batch_logits.data() + r * K, K, logits.data() + idx[size_t(r)] * K);
  }
  EvalResult e;
  e.split = s.name;
  e.num_examples = N;
  e.labels = model.config().id2label;
  const ProblemType problem = problem_type_of(model.config());
  e.problem_type = problem_type_name(problem);
  if (problem != ProblemType::single_label) {
    RC_CHECK(s.tok.target_width == K, Errc::invalid_argument, "split '", s.name, "' has ", s.tok.target_width,
             " targets per example, the model ", K, " outputs (", e.problem_type, ")");
    fill_float_metrics(e, problem, logits, s.tok.targets, K, threshold);
    e.runtime_s = monotonic_seconds() - t0;
    return e;
  }
  e.loss = cross_entropy_mean(logits, s.tok.labels, K);
  const auto preds = argmax_rows(logits, K);
  const auto m = classification_metrics(s.tok.labels, preds, K);
  e.accuracy = m.accuracy;
  e.macro_f1 = m.macro_f1;
  e.macro_recall = m.macro_recall;
  e.macro_precision = m.macro_precision;
  e.precision = m.precision;
  e.recall = m.recall;
  e.f1 = m.f1;
  e.support = m.support;
  e.confusion = m.confusion;
  e.runtime_s = monotonic_seconds() - t0;
  return e;
}

json eval_json(const EvalResult& e, const std::string& p) {
  json j;
  if (e.confusion.empty()) {  // multi-label, regression: their own metrics
    j[p + "_loss"] = e.loss;
    for (const auto& [name, v] : e.metrics) {
      // run_mlm.py saves its perplexity unprefixed (metrics["perplexity"] = ...).
      const std::string key = e.problem_type == "masked_lm" && name == "perplexity" ? name : p + "_" + name;
      j[key] = std::isfinite(v) ? json(v) : json(nullptr);
    }
    for (size_t k = 0; k < e.labels.size() && k < e.f1.size(); ++k) {
      j[p + "_precision_" + e.labels[k]] = e.precision[k];
      j[p + "_recall_" + e.labels[k]] = e.recall[k];
      j[p + "_f1_" + e.labels[k]] = e.f1[k];
      j[p + "_support_" + e.labels[k]] = e.support[k];
    }
    j[p + "_problem_type"] = e.problem_type;
    if (!e.labels.empty()) j[p + "_labels"] = e.labels;
    j[p + "_samples"] = e.num_examples;
    j[p + "_runtime"] = e.runtime_s;
    j[p + "_samples_per_second"] = e.runtime_s > 0 ? double(e.num_examples) / e.runtime_s : 0.0;
    return j;
  }
  j[p + "_loss"] = e.loss;
  j[p + "_accuracy"] = e.accuracy;
  j[p + "_macro_f1"] = e.macro_f1;
  j[p + "_macro_recall"] = e.macro_recall;
  j[p + "_macro_precision"] = e.macro_precision;
  for (size_t k = 0; k < e.labels.size(); ++k) {
    j[p + "_precision_" + e.labels[k]] = e.precision[k];
    j[p + "_recall_" + e.labels[k]] = e.recall[k];
    j[p + "_f1_" + e.labels[k]] = e.f1[k];
  }
  j[p + "_confusion_matrix"] = e.confusion;
  j[p + "_labels"] = e.labels;
  j[p + "_samples"] = e.num_examples;
  j[p + "_runtime"] = e.runtime_s;
  j[p + "_samples_per_second"] = e.runtime_s > 0 ? double(e.num_examples) / e.runtime_s : 0.0;
  return j;
}

double metric_value(const EvalResult& e, const std::string& metric) {
  for (const auto& [name, v] : e.metrics)
    if (name == metric) return v;
  if (!e.confusion.empty() || e.metrics.empty()) {
    // single-label (or the validation of --metric before any evaluation): the fields below
  } else if (metric != "loss" && metric != "macro_f1") {
    std::string known = "loss";
    for (const auto& [name, v] : e.metrics) known += ", " + name;
    RC_THROW(Errc::invalid_argument, "--metric '", metric, "' is not a ", e.problem_type, " metric\nHINT: use ", known);
  }
  if (metric == "macro_recall") return e.macro_recall;
  if (metric == "macro_f1") return e.macro_f1;
  if (metric == "accuracy") return e.accuracy;
  if (metric == "macro_precision") return e.macro_precision;
  if (metric == "loss") return e.loss;
  for (const char* name : {"micro_f1", "micro_precision", "micro_recall", "exact_match", "mse", "mae", "pearson",
                           "spearman", "mrr@10", "ndcg@10", "recall@1", "recall@5", "recall@10", "spearman_cosine",
                           "pearson_cosine"})  // the last seven: the embedding task's (ir_metrics.h)
    if (metric == name) return 0.0;  // validated before the first evaluation (EvalResult{}): a later one has it
  RC_THROW(Errc::invalid_argument, "unknown --metric '", metric,
           "'\nHINT: use macro_recall, macro_f1, accuracy, macro_precision or loss; micro_f1 or exact_match ",
           "(multi-label); mse, mae, pearson or spearman (regression)");
}

std::string eval_line(const EvalResult& e, int64_t step) {
  std::ostringstream o;
  if (e.confusion.empty() && !e.metrics.empty()) {
    o << "eval: step " << step << " | " << e.split << " loss " << fixed(e.loss, 4);
    for (const auto& [name, v] : e.metrics)
      if (name != "threshold") o << " | " << name << " " << fixed(v, 4);
    o << " | " << fixed(e.runtime_s, 1) << " s";
    return o.str();
  }
  o << "eval: step " << step << " | " << e.split << " loss " << fixed(e.loss, 4) << " | accuracy "
    << fixed(e.accuracy, 4) << " | macro_f1 " << fixed(e.macro_f1, 4) << " | macro_recall " << fixed(e.macro_recall, 4)
    << " | " << fixed(e.runtime_s, 1) << " s";
  return o.str();
}

}  // namespace train
}  // namespace rc
