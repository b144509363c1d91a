// The training tasks behind task.h: sequence classification (three problem types) and token
// classification (NER).
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/clock.h"
#include "model/batch.h"
#include "train/eval_metrics.h"
#include "train/evaluator.h"
#include "train/seqeval.h"
#include "train/task.h"
#include "train/token_data.h"

namespace rc::train {

namespace {

class SequenceClassificationTask final : public Task {
 public:
  SequenceClassificationTask(PreparedSplit train, std::vector<PreparedSplit> evals, ProblemType problem,
                             double threshold)
      : train_(std::move(train)), evals_(std::move(evals)), problem_(problem), threshold_(threshold) {}
  const TokenizedSplit& train_examples() const override { return train_.tok; }
  void reserve(TaskBatch& b, int64_t max_B, int64_t max_T) const override {
    b.pb.reserve(max_B, max_T, train_.tok.target_width);
  }
  void collate(std::span<const int64_t> idx, int64_t, int32_t pad_id, TaskBatch& out) const override {
    fill_batch(train_.tok, idx, pad_id, out.pb);
  }
  model::Targets targets(const TaskBatch& b) const override {
    // Single-label: one id per row; multi-label and regression: their float targets.
    return problem_ == ProblemType::single_label ? model::Targets(b.pb.labels.data())
                                                 : model::Targets::of_values(b.pb.targets.data());
  }
  bool has_split(const std::string& name) const override { return find(name) != nullptr; }
  int64_t max_eval_length() const override {
    int64_t T = 1;
    for (const PreparedSplit& s : evals_) T = std::max<int64_t>(T, s.tok.max_length());
    return T;
  }
  EvalResult evaluate(const kernels::ExecCtx& ctx, const model::RobertaModel& model, const std::string& split,
                      int64_t batch_size, model::InferenceWorkspace& ws) const override {
    const PreparedSplit* s = find(split);
    RC_CHECK(s, Errc::not_found, "no '", split, "' split");
    return evaluate_tokenized(ctx, model, *s, batch_size, ws, threshold_);
  }
  std::string default_metric() const override { return train::default_metric(problem_); }

 private:
  const PreparedSplit* find(const std::string& name) const {
    for (const PreparedSplit& s : evals_)
      if (s.name == name) return &s;
    return nullptr;
  }
  PreparedSplit train_;
  std::vector<PreparedSplit> evals_;
  ProblemType problem_;
  double threshold_;
};

class TokenClassificationTask final : public Task {
 public:
  TokenClassificationTask(TokenLabelledSplit train, std::vector<TokenLabelledSplit> evals,
                          std::vector<std::string> names)
      : train_(std::move(train)), evals_(std::move(evals)), names_(std::move(names)) {}
  const TokenizedSplit& train_examples() const override { return train_.tokens; }
  void reserve(TaskBatch& b, int64_t max_B, int64_t max_T) const override {
    b.pb.reserve(max_B, max_T);
    b.token_labels.reserve(size_t(max_B * max_T));
  }
  void collate(std::span<const int64_t> idx, int64_t, int32_t pad_id, TaskBatch& out) const override {
    fill_batch(train_.tokens, idx, pad_id, out.pb);
    fill_token_labels(train_, idx, out.pb.T, out.token_labels);
  }
  model::Targets targets(const TaskBatch& b) const override { return model::Targets(b.token_labels.data()); }
  bool has_split(const std::string& name) const override { return find(name) != nullptr; }
  int64_t max_eval_length() const override {
    int64_t T = 1;
    for (const TokenLabelledSplit& s : evals_) T = std::max<int64_t>(T, s.tokens.max_length());
    return T;
  }
  EvalResult evaluate(const kernels::ExecCtx& ctx, const model::RobertaModel& model, const std::string& split,
                      int64_t batch_size, model::InferenceWorkspace& ws) const override {
    const TokenLabelledSplit* s = find(split);
    RC_CHECK(s, Errc::not_found, "no '", split, "' split");
    return evaluate_token_split(ctx, model, *s, split, batch_size, ws);
  }
  std::string default_metric() const override { return "f1"; }

