#include "model/splade.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "model/checkpoint.h"
#include "model/mlm_head.h"

namespace rc::model {

std::vector<float> splade_embedding(const RobertaModel& mlm_model, const std::vector<int32_t>& ids) {
  RC_CHECK(mlm_model.head_kind() == HeadKind::masked_lm, Errc::invalid_argument,
           "splade_embedding: the model has no masked-LM head");
  RC_CHECK(!ids.empty(), Errc::invalid_argument, "splade_embedding: an empty row");
  const RobertaConfig& c = mlm_model.config();
  const int64_t T = int64_t(ids.size()), V = c.vocab_size;
  const int32_t len = int32_t(T);
  std::vector<float> out(static_cast<size_t>(V), 0.0f);
  constexpr int64_t kChunk = 64;
  TrainWorkspace ws(c, 1, T);
  MlmWorkspace mlm(c, std::min<int64_t>(kChunk, T));
  std::vector<float> logits(static_cast<size_t>(std::min<int64_t>(kChunk, T) * V));
  const Batch b{1, T, ids.data(), &len, nullptr};
  for (int64_t t0 = 0; t0 < T; t0 += kChunk) {
    std::vector<int64_t> positions;
    for (int64_t t = t0; t < std::min(T, t0 + kChunk); ++t) positions.push_back(t);
    mlm_logits(kernels::ExecCtx{}, mlm_model, b, positions, logits.data(), ws, mlm);
    for (size_t p = 0; p < positions.size(); ++p)
      for (int64_t v = 0; v < V; ++v) {
        const float x = logits[p * size_t(V) + size_t(v)];
        RC_CHECK(!std::isnan(x), Errc::format, "the model's logits are NaN");
        // log(1 + relu(x)), max over the row's tokens.
        out[size_t(v)] = std::max(out[size_t(v)], float(std::log1p(std::max(0.0, double(x)))));
      }
  }
  return out;
}

namespace {

class SpladeImpl final : public SpladeEncoder {
 public:
  SpladeImpl(const std::filesystem::path& dir, int max_length) {
    CheckpointLoadOptions lo;
    lo.head = HeadKind::masked_lm;
    model_ = load_checkpoint(dir, lo);
    tok_ = Tokenizer::from_dir(dir);
    check_tokenizer_fits(*tok_, model_->config(), dir);
    max_length_ = int(model_->config().max_tokens());
    if (max_length > 0) {
      RC_CHECK(max_length >= 2 && max_length <= max_length_, Errc::invalid_argument, "--max-length ", max_length,
               " is outside [2, ", max_length_, "], the model's limit");
      max_length_ = max_length;
    }
  }
  const Tokenizer& tokenizer() const override { return *tok_; }
  int max_length() const override { return max_length_; }
  int64_t vocab_size() const override { return model_->config().vocab_size; }

  std::vector<float> embed(const std::vector<int32_t>& ids) const override {
    RC_CHECK(!ids.empty() && int64_t(ids.size()) <= max_length_, Errc::invalid_argument, "a row has ", ids.size(),
             " tokens; expected 1..", max_length_);
    return splade_embedding(*model_, ids);
  }

 private:
  std::unique_ptr<RobertaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
  int max_length_ = 0;
};

}  // namespace

std::unique_ptr<SpladeEncoder> SpladeEncoder::load(const std::filesystem::path& dir, int max_length) {
  return std::make_unique<SpladeImpl>(dir, max_length);
}

}  // namespace rc::model
