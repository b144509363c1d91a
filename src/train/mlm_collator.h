// Masked-language-model data, as transformers' run_mlm.py prepares it:
//   - line by line: each text one example, truncated to max_length (<s> … </s> kept);
//   - group_texts: every text tokenized whole (<s> … </s> each), concatenated, the remainder
//     that does not fill a block dropped, cut into blocks of max_length.
// and DataCollatorForLanguageModeling's masking of a batch: each token that is not special
// (<s> </s> <pad> <unk> <mask>: the tokenizer's all_special_ids) is chosen with probability
// mlm_probability (0.15); a chosen token's label is its id (others -100) and its input becomes
// <mask> with p 0.8, a uniformly random id in [0, len(tokenizer)) with p 0.1, else stays.
// Draws are counter-based from (seed, step, example): the same example is masked anew at
// every step that sees it (each epoch), identically on resume and on any thread count.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "roberta/tokenizer.h"
#include "train/data_order.h"

namespace rc::train {

// Examples for masked-LM training (labels unused: 0). group_texts as described above.
TokenizedSplit mlm_examples(const Tokenizer& tok, std::span<const std::string> texts, int max_length, bool group_texts);

struct MlmMasking {
  double mlm_probability = 0.15;
  int32_t mask_id = 50264;
  int64_t random_vocab = 50265;      // len(tokenizer): random replacements are drawn below it
  std::vector<int32_t> special_ids;  // never masked
  static MlmMasking for_tokenizer(const Tokenizer& tok, double mlm_probability);
};

// Masks batch.ids in place and writes labels (B·T; -100 unmasked and padding). example[b] is
// the dataset index of row b. Returns the number of masked tokens.
int64_t mask_batch(const MlmMasking& m, uint64_t seed, int64_t step, std::span<const int64_t> example,
                   PaddedBatch& batch, std::vector<int32_t>& labels);

}  // namespace rc::train
