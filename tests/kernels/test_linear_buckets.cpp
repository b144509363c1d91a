// Row buckets of the packed Linear (cpu_kernels.h): many (batch, length) shapes create no
// more oneDNN primitives than there are buckets, and the bucketed results are those of the
// exact-M primitives (bit for bit: rows are independent in a GEMM, padding rows are dropped).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include "kernel_test_util.h"
#include "device/cpu_isa.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/linear.h"

namespace rc::kernels {
namespace {

using test::randn;

TEST(LinearBuckets, BucketSizes) {
  EXPECT_EQ(cpu::linear_row_bucket(1), 1);
  EXPECT_EQ(cpu::linear_row_bucket(3), 4);
  EXPECT_EQ(cpu::linear_row_bucket(33), 64);
  EXPECT_EQ(cpu::linear_row_bucket(64), 64);
  EXPECT_EQ(cpu::linear_row_bucket(65), 128);
  EXPECT_EQ(cpu::linear_row_bucket(130), 192);
  EXPECT_EQ(cpu::linear_row_bucket(512), 512);
  std::set<int64_t> buckets;
  for (int64_t r = 1; r <= 512; ++r) {
    const int64_t b = cpu::linear_row_bucket(r);
    EXPECT_GE(b, r);
    EXPECT_LE(b, r <= 64 ? 2 * r : r + 63) << r;  // padding bounded
    buckets.insert(b);
  }
  EXPECT_EQ(buckets.size(), 14u);
}

// Every (batch, length) a server or predict() can produce at batch ≤ 32 × length ≤ 64, and a
// few large ones (chunks of 512 / 256 plus a remainder).
std::vector<int64_t> many_rows() {
  std::set<int64_t> s;
  for (int64_t B = 1; B <= 32; B += 4)
    for (int64_t T = 1; T <= 64; T += 7) s.insert(B * T);
  for (int64_t M : {513, 1000, 2048, 2049, 3000}) s.insert(M);
  return {s.begin(), s.end()};
}

class LinearBucketsPerType : public ::testing::TestWithParam<PackedType> {};

TEST_P(LinearBucketsPerType, FewPrimitivesSameResultsAsExactShapes) {
  const PackedType type = GetParam();
  const int64_t N = 48, K = 64;
  const auto w = randn(N * K, 1), bias = randn(N, 2);
  const PackedLinear p = PackedLinear::pack(w.data(), N, K, type);
  if (!p.uses_onednn()) GTEST_SKIP() << "this CPU runs this type on the portable loops (no primitives)";
  const auto rows = many_rows();
  const int64_t maxM = rows.back();
  const auto x = randn(maxM * K, 3);
  std::vector<float> y(size_t(maxM * N)), want(size_t(maxM * N));
  const ExecCtx ctx;
  const PackedLinear exact = PackedLinear::pack(w.data(), N, K, type);  // runs exact-M primitives
  // oneDNN's AVX-512 / AMX kernels compute each row alike whatever M (measured bit for bit);
  // its AVX2 fp32 sgemm picks other blockings for small M (M = 9 vs its bucket 16 differ in
  // the last bits on AMD Zen 3), so there the rows must agree to rounding only.
  const bool batch_invariant = cpu_isa() >= CpuIsa::avx512;
  double worst = 0.0;
  for (const Epilogue ep : {Epilogue::none, Epilogue::gelu_erf})
    for (int64_t M : rows) {
      linear_forward(ctx, y.data(), x.data(), p, bias.data(), M, ep);
      cpu::set_linear_row_buckets(false);
      linear_forward(ctx, want.data(), x.data(), exact, bias.data(), M, ep);
      cpu::set_linear_row_buckets(true);
      if (batch_invariant) {
        ASSERT_EQ(std::memcmp(y.data(), want.data(), size_t(M * N) * sizeof(float)), 0)
            << "M=" << M << ": bucketed rows differ from the exact-M primitive's";
      } else {
        for (int64_t i = 0; i < M * N; ++i)
          worst =
              std::max(worst, double(std::fabs(y[size_t(i)] - want[size_t(i)])) / (1.0 + std::fabs(want[size_t(i)])));
      }
    }
  EXPECT_LE(worst, 1e-5) << "bucketed rows vs exact-M rows, |Δ| / (1 + |y|)";  // measured 3.8e-6 (Zen 3)
  std::printf("worst bucketed-vs-exact difference: %.3g\n", worst);
  // 14 buckets per epilogue (int8: its epilogue is ours, one set), whatever the shapes.
  const size_t limit = type == PackedType::s8 ? 14 : 28;
  EXPECT_LE(cpu::linear_primitive_count(p), limit) << rows.size() << " distinct M";
  EXPECT_GE(cpu::linear_primitive_count(p), 8u) << "the count must come from the cache (the test can fail)";
}

INSTANTIATE_TEST_SUITE_P(Types, LinearBucketsPerType,
                         ::testing::Values(PackedType::f32, PackedType::bf16, PackedType::s8));

TEST(LinearBuckets, WithoutBucketsEveryShapeMakesItsOwnPrimitive) {
  // The counter the test above relies on counts what it should: exact shapes grow it.
  const int64_t N = 16, K = 32;
  const auto w = randn(N * K, 4);
  const PackedLinear p = PackedLinear::pack(w.data(), N, K, PackedType::f32);
  if (!p.uses_onednn()) GTEST_SKIP();
  const auto x = randn(100 * K, 5);
  std::vector<float> y(size_t(100 * N));
  cpu::set_linear_row_buckets(false);
  for (int64_t M = 33; M <= 63; ++M) linear_forward(ExecCtx{}, y.data(), x.data(), p, nullptr, M, Epilogue::none);
  cpu::set_linear_row_buckets(true);
  EXPECT_EQ(cpu::linear_primitive_count(p), 31u);
}

}  // namespace
}  // namespace rc::kernels
