// Evaluation (evaluator.h).
#include "train/evaluator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "core/check.h"
#include "model/batch.h"
#include "train/eval_metrics.h"
#include "train/label_mapping.h"

namespace rc {

std::string EvalResult::to_json(const std::string& prefix, int indent) const {
  return train::eval_json(*this, prefix).dump(indent);
}

namespace train {
using json = nlohmann::json;

namespace {
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}
}  // namespace

PreparedSplit prepare_split(const TextSplit& split, const std::vector<std::string>& data_names,
                            const std::vector<std::string>& model_labels, const Tokenizer& tokenizer, int max_length) {
  PreparedSplit p;
  p.name = split.name;
  const std::vector<int32_t> labels = map_labels(split, data_names, model_labels);
  p.tok = tokenize_split(tokenizer, split.texts, labels, max_length, split.text_pairs);
  return p;
}

EvalResult evaluate_tokenized(const kernels::ExecCtx& ctx, const model::RobertaModel& model, const PreparedSplit& s,
                              int64_t batch_size, model::InferenceWorkspace& ws) {
  const double t0 = now_s();
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
    model::Batch b{pb.B, pb.T, pb.ids.data(), pb.seq_lens.data(), nullptr};
    model::forward_logits(ctx, model, b, ws, batch_logits.data());
    for (int64_t r = 0; r < n; ++r) std::copy_n(batch_logits.data() + r * K, K, logits.data() + idx[size_t(r)] * K);
  }
  EvalResult e;
  e.split = s.name;
  e.num_examples = N;
  e.labels = model.config().id2label;
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
  e.runtime_s = now_s() - t0;
  return e;
}

json eval_json(const EvalResult& e, const std::string& p) {
  json j;
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
  if (metric == "macro_recall") return e.macro_recall;
  if (metric == "macro_f1") return e.macro_f1;
  if (metric == "accuracy") return e.accuracy;
  if (metric == "macro_precision") return e.macro_precision;
  if (metric == "loss") return e.loss;
  RC_THROW(Errc::invalid_argument, "unknown --metric '", metric,
           "'\nHINT: use macro_recall, macro_f1, accuracy, macro_precision or loss");
}

std::string eval_line(const EvalResult& e, int64_t step) {
  std::ostringstream o;
  o << "eval: step " << step << " | " << e.split << " loss " << fixed(e.loss, 4) << " | accuracy "
    << fixed(e.accuracy, 4) << " | macro_f1 " << fixed(e.macro_f1, 4) << " | macro_recall " << fixed(e.macro_recall, 4)
    << " | " << fixed(e.runtime_s, 1) << " s";
  return o.str();
}

}  // namespace train
}  // namespace rc
