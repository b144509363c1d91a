// ELECTRA's corruption (Clark et al. 2020, "ELECTRA: Pre-training Text Encoders as
// Discriminators Rather Than Generators"): a generator, a masked-LM model, fills masked
// positions with tokens sampled from its own distribution, and a discriminator learns which
// tokens of the result were replaced. Replaced-token detection scores every token of a text
// where masked-LM scores the masked 15%: the paper's reason it learns more per step.
//
// Here the generator is a trained RobertaForMaskedLM held frozen (the paper's "two-stage"
// variant: its Figure 3 shows it above masked-LM training at the same compute, below joint
// training). Per batch:
//   1. the masked-LM collator's masks (mask_split_batch: mlm_probability of the tokens, then
//      80/10/10; ELECTRA's own code uses [MASK] 85% / kept 15%);
//   2. the generator's eval-mode logits at every chosen position, and one token drawn from
//      their softmax (temperature 1, the correct token allowed, as ELECTRA samples), special
//      tokens excluded so that no <pad> or <s> lands inside a text;
//   3. labels: 1 where the drawn token differs from the original ("replaced"), 0 on every
//      other real token (a drawn token equal to the original counts as original, as
//      ELECTRA's is_fake_tokens), -100 on padding.
// Draws are counter-based from (seed, step, example): resume is bit-identical. The generator
// runs on the CPU in fp32 whatever the discriminator's device.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/counter_rng.h"
#include "model/mlm_head.h"
#include "model/roberta_model.h"
#include "train/data_order.h"
#include "train/mlm_collator.h"

namespace rc::train {

inline constexpr int32_t kOriginalToken = 0, kReplacedToken = 1;

// Inverse-CDF draw from softmax(logits) restricted to ids with allowed[id] != 0, at u in
// [0, 1) (in double). At least one id must be allowed.
int32_t sample_from_logits(std::span<const float> logits, std::span<const uint8_t> allowed, double u);

class TokenReplacer {
 public:
  // generator: a masked-LM model (HeadKind::masked_lm) whose vocabulary is the
  // discriminator's; batches up to (max_B, max_T).
  TokenReplacer(std::shared_ptr<const model::RobertaModel> generator, MlmMasking masking, uint64_t seed, int64_t max_B,
                int64_t max_T);
  // Corrupts batch.ids in place (filled from split's examples `example`) for optimizer step
  // `step` (-1: the fixed held-out corruption) and writes labels (B·T) as described above.
  // Returns the number of replaced tokens.
  int64_t corrupt(int64_t step, std::span<const int64_t> example, const MlmSplit& split, PaddedBatch& batch,
                  std::vector<int32_t>& labels);

 private:
  std::shared_ptr<const model::RobertaModel> gen_;
  MlmMasking masking_;
  uint64_t seed_;
  std::vector<uint8_t> allowed_;  // per vocabulary id: may be drawn (not special)
  model::InferenceWorkspace ws_;
  model::MlmWorkspace mlm_;
  std::vector<int32_t> original_, mlm_labels_;
  std::vector<int64_t> positions_, chunk_;
  std::vector<rng::SplitMix64> streams_;  // one per row of the batch
  std::vector<float> hidden_, logits_;
};

}  // namespace rc::train
