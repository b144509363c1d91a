// What the trainer feeds the model, and in which order.
//   - TokenizedSplit: every example tokenized once (truncated to max_length, <s> </s> kept),
//     ids packed back to back.
//   - epoch_order: the example order of one epoch, a pure function of (seed, epoch) — so a
//     resumed run recomputes exactly the order an uninterrupted run used. Shuffling is our
//     own Fisher–Yates on splitmix64 (std::shuffle's algorithm is implementation-defined).
//     --group-by-length: megabatches of 50 batches (HF's LengthGroupedSampler) sorted by
//     length, cut into batches, and the batches shuffled within each megabatch.
//   - PaddedBatch: dynamic padding to the longest row of each batch; its buffers are sized
//     once for the largest batch, so filling one never allocates.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "roberta/tokenizer.h"

namespace rc::train {

struct TokenizedSplit {
  std::vector<int32_t> ids;      // all examples back to back
  std::vector<int64_t> offsets;  // (N + 1)
  std::vector<int32_t> lengths;  // (N)
  std::vector<int32_t> labels;   // (N)
  // Empty: every token type 0 (single texts; pairs of a tokenizer that types both texts 0, as
  // RoBERTa's). Else one per id, at the same offsets (BERT's pairs: 1 for the second text).
  std::vector<int32_t> token_types;
  // Multi-label and regression: target_width float targets per example (N · width), row
  // order as the examples; empty (width 0) for single-label classification.
  std::vector<float> targets;
  int64_t target_width = 0;
  int64_t size() const { return int64_t(lengths.size()); }
  int32_t max_length() const;
};

// Tokenizes texts in parallel (OpenMP); the result does not depend on the thread count.
// With text_pairs (one per text) each example is HF's tokenizer(text, text_pair), its
// token_type_ids kept when any is not 0.
TokenizedSplit tokenize_split(const Tokenizer& tok, std::span<const std::string> texts, std::span<const int32_t> labels,
                              int max_length, std::span<const std::string> text_pairs = {});

// splitmix64 finaliser of a combination of values: the seed of every derived stream.
uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c = 0);

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle, bool group_by_length,
                                 std::span<const int32_t> lengths, int64_t batch_size);

struct PaddedBatch {
  int64_t B = 0, T = 0, tokens = 0;  // tokens: real (unpadded) tokens
  std::vector<int32_t> ids, seq_lens, labels;
  std::vector<int32_t> token_types;  // (B · T) when the split has token types, padded with 0; else empty
  std::vector<float> targets;        // (B · width) when the split has float targets
  void reserve(int64_t max_B, int64_t max_T, int64_t target_width = 0);
};

// Rows `idx` of `split`, right-padded with pad_id to the longest of them (token types, when
// the split has them, with 0: DataCollatorWithPadding pads token_type_ids with
// pad_token_type_id, 0).
void fill_batch(const TokenizedSplit& split, std::span<const int64_t> idx, int32_t pad_id, PaddedBatch& out);

}  // namespace rc::train
