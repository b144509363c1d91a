// Tokenization, epoch order and batch padding (see data_order.h).
#include "train/data_order.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"
#include "core/counter_rng.h"

namespace rc::train {

int32_t TokenizedSplit::max_length() const {
  return lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
}

TokenizedSplit tokenize_split(const Tokenizer& tok, std::span<const std::string> texts, std::span<const int32_t> labels,
                              int max_length, std::span<const std::string> text_pairs) {
  RC_ASSERT(texts.size() == labels.size());
  RC_ASSERT(text_pairs.empty() || text_pairs.size() == texts.size());
  const int64_t n = int64_t(texts.size());
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(n)), types(text_pairs.empty() ? 0 : size_t(n));
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t i = 0; i < n; ++i) {
    if (text_pairs.empty()) {
      rows[size_t(i)] = tok.encode(texts[size_t(i)], true, max_length);
    } else {
      PairEncoding e = tok.encode_pair_with_types(texts[size_t(i)], text_pairs[size_t(i)], max_length);
      rows[size_t(i)] = std::move(e.ids);
      types[size_t(i)] = std::move(e.type_ids);
    }
  }
  TokenizedSplit out;
  out.offsets.resize(size_t(n) + 1);
  out.lengths.resize(size_t(n));
  out.labels.assign(labels.begin(), labels.end());
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    out.offsets[size_t(i)] = total;
    out.lengths[size_t(i)] = int32_t(rows[size_t(i)].size());
    total += int64_t(rows[size_t(i)].size());
  }
  out.offsets[size_t(n)] = total;
  out.ids.reserve(size_t(total));
  for (auto& r : rows) out.ids.insert(out.ids.end(), r.begin(), r.end());
  // All-zero types (RoBERTa's pairs) are the default the batch gives anyway: not stored.
  const bool typed = std::any_of(types.begin(), types.end(), [](const std::vector<int32_t>& t) {
    return std::any_of(t.begin(), t.end(), [](int32_t v) { return v != 0; });
  });
  if (typed) {
    out.token_types.reserve(size_t(total));
    for (auto& t : types) out.token_types.insert(out.token_types.end(), t.begin(), t.end());
  }
  return out;
}

uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c) {
  auto mix = [](uint64_t z) { return rng::finalize(z + rng::kGolden); };
  return mix(mix(mix(a) ^ b) ^ c);
}

namespace {
using Rng = rng::SplitMix64;
template <class It>
void fisher_yates(It first, It last, Rng& rng) {
  const int64_t n = last - first;
  for (int64_t i = n - 1; i > 0; --i) std::swap(first[i], first[int64_t(rng.below(uint64_t(i + 1)))]);
}
}  // namespace

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle, bool group_by_length,
                                 std::span<const int32_t> lengths, int64_t batch_size) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle && !group_by_length) return order;
  Rng rng{mix_seed(seed, 0x0D47A0DE5ull, uint64_t(epoch))};
  if (shuffle) fisher_yates(order.begin(), order.end(), rng);
  if (!group_by_length) return order;
  RC_ASSERT(int64_t(lengths.size()) == n && batch_size > 0);
  const int64_t mega = 50 * batch_size;
  std::vector<int64_t> out;
  out.reserve(size_t(n));
  for (int64_t start = 0; start < n; start += mega) {
    const int64_t end = std::min(n, start + mega);
    std::stable_sort(order.begin() + start, order.begin() + end,
                     [&](int64_t a, int64_t b) { return lengths[size_t(a)] > lengths[size_t(b)]; });
    // Batches of similar length, in a shuffled order within the megabatch.
    std::vector<int64_t> batch_starts;
    for (int64_t b = start; b < end; b += batch_size) batch_starts.push_back(b);
    if (shuffle) fisher_yates(batch_starts.begin(), batch_starts.end(), rng);
    for (int64_t b : batch_starts)
      for (int64_t i = b; i < std::min(end, b + batch_size); ++i) out.push_back(order[size_t(i)]);
  }
  return out;
}

void PaddedBatch::reserve(int64_t max_B, int64_t max_T, int64_t target_width) {
  targets.reserve(size_t(max_B * target_width));
  ids.reserve(size_t(max_B * max_T));
  seq_lens.reserve(size_t(max_B));
  labels.reserve(size_t(max_B));
  token_types.reserve(size_t(max_B * max_T));
}

void fill_batch(const TokenizedSplit& split, std::span<const int64_t> idx, int32_t pad_id, PaddedBatch& out) {
  out.B = int64_t(idx.size());
  out.T = 0;
  out.tokens = 0;
  for (int64_t i : idx) out.T = std::max<int64_t>(out.T, split.lengths[size_t(i)]);
  // resize() within the reserved capacity: no allocation in the training loop.
  out.ids.resize(size_t(out.B * out.T));
  out.seq_lens.resize(size_t(out.B));
  out.labels.resize(size_t(out.B));
  const int64_t W = split.target_width;
  out.targets.resize(size_t(out.B * W));
  const bool typed = !split.token_types.empty();
  out.token_types.resize(typed ? size_t(out.B * out.T) : 0);
  for (int64_t b = 0; b < out.B; ++b) {
    const int64_t i = idx[size_t(b)];
    const int32_t len = split.lengths[size_t(i)];
    const int32_t* src = split.ids.data() + split.offsets[size_t(i)];
    int32_t* dst = out.ids.data() + b * out.T;
    std::copy(src, src + len, dst);
    std::fill(dst + len, dst + out.T, pad_id);
    if (typed) {
      const int32_t* types = split.token_types.data() + split.offsets[size_t(i)];
      int32_t* types_dst = out.token_types.data() + b * out.T;
      std::copy(types, types + len, types_dst);
      std::fill(types_dst + len, types_dst + out.T, 0);
    }
    out.seq_lens[size_t(b)] = len;
    out.labels[size_t(b)] = split.labels[size_t(i)];
    std::copy_n(split.targets.data() + i * W, W, out.targets.data() + b * W);
    out.tokens += len;
  }
}

}  // namespace rc::train
