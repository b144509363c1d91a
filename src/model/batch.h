// A right-padded batch of token ids, as callers hand it to the model: host memory. The
// forward passes copy it to the context's device once per call (workspace-owned buffers).
#pragma once

#include <cstdint>

#include "model/roberta_config.h"

namespace rc::model {

// seq_lens[b] real tokens in row b (≥ 1).
struct Batch {
  int64_t B = 0, T = 0;
  const int32_t* ids = nullptr;          // (B, T)
  const int32_t* seq_lens = nullptr;     // (B)
  const int32_t* token_types = nullptr;  // (B, T) or null → 0
};

// Checks ids against the vocabulary, lengths against T and the model limit. Throws
// rc::Error(invalid_argument) — batches can come from users.
void validate_batch(const RobertaConfig& config, const Batch& batch);

}  // namespace rc::model
