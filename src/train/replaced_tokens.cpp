// ELECTRA's corruption with a frozen generator (replaced_tokens.h).
#include "train/replaced_tokens.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/counter_rng.h"
#include "kernels/exec_ctx.h"
#include "model/hidden_states.h"

namespace rc::train {

int32_t sample_from_logits(std::span<const float> logits, std::span<const uint8_t> allowed, double u) {
  RC_ASSERT(logits.size() == allowed.size());
  float mx = -INFINITY;
  for (size_t v = 0; v < logits.size(); ++v)
    if (allowed[v]) mx = std::max(mx, logits[v]);
  RC_ASSERT(mx > -INFINITY);
  double total = 0;
  for (size_t v = 0; v < logits.size(); ++v)
    if (allowed[v]) total += std::exp(double(logits[v]) - double(mx));
  const double target = u * total;
  double acc = 0;
  int32_t last = -1;
  for (size_t v = 0; v < logits.size(); ++v) {
    if (!allowed[v]) continue;
    acc += std::exp(double(logits[v]) - double(mx));
    last = int32_t(v);
    if (acc > target) return last;
  }
  return last;  // u·total rounded up to the sum: the last allowed id
}

TokenReplacer::TokenReplacer(std::shared_ptr<const model::RobertaModel> generator, MlmMasking masking, uint64_t seed,
                             int64_t max_B, int64_t max_T)
    : gen_(std::move(generator)),
      masking_(std::move(masking)),
      seed_(seed),
      ws_(gen_->config(), std::max<int64_t>(1, max_B), std::max<int64_t>(1, max_T)),
      mlm_(gen_->config(), model::MlmWorkspace::kChunkRows) {
  RC_ASSERT(gen_->head_kind() == model::HeadKind::masked_lm);
  const int64_t V = gen_->config().vocab_size;
  allowed_.assign(size_t(V), 1);
  for (int32_t id : masking_.special_ids)
    if (id >= 0 && id < V) allowed_[size_t(id)] = 0;
  original_.reserve(size_t(max_B * max_T));
  mlm_labels_.reserve(size_t(max_B * max_T));
  positions_.reserve(size_t(max_B * max_T));
  streams_.reserve(size_t(max_B));
  chunk_.reserve(size_t(model::MlmWorkspace::kChunkRows));
  hidden_.reserve(size_t(max_B * max_T * gen_->config().hidden_size));
  logits_.resize(size_t(model::MlmWorkspace::kChunkRows * V));
}

int64_t TokenReplacer::corrupt(int64_t step, std::span<const int64_t> example, const MlmSplit& split,
                               PaddedBatch& batch, std::vector<int32_t>& labels) {
  const int64_t B = batch.B, T = batch.T, V = gen_->config().vocab_size, C = gen_->config().hidden_size;
  RC_ASSERT(int64_t(example.size()) == B && B <= ws_.max_B() && T <= ws_.max_T());
  original_.assign(batch.ids.begin(), batch.ids.begin() + B * T);
  mask_split_batch(masking_, seed_, step, example, split, batch, mlm_labels_);
  positions_.clear();
  for (int64_t p = 0; p < B * T; ++p)
    if (mlm_labels_[size_t(p)] != model::kIgnoreLabel) positions_.push_back(p);

  if (!positions_.empty()) {
    // The generator reads the masked batch; its hidden states once, its decoder in chunks.
    hidden_.resize(size_t(B * T * C));
    const kernels::ExecCtx cpu{};
    model::forward_hidden_states(cpu, *gen_, model::Batch{B, T, batch.ids.data(), batch.seq_lens.data(), nullptr}, ws_,
                                 hidden_.data());
    // One stream per (seed, step, example), one draw per chosen position in order: a row's
    // draws do not depend on the rest of the batch.
    streams_.clear();
    for (int64_t b = 0; b < B; ++b)
      streams_.push_back(rng::SplitMix64{
          rng::derive(rng::derive(seed_ ^ 0x454C45435452415Full, uint64_t(step)), uint64_t(example[size_t(b)]))});
    std::vector<int64_t>& chunk = chunk_;
    for (size_t i0 = 0; i0 < positions_.size(); i0 += size_t(model::MlmWorkspace::kChunkRows)) {
      const size_t i1 = std::min(positions_.size(), i0 + size_t(model::MlmWorkspace::kChunkRows));
      chunk.assign(positions_.begin() + std::ptrdiff_t(i0), positions_.begin() + std::ptrdiff_t(i1));
      model::mlm_head_logits(cpu, *gen_, hidden_.data(), chunk, logits_.data(), mlm_);
      for (size_t k = 0; k < chunk.size(); ++k) {
        const int64_t p = chunk[k];
        const double u = streams_[size_t(p / T)].uniform53();
        batch.ids[size_t(p)] =
            sample_from_logits(std::span<const float>(logits_.data() + k * size_t(V), size_t(V)), allowed_, u);
      }
    }
  }
  // The discriminator reads the original text with the drawn tokens at the chosen positions.
  labels.assign(size_t(B * T), model::kIgnoreLabel);
  int64_t replaced = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < batch.seq_lens[size_t(b)]; ++t) {
      const size_t p = size_t(b * T + t);
      if (mlm_labels_[p] == model::kIgnoreLabel) batch.ids[p] = original_[p];  // unchosen: as it was
      const bool fake = batch.ids[p] != original_[p];
      labels[p] = fake ? kReplacedToken : kOriginalToken;
      replaced += fake;
    }
  return replaced;
}

}  // namespace rc::train
