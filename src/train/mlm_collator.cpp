// Masked-LM examples and masking (see mlm_collator.h).
#include "train/mlm_collator.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/counter_rng.h"
#include "core/utf8.h"
#include "tokenizer/pipeline/normalized.h"
#include "tokenizer/utf8.h"

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

namespace {

// The text's code points, after the repair encode() makes (offsets count these).
std::vector<uint32_t> repaired_code_points(std::string_view text) {
  if (is_valid_utf8(text)) return tokenizer::pipeline::code_points(text);
  return tokenizer::pipeline::code_points(repair_utf8(text));
}

// One text's flags (see mlm_word_starts): a token begins a word after a special token, after a
// gap in the offsets (trimmed whitespace between), or when it covers whitespace itself
// (SentencePiece's bare "▁" piece holds the space before a word it could not merge with).
std::vector<uint8_t> text_word_starts(const OffsetsEncoding& e, std::string_view text) {
  const std::vector<uint32_t> cps = repaired_code_points(text);
  std::vector<uint8_t> flags(e.ids.size(), 1);
  bool after_word = false;
  int32_t prev_end = 0;
  for (size_t t = 0; t < e.ids.size(); ++t) {
    if (e.special_tokens_mask[t]) {
      after_word = false;
      continue;
    }
    const TokenOffset o = e.offsets[t];
    const bool covers_space =
        o.start < int32_t(cps.size()) && o.start < o.end && tokenizer::is_unicode_whitespace(cps[size_t(o.start)]);
    flags[t] = !after_word || o.start > prev_end || covers_space;
    after_word = true;
    prev_end = std::max(prev_end, o.end);
  }
  return flags;
}

}  // namespace

std::vector<uint8_t> mlm_word_starts(const Tokenizer& tok, std::span<const std::string> texts, int max_length,
                                     bool group_texts, const TokenizedSplit& split) {
  const int64_t n = int64_t(texts.size());
  std::vector<std::vector<uint8_t>> rows(static_cast<size_t>(n));
  std::vector<uint8_t> agrees(size_t(n), 1);
  const int64_t* offsets = split.offsets.data();
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t i = 0; i < n; ++i) {
    const std::string& text = texts[size_t(i)];
    const OffsetsEncoding e = tok.encode_with_offsets(text, group_texts ? 0 : max_length);
    rows[size_t(i)] = text_word_starts(e, text);
    if (!group_texts)  // line by line: row i is example i
      agrees[size_t(i)] =
          std::equal(e.ids.begin(), e.ids.end(), split.ids.begin() + offsets[i], split.ids.begin() + offsets[i + 1]) &&
          int64_t(e.ids.size()) == offsets[i + 1] - offsets[i];
  }
  std::vector<uint8_t> flags;
  flags.reserve(split.ids.size());
  for (auto& r : rows) flags.insert(flags.end(), r.begin(), r.end());
  const bool same = std::all_of(agrees.begin(), agrees.end(), [](uint8_t a) { return a != 0; });
  RC_CHECK(same && flags.size() >= split.ids.size() && (group_texts || flags.size() == split.ids.size()),
           Errc::internal, "whole-word masking: the tokenizer's offsets encoding disagrees with its encode()");
  flags.resize(split.ids.size());  // group_texts: the remainder that fills no block is dropped
  // Each block begins a word (nothing before it in its row).
  if (group_texts)
    for (int64_t b = 0; b < split.size(); ++b) flags[size_t(split.offsets[size_t(b)])] = 1;
  return flags;
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

bool is_special(const MlmMasking& m, int32_t id) {
  return std::find(m.special_ids.begin(), m.special_ids.end(), id) != m.special_ids.end();
}

// DataCollatorForLanguageModeling's 80/10/10 for one token: <mask>?, random?, the random id.
// The three draws are made whether or not the token is chosen, so a row's masks do not
// depend on its padding. A chosen token is labelled with its id, then replaced.
bool mask_token(Stream& rng, const MlmMasking& m, bool chosen, int32_t& id, int32_t& label) {
  const bool to_mask = rng.uniform() < 0.8;
  const bool to_random = rng.uniform() < 0.5;
  const int32_t random_id = int32_t(rng.next() % uint64_t(m.random_vocab));
  if (!chosen) return false;
  label = id;
  if (to_mask)
    id = m.mask_id;
  else if (to_random)
    id = random_id;
  return true;
}

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
      const bool chosen = rng.uniform() < m.mlm_probability && !is_special(m, id);
      masked += mask_token(rng, m, chosen, id, labels[size_t(b * T + t)]);
    }
  }
  return masked;
}

int64_t mask_batch_whole_words(const MlmMasking& m, uint64_t seed, int64_t step, std::span<const int64_t> example,
                               const TokenizedSplit& split, std::span<const uint8_t> word_starts, PaddedBatch& batch,
                               std::vector<int32_t>& labels) {
  RC_ASSERT(int64_t(example.size()) == batch.B && word_starts.size() == split.ids.size());
  const int64_t T = batch.T;
  labels.assign(size_t(batch.B * T), -100);
  int64_t masked = 0;
  std::vector<std::pair<int32_t, int32_t>> words;  // [first, end) token ranges
  std::vector<uint8_t> chosen;
  for (int64_t b = 0; b < batch.B; ++b) {
    const int64_t ex = example[size_t(b)];
    const int64_t len = batch.seq_lens[size_t(b)];
    RC_ASSERT(ex >= 0 && ex < split.size() && len == split.lengths[size_t(ex)]);
    const uint8_t* starts = word_starts.data() + split.offsets[size_t(ex)];
    int32_t* ids = batch.ids.data() + b * T;
    words.clear();
    for (int32_t t = 0; t < int32_t(len); ++t) {
      if (is_special(m, ids[t])) continue;
      if (starts[t] || words.empty() || words.back().second != t)
        words.push_back({t, t + 1});
      else
        words.back().second = t + 1;
    }
    Stream rng{mix_seed(seed ^ 0x77776D5F6D61736Bull, uint64_t(step), uint64_t(ex))};
    for (size_t i = words.size(); i > 1; --i) std::swap(words[i - 1], words[size_t(rng.below(i))]);
    // HF: min(max_predictions=512, max(1, int(round(len(input_tokens) * mlm_probability))))
    // (Python's round: half to even, as std::nearbyint in the default rounding mode).
    const int64_t budget =
        std::min<int64_t>(512, std::max<int64_t>(1, int64_t(std::nearbyint(double(len) * m.mlm_probability))));
    chosen.assign(size_t(len), 0);
    int64_t taken = 0;
    for (const auto& [first, end] : words) {
      if (taken >= budget) break;
      if (taken + (end - first) > budget) continue;
      for (int32_t t = first; t < end; ++t) chosen[size_t(t)] = 1;
      taken += end - first;
    }
    // Then the 80/10/10, per token in order.
    for (int64_t t = 0; t < len; ++t)
      masked += mask_token(rng, m, chosen[size_t(t)] != 0, ids[t], labels[size_t(b * T + t)]);
  }
  return masked;
}

int64_t mask_split_batch(const MlmMasking& m, uint64_t seed, int64_t step, std::span<const int64_t> example,
                         const MlmSplit& split, PaddedBatch& batch, std::vector<int32_t>& labels) {
  if (split.word_starts.empty()) return mask_batch(m, seed, step, example, batch, labels);
  return mask_batch_whole_words(m, seed, step, example, split.examples, split.word_starts, batch, labels);
}

}  // namespace rc::train
