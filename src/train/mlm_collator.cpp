// Masked-LM examples and masking (see mlm_collator.h).
#include "train/mlm_collator.h"

#include <algorithm>

#include "core/check.h"
#include "core/counter_rng.h"

namespace rc::train {

TokenizedSplit mlm_examples(const Tokenizer& tok, std::span<const std::string> texts, int max_length,
                            bool group_texts) {
  RC_CHECK(max_length >= 3, Errc::invalid_argument, "--max-length must be >= 3, got ", max_length);
  const std::vector<int32_t> no_labels(texts.size(), 0);
  if (!group_texts) return tokenize_split(tok, texts, no_labels, max_length);
  const TokenizedSplit whole = tokenize_split(tok, texts, no_labels, 0);
  const int64_t blocks = int64_t(whole.ids.size()) / max_length;  // run_mlm drops the remainder
  RC_CHECK(blocks > 0, Errc::invalid_argument, "--group-texts: the data has ", whole.ids.size(),
           " tokens, fewer than one block of ", max_length, "\nHINT: lower --max-length or add data");
  TokenizedSplit out;
  out.ids.assign(whole.ids.begin(), whole.ids.begin() + blocks * max_length);
  out.offsets.resize(size_t(blocks) + 1);
  for (int64_t i = 0; i <= blocks; ++i) out.offsets[size_t(i)] = i * max_length;
  out.lengths.assign(size_t(blocks), max_length);
  out.labels.assign(size_t(blocks), 0);
  return out;
}

MlmMasking MlmMasking::for_tokenizer(const Tokenizer& tok, double p) {
  RC_CHECK(p > 0 && p < 1, Errc::invalid_argument, "--mlm-probability must be in (0, 1), got ", p);
  MlmMasking m;
  m.mlm_probability = p;
  m.mask_id = tok.mask_id();
  m.random_vocab = tok.vocab_size();
  m.special_ids = {tok.bos_id(), tok.eos_id(), tok.pad_id(), tok.unk_id(), tok.mask_id()};
  return m;
}

namespace {

// Uniform [0, 1) from a splitmix64 stream: 53 random bits.
struct Stream : rng::SplitMix64 {
  double uniform() { return uniform53(); }
};

}  // namespace

int64_t mask_batch(const MlmMasking& m, uint64_t seed, int64_t step, std::span<const int64_t> example,
                   PaddedBatch& batch, std::vector<int32_t>& labels) {
  RC_ASSERT(int64_t(example.size()) == batch.B);
  const int64_t T = batch.T;
  labels.assign(size_t(batch.B * T), -100);
  int64_t masked = 0;
  for (int64_t b = 0; b < batch.B; ++b) {
    // One stream per (seed, step, example); its draws per token in order: chosen?, then
    // <mask>?, then random?, then the random id. Every token draws all four, so a row's
    // masks do not depend on its padding.
    Stream rng{mix_seed(seed ^ 0x6D6C6D5F6D61736Bull, uint64_t(step), uint64_t(example[size_t(b)]))};
    for (int64_t t = 0; t < batch.seq_lens[size_t(b)]; ++t) {
      int32_t& id = batch.ids[size_t(b * T + t)];
      const bool chosen = rng.uniform() < m.mlm_probability;
      const bool to_mask = rng.uniform() < 0.8;
      const bool to_random = rng.uniform() < 0.5;
      const int32_t random_id = int32_t(rng.next() % uint64_t(m.random_vocab));
      if (!chosen || std::find(m.special_ids.begin(), m.special_ids.end(), id) != m.special_ids.end()) continue;
      labels[size_t(b * T + t)] = id;
      ++masked;
      if (to_mask)
        id = m.mask_id;
      else if (to_random)
        id = random_id;
    }
  }
  return masked;
}

}  // namespace rc::train
