// CUDA dropout (kernels/cuda/dropout.cu): the mask must be bit-identical to the CPU's for the
// same (seed, i) (shared RNG, core/counter_rng.h), in fp32 and bf16, including p = 0 and p = 1.
#include "kernels/dropout.h"
#include "kernels/gpu_test_util.h"

#if RC_WITH_CUDA
namespace {

using namespace rc::test::gpu;
namespace kc = rc::kernels::cuda;

TEST(DropoutGpu, SameMaskAndValuesAsCpuRef) {
  RC_REQUIRE_GPU();
  const int64_t n = 100003;
  const auto x = randn(n, 1);
  for (float p : {0.0f, 0.1f, 0.5f, 1.0f})
    for (uint64_t seed : {0ull, 77ull, 0xFFFFFFFFFFull}) {
      std::vector<float> want(n);
      rc::kernels::ref::dropout_forward(want.data(), x.data(), n, p, seed);
      auto dx = up(x);
      Dev<float> dy(n);
      rc::kernels::dropout_forward(cuda_ctx(), dy.data(), dx.data(), n, p, seed);
      const auto got = down(dy);
      ASSERT_EQ(got, want) << "p " << p << " seed " << seed;  // bitwise: same mask, same fp32 multiply

      const auto xr = round_bf16(x);
      rc::kernels::ref::dropout_forward(want.data(), xr.data(), n, p, seed);
      auto dx16 = up(to_bf16(x));
      Dev<kc::Bf16> dy16(n);
      kc::dropout_forward(dy16.data(), dx16.data(), 1, n, p, seed, 0, nullptr);
      const auto got16 = to_f32(down(dy16));
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(got16[i] == 0.0f, want[i] == 0.0f || xr[i] == 0.0f) << "mask differs at " << i;
      expect_close("dropout.bf16.p" + std::to_string(p), got16, round_bf16(want), {0, 0});
    }
}

// Rows keyed by global sample (dropout.h): a (rows, cols) tensor from sample 17 on, as the
// CPU's reference draws it.
TEST(DropoutGpu, RowKeyedMaskMatchesCpuRef) {
  RC_REQUIRE_GPU();
  const int64_t rows = 5, cols = 3 * 768 + 1, n = rows * cols;
  const auto x = randn(n, 3);
  std::vector<float> want(n);
  rc::kernels::ref::dropout_forward(want.data(), x.data(), rows, cols, 0.1f, 42, 17);
  auto dx = up(x);
  Dev<float> dy(n);
  rc::kernels::dropout_forward(cuda_ctx(), dy.data(), dx.data(), rows, cols, 0.1f, 42, 17);
  EXPECT_EQ(down(dy), want);
}

TEST(DropoutGpu, InPlaceWorks) {
  RC_REQUIRE_GPU();
  const int64_t n = 5000;
  const auto x = randn(n, 2);
  std::vector<float> want(n);
  rc::kernels::ref::dropout_forward(want.data(), x.data(), n, 0.3f, 9);
  auto d = up(x);
  rc::kernels::dropout_forward(cuda_ctx(), d.data(), d.data(), n, 0.3f, 9);
  EXPECT_EQ(down(d), want);
}

}  // namespace
#else
TEST(DropoutGpu, NotBuilt) { GTEST_SKIP() << "built without RC_WITH_CUDA"; }
#endif
