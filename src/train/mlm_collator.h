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
//
// Whole-word masking (--whole-word-mask) is DataCollatorForWholeWordMask's instead: a row's
// words are shuffled and taken whole, skipping any that would overshoot, until
// max(1, round(len · mlm_probability)) tokens are chosen (len counts <s> and </s>, as HF's does),
// then each chosen token gets the 80/10/10 above. HF finds words by WordPiece's "##"
// continuation marks only (for other tokenizers every token is a word); here a word is what
// whitespace delimits in the text, from the tokenizer's offsets: the pre-tokenizer's words for
// SentencePiece (Metaspace) tokenizers, and a word with its attached punctuation for BERT and
// byte-level BPE. Special tokens are never candidates (HF's, for a non-BERT tokenizer, are,
// and then go unmasked: a smaller share masked for the same probability).
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

// Whole-word masking's word boundaries for mlm_examples(tok, texts, max_length, group_texts):
// one flag per id of its split, 1 where a token begins a word (the first token after a special
// one or after a gap in the text's offsets, and the first of a block), 0 where it continues
// the word before it. Throws internal if the tokenizer's offsets encoding disagrees with the split.
std::vector<uint8_t> mlm_word_starts(const Tokenizer& tok, std::span<const std::string> texts, int max_length,
                                     bool group_texts, const TokenizedSplit& split);

// A split's examples and, for whole-word masking, mlm_word_starts' flags (empty: token masking).
struct MlmSplit {
  TokenizedSplit examples;
  std::vector<uint8_t> word_starts;
};

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

// The same with whole words: word_starts is mlm_word_starts' flags for `split`, the split the
// batch was filled from (row b is split's example[b]).
int64_t mask_batch_whole_words(const MlmMasking& m, uint64_t seed, int64_t step, std::span<const int64_t> example,
                               const TokenizedSplit& split, std::span<const uint8_t> word_starts, PaddedBatch& batch,
                               std::vector<int32_t>& labels);

// mask_batch_whole_words when split has word starts, else mask_batch.
int64_t mask_split_batch(const MlmMasking& m, uint64_t seed, int64_t step, std::span<const int64_t> example,
                         const MlmSplit& split, PaddedBatch& batch, std::vector<int32_t>& labels);

}  // namespace rc::train
