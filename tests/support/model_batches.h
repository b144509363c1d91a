// Random padded batches and their logits through the inference forward, for model tests that
// compare weight formats or load routes on the same inputs.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "model/roberta_model.h"

namespace rc::test {

struct Ids {
  std::vector<int32_t> ids, lens;
  int64_t B, T;
};

// Random rows of random lengths in [2, T] (the first row full), <s> … </s>, padded with
// pad_token_id.
inline Ids random_batch(const model::RobertaConfig& c, int64_t B, int64_t T, uint64_t seed) {
  std::mt19937 rng{uint32_t(seed)};
  std::uniform_int_distribution<int32_t> tok(3, int32_t(c.vocab_size) - 1);
  std::uniform_int_distribution<int32_t> len(2, int32_t(T));
  Ids r{std::vector<int32_t>(size_t(B * T), c.pad_token_id), std::vector<int32_t>(size_t(B)), B, T};
  for (int64_t b = 0; b < B; ++b) {
    const int32_t n = b == 0 ? int32_t(T) : len(rng);
    r.lens[size_t(b)] = n;
    for (int32_t t = 0; t < n; ++t) r.ids[size_t(b * T + t)] = tok(rng);
    r.ids[size_t(b * T)] = c.bos_token_id;
    r.ids[size_t(b * T + n - 1)] = c.eos_token_id;
  }
  return r;
}

// The model's logits (B × num_labels) for a batch, in whatever weight format it holds.
inline std::vector<float> batch_logits(const model::RobertaModel& m, const Ids& in) {
  model::InferenceWorkspace ws(m.config(), in.B, in.T);
  std::vector<float> out(size_t(in.B * m.config().num_labels()));
  model::forward_logits({}, m, model::Batch{in.B, in.T, in.ids.data(), in.lens.data(), nullptr}, ws, out.data());
  return out;
}

}  // namespace rc::test
