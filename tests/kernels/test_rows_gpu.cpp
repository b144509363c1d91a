// rows.h on CUDA (kernels/cuda/rows.cu) through the public ops with Device::cuda, against
// the ref twins. Integer and copy ops must be exact; the mean accumulates in double and
// rounds once, so it matches the double-accumulating ref to the last bit.
#include "kernels/gpu_test_util.h"
#include "kernels/rows.h"

#if RC_WITH_CUDA
namespace {

using namespace rc::test::gpu;
namespace k = rc::kernels;

TEST(RowsGpu, PositionIdsGatherScatterMeanMatchRef) {
  RC_REQUIRE_GPU();
  for (auto [B, T, C] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 4}, {3, 5, 7}, {32, 128, 768}}) {
    std::mt19937 rng(uint32_t(B * T));
    std::vector<int32_t> ids(size_t(B * T), 1);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = 1 + int64_t(rng() % uint32_t(T));
      for (int64_t t = 0; t < len; ++t) ids[size_t(b * T + t)] = int32_t(3 + rng() % 50000);
    }
    std::vector<int32_t> pos(ids.size());
    k::ref::position_ids(pos.data(), ids.data(), B, T, 1);
    auto dids = up(ids);
    Dev<int32_t> dpos(ids.size());
    k::position_ids(cuda_ctx(), dpos.data(), dids.data(), B, T, 1);
    EXPECT_EQ(down(dpos), pos);

    const auto src = randn(B * T * C, 5);
    std::vector<float> g(size_t(B * C)), s(size_t(B * T * C));
    k::ref::gather_first_tokens(g.data(), src.data(), B, T, C);
    k::ref::scatter_first_tokens(s.data(), g.data(), B, T, C);
    auto dsrc = up(src);
    Dev<float> dg(size_t(B * C)), ds(size_t(B * T * C));
    k::gather_first_tokens(cuda_ctx(), dg.data(), dsrc.data(), B, T, C);
    k::scatter_first_tokens(cuda_ctx(), ds.data(), dg.data(), B, T, C);
    const std::string tag = std::to_string(B) + "x" + std::to_string(T) + "x" + std::to_string(C);
    expect_close("gather_first." + tag, down(dg), g, {0, 0});
    expect_close("scatter_first." + tag, down(ds), s, {0, 0});

    float want = 0;
    k::ref::mean_forward(&want, src.data(), B * T * C);
    Dev<float> dm(1);
    k::mean_forward(cuda_ctx(), dm.data(), dsrc.data(), B * T * C);
    // Both sum in double (different order) and round once: equal unless the sums straddle
    // a float rounding boundary; 1 ulp-scale bound.
    expect_close("mean." + tag, down(dm), {want}, {1e-7, 1e-6});
  }
}

TEST(RowsGpu, GatherAndScatterRowsByIndexMatchRef) {
  RC_REQUIRE_GPU();
  const int64_t rows = 4096, C = 768;
  std::vector<int64_t> index;
  for (int64_t r = rows - 1; r >= 0; r -= 7) index.push_back(r);  // distinct, descending
  const int64_t M = int64_t(index.size());
  const auto src = randn(rows * C, 9);
  std::vector<float> g(size_t(M * C)), s(size_t(rows * C), 0.0f);
  k::ref::gather_rows(g.data(), src.data(), index.data(), M, C);
  k::ref::scatter_rows(s.data(), g.data(), index.data(), M, C);
  auto dsrc = up(src);
  auto dindex = up(index);
  Dev<float> dg(size_t(M * C));
  auto ds = up(std::vector<float>(size_t(rows * C), 0.0f));
  k::gather_rows(cuda_ctx(), dg.data(), dsrc.data(), dindex.data(), M, C);
  k::scatter_rows(cuda_ctx(), ds.data(), dg.data(), dindex.data(), M, C);
  expect_close("gather_rows", down(dg), g, {0, 0});
  expect_close("scatter_rows", down(ds), s, {0, 0});
}

}  // namespace
#else
TEST(RowsGpu, NotBuilt) { GTEST_SKIP() << "built without RC_WITH_CUDA"; }
#endif