 private:
  const TokenLabelledSplit* find(const std::string& name) const {
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return &evals_[i];
    return nullptr;
  }
  TokenLabelledSplit train_;
  std::vector<TokenLabelledSplit> evals_;
  std::vector<std::string> names_;
};

}  // namespace

std::unique_ptr<Task> sequence_classification_task(PreparedSplit train, std::vector<PreparedSplit> eval_splits,
                                                   ProblemType problem, double threshold) {
  return std::make_unique<SequenceClassificationTask>(std::move(train), std::move(eval_splits), problem, threshold);
}

std::unique_ptr<Task> token_classification_task(TokenLabelledSplit train, std::vector<TokenLabelledSplit> eval_splits,
                                                std::vector<std::string> eval_names) {
  RC_ASSERT(eval_splits.size() == eval_names.size());
  return std::make_unique<TokenClassificationTask>(std::move(train), std::move(eval_splits), std::move(eval_names));
}

EvalResult evaluate_token_split(const kernels::ExecCtx& ctx, const model::RobertaModel& model,
                                const TokenLabelledSplit& s, const std::string& name, int64_t batch_size,
                                model::InferenceWorkspace& ws) {
  const double t0 = monotonic_seconds();
  const model::RobertaConfig& c = model.config();
  const int64_t N = s.size(), K = c.num_labels();
  const auto order = model::length_sorted_order(size_t(N), [&](size_t i) { return s.tokens.lengths[i]; });
  std::vector<TagSequence> gold(static_cast<size_t>(N)), predicted(static_cast<size_t>(N));
  PaddedBatch pb;
  pb.reserve(batch_size, s.tokens.max_length());
  std::vector<int32_t> labels;
  std::vector<int64_t> idx;
  std::vector<float> logits;
  double loss_sum = 0;
  int64_t counted = 0;
  for (int64_t start = 0; start < N; start += batch_size) {
    idx.clear();
    for (int64_t r = start; r < std::min(N, start + batch_size); ++r) idx.push_back(int64_t(order[size_t(r)]));
    fill_batch(s.tokens, idx, c.pad_token_id, pb);
    fill_token_labels(s, idx, pb.T, labels);
    logits.resize(size_t(pb.B * pb.T * K));
    model::forward_logits(ctx, model, model::Batch{pb.B, pb.T, pb.ids.data(), pb.seq_lens.data(), nullptr}, ws,
                          logits.data());
    // The trained loss: cross-entropy over the tokens with a label, in double.
    const CrossEntropyTotal ce = cross_entropy_total(logits, labels, K);
    loss_sum += ce.sum;
    counted += ce.count;
    const NerSequences seqs = ner_tag_sequences(logits, labels, pb.B, pb.T, c.id2label);
    for (size_t r = 0; r < idx.size(); ++r) {
      gold[size_t(idx[r])] = seqs.gold[r];
      predicted[size_t(idx[r])] = seqs.predicted[r];
    }
  }
  const SeqevalReport rep = seqeval_report(gold, predicted);
  EvalResult e;
  e.split = name;
  e.num_examples = N;
  e.problem_type = "token_classification";
  e.loss = counted > 0 ? loss_sum / double(counted) : 0.0;
  // Per entity type (seqeval's report), the labels of the per-label arrays.
  for (const EntityTypeScores& t : rep.per_type) {
    e.labels.push_back(t.type);
    e.precision.push_back(t.precision);
    e.recall.push_back(t.recall);
    e.f1.push_back(t.f1);
    e.support.push_back(t.support);
  }
  e.accuracy = rep.accuracy;
  // run_ner.py's compute_metrics: overall precision / recall / f1 / accuracy.
  e.metrics = {{"precision", rep.precision}, {"recall", rep.recall}, {"f1", rep.f1}, {"accuracy", rep.accuracy}};
  e.runtime_s = monotonic_seconds() - t0;
  return e;
}

}  // namespace rc::train
