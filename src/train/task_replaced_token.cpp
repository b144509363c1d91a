// The replaced-token detection task (task.h): ELECTRA's discriminator objective on the
// training loop, with a frozen masked-LM generator (replaced_tokens.h). The model is a token
// classifier with two labels, original and replaced; every real token is scored.
#include "core/check.h"
#include "core/clock.h"
#include "train/eval_metrics.h"
#include "train/replaced_tokens.h"
#include "train/task.h"

namespace rc::train {

namespace {

// The held-out texts corrupted once (step -1), so that every evaluation scores the same
// tokens: the corrupted ids as a split, and their labels at the same offsets.
struct CorruptedSplit {
  TokenizedSplit tokens;
  std::vector<int32_t> labels;
};

CorruptedSplit corrupt_split(TokenReplacer& replacer, const MlmSplit& s, int32_t pad_id, int64_t batch_size) {
  CorruptedSplit out;
  out.tokens = s.examples;
  out.labels.assign(s.examples.ids.size(), model::kIgnoreLabel);
  PaddedBatch pb;
  pb.reserve(batch_size, s.examples.max_length());
  std::vector<int32_t> labels;
  std::vector<int64_t> idx;
  for (int64_t i0 = 0; i0 < s.examples.size(); i0 += batch_size) {
    idx.clear();
    for (int64_t i = i0; i < std::min(s.examples.size(), i0 + batch_size); ++i) idx.push_back(i);
    fill_batch(s.examples, idx, pad_id, pb);
    replacer.corrupt(-1, idx, s, pb, labels);
    for (int64_t b = 0; b < pb.B; ++b) {
      const int64_t off = s.examples.offsets[size_t(idx[size_t(b)])];
      for (int64_t t = 0; t < pb.seq_lens[size_t(b)]; ++t) {
        out.tokens.ids[size_t(off + t)] = pb.ids[size_t(b * pb.T + t)];
        out.labels[size_t(off + t)] = labels[size_t(b * pb.T + t)];
      }
    }
  }
  return out;
}

class ReplacedTokenTask final : public Task {
 public:
  ReplacedTokenTask(MlmSplit train, std::optional<MlmSplit> eval, std::unique_ptr<TokenReplacer> replacer,
                    int32_t pad_id, int64_t eval_batch)
      : train_(std::move(train)), replacer_(std::move(replacer)) {
    if (eval) eval_ = corrupt_split(*replacer_, *eval, pad_id, eval_batch);
  }
  const TokenizedSplit& train_examples() const override { return train_.examples; }
  void reserve(TaskBatch& b, int64_t max_B, int64_t max_T) const override {
    b.pb.reserve(max_B, max_T);
    b.token_labels.reserve(size_t(max_B * max_T));
  }
  void collate(std::span<const int64_t> idx, int64_t step, int32_t pad_id, TaskBatch& out) const override {
    fill_batch(train_.examples, idx, pad_id, out.pb);
    replacer_->corrupt(step, idx, train_, out.pb, out.token_labels);
  }
  model::Targets targets(const TaskBatch& b) const override { return model::Targets(b.token_labels.data()); }
  bool has_split(const std::string& name) const override { return name == "val" && eval_.has_value(); }
  int64_t max_eval_length() const override { return eval_ ? eval_->tokens.max_length() : 1; }
  // The mean cross-entropy over the held-out tokens (what the training loss is), token
  // accuracy, and precision / recall / F1 of "replaced" (ELECTRA reports the discriminator's).
  EvalResult evaluate(const kernels::ExecCtx& ctx, const model::RobertaModel& model, const std::string& split,
                      int64_t batch_size, model::InferenceWorkspace& ws) const override {
    RC_CHECK(split == "val" && eval_, Errc::not_found, "no '", split, "' split");
    const double t0 = monotonic_seconds();
    const TokenizedSplit& s = eval_->tokens;
    const int64_t K = model.config().num_labels();
    RC_ASSERT(K == 2);
    PaddedBatch pb;
    pb.reserve(batch_size, s.max_length());
    std::vector<int32_t> labels;
    std::vector<int64_t> idx;
    std::vector<float> logits;
    double loss_sum = 0;
    int64_t count = 0, correct = 0, tp = 0, fp = 0, fn = 0;
    for (int64_t i0 = 0; i0 < s.size(); i0 += batch_size) {
      idx.clear();
      for (int64_t i = i0; i < std::min(s.size(), i0 + batch_size); ++i) idx.push_back(i);
      fill_batch(s, idx, model.config().pad_token_id, pb);
      labels.assign(size_t(pb.B * pb.T), model::kIgnoreLabel);
      for (int64_t b = 0; b < pb.B; ++b)
        for (int64_t t = 0; t < pb.seq_lens[size_t(b)]; ++t)
          labels[size_t(b * pb.T + t)] = eval_->labels[size_t(s.offsets[size_t(idx[size_t(b)])] + t)];
      logits.resize(size_t(pb.B * pb.T * K));
      model::forward_logits(ctx, model, model::Batch{pb.B, pb.T, pb.ids.data(), pb.seq_lens.data(), nullptr}, ws,
                            logits.data());
      const CrossEntropyTotal ce = cross_entropy_total(logits, labels, K);
      loss_sum += ce.sum;
      count += ce.count;
      for (size_t p = 0; p < labels.size(); ++p) {
        if (labels[p] < 0) continue;
        const bool said = logits[p * 2 + 1] > logits[p * 2];
        const bool fake = labels[p] == kReplacedToken;
        correct += said == fake;
        tp += said && fake;
        fp += said && !fake;
        fn += !said && fake;
      }
    }
    auto ratio = [](int64_t a, int64_t b) { return b > 0 ? double(a) / double(b) : 0.0; };
    const double precision = ratio(tp, tp + fp), recall = ratio(tp, tp + fn);
    EvalResult e;
    e.split = split;
    e.num_examples = s.size();
    e.problem_type = "replaced_token_detection";
    e.loss = count > 0 ? loss_sum / double(count) : 0.0;
    e.accuracy = ratio(correct, count);
    e.metrics = {{"accuracy", e.accuracy},
                 {"replaced_precision", precision},
                 {"replaced_recall", recall},
                 {"replaced_f1", precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0.0}};
    e.runtime_s = monotonic_seconds() - t0;
    return e;
  }
  std::string default_metric() const override { return "loss"; }

 private:
  MlmSplit train_;
  std::optional<CorruptedSplit> eval_;
  std::unique_ptr<TokenReplacer> replacer_;  // collate's scratch: one caller at a time
};

}  // namespace

std::unique_ptr<Task> replaced_token_task(MlmSplit train, std::optional<MlmSplit> eval,
                                          std::unique_ptr<TokenReplacer> replacer, int32_t pad_id, int64_t eval_batch) {
  return std::make_unique<ReplacedTokenTask>(std::move(train), std::move(eval), std::move(replacer), pad_id,
                                             eval_batch);
}

}  // namespace rc::train
