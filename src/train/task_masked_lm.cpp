// The masked-LM task (task.h): run_mlm.py's examples and masking on the training loop.
#include <cmath>

#include "core/check.h"
#include "core/clock.h"
#include "model/mlm_head.h"
#include "train/mlm_collator.h"
#include "train/task.h"

namespace rc::train {

namespace {

class MaskedLmTask final : public Task {
 public:
  MaskedLmTask(MlmSplit train, std::optional<MlmSplit> eval, const MlmMasking& masking, uint64_t seed)
      : train_(std::move(train)), eval_(std::move(eval)), masking_(masking), seed_(seed) {}
  const TokenizedSplit& train_examples() const override { return train_.examples; }
  void reserve(TaskBatch& b, int64_t max_B, int64_t max_T) const override {
    b.pb.reserve(max_B, max_T);
    b.token_labels.reserve(size_t(max_B * max_T));
  }
  void collate(std::span<const int64_t> idx, int64_t step, int32_t pad_id, TaskBatch& out) const override {
    fill_batch(train_.examples, idx, pad_id, out.pb);
    mask_split_batch(masking_, seed_, step, idx, train_, out.pb, out.token_labels);
  }
  model::Targets targets(const TaskBatch& b) const override { return model::Targets(b.token_labels.data()); }
  bool has_split(const std::string& name) const override { return name == "val" && eval_.has_value(); }
  int64_t max_eval_length() const override { return eval_ ? eval_->examples.max_length() : 1; }
  // The held-out loss with fixed masks (step -1) and no dropout: the same number every time for
  // the same weights, so evaluations compare. Runs on the model's device.
  EvalResult evaluate(const kernels::ExecCtx& ctx, const model::RobertaModel& model, const std::string& split,
                      int64_t batch_size, model::InferenceWorkspace&) const override {
    RC_CHECK(split == "val" && eval_, Errc::not_found, "no '", split, "' split");
    const double t0 = monotonic_seconds();
    const TokenizedSplit& s = eval_->examples;
    if (!ws_ || ws_->max_B() < batch_size) {
      const int64_t T = std::max<int64_t>(1, s.max_length());
      // On the CPU fp32 activations whatever ctx's GEMMs (as pretraining always evaluated).
      ws_ = ctx.device == Device::cpu ? std::make_unique<model::TrainWorkspace>(model.config(), batch_size, T)
                                      : std::make_unique<model::TrainWorkspace>(ctx, model.config(), batch_size, T,
                                                                                model::HeadKind::masked_lm);
      mlm_ = std::make_unique<model::MlmWorkspace>(ctx, model.config(), batch_size * T);
    }
    PaddedBatch pb;
    pb.reserve(batch_size, s.max_length());
    std::vector<int32_t> labels;
    std::vector<int64_t> idx;
    double loss_sum = 0;
    int64_t count = 0;
    for (int64_t i0 = 0; i0 < s.size(); i0 += batch_size) {
      idx.clear();
      for (int64_t i = i0; i < std::min(s.size(), i0 + batch_size); ++i) idx.push_back(i);
      fill_batch(s, idx, model.config().pad_token_id, pb);
      mask_split_batch(masking_, seed_, -1, idx, *eval_, pb, labels);
      const model::MlmLoss l =
          model::mlm_forward_backward(ctx, model, model::Batch{pb.B, pb.T, pb.ids.data(), pb.seq_lens.data(), nullptr},
                                      labels.data(), model::DropoutConfig{}, 0, 1.0f, nullptr, *ws_, *mlm_);
      loss_sum += l.loss_sum;
      count += l.count;
    }
    EvalResult e;
    e.split = split;
    e.num_examples = s.size();
    e.problem_type = "masked_lm";
    e.loss = count > 0 ? loss_sum / double(count) : 0.0;
    e.metrics = {{"perplexity", std::exp(e.loss)}};
    e.runtime_s = monotonic_seconds() - t0;
    return e;
  }
  std::string default_metric() const override { return "loss"; }
  bool sparse_word_grads() const override { return false; }  // the decoder is the word embeddings

 private:
  MlmSplit train_;
  std::optional<MlmSplit> eval_;
  MlmMasking masking_;
  uint64_t seed_;
  mutable std::unique_ptr<model::TrainWorkspace> ws_;
  mutable std::unique_ptr<model::MlmWorkspace> mlm_;
};

}  // namespace

std::unique_ptr<Task> masked_lm_task(MlmSplit train, std::optional<MlmSplit> eval, const MlmMasking& masking,
                                     uint64_t seed) {
  return std::make_unique<MaskedLmTask>(std::move(train), std::move(eval), masking, seed);
}

}  // namespace rc::train
