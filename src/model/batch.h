// A right-padded batch of token ids, as callers hand it to the model: host memory. The
// forward passes copy it to the context's device once per call (workspace-owned buffers).
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "model/roberta_config.h"

namespace rc::model {

// seq_lens[b] real tokens in row b (≥ 1).
struct Batch {
  int64_t B = 0, T = 0;
  const int32_t* ids = nullptr;          // (B, T)
  const int32_t* seq_lens = nullptr;     // (B)
  const int32_t* token_types = nullptr;  // (B, T) or null → 0
  // Training only: the global index of row 0 within the step's batch (rows follow on), the
  // row key of the dropout masks (kernels/dropout.h), so a sample's masks do not depend on
  // which micro-batch or rank it lands in.
  uint64_t first_sample = 0;
};

// Checks ids against the vocabulary, lengths against T and the model limit. Throws
// rc::Error(invalid_argument) — batches can come from users.
void validate_batch(const RobertaConfig& config, const Batch& batch);

// Rows 0..n-1 ordered by length, stable: the batching order of every many-row forward
// (Classifier::predict, the trainer's evaluation). Consecutive rows then have similar lengths,
// so a batch pads only to its own longest row and short texts do not pay for long ones.
template <typename LengthOf>
std::vector<size_t> length_sorted_order(size_t n, LengthOf length_of) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return length_of(a) < length_of(b); });
  return order;
}

}  // namespace rc::model
