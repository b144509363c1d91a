// PackedLinear / linear_forward: fp32 and bf16 packed weights vs the reference (with bias and
// the exact-erf GELU epilogue), many M per object, and concurrent calls from several threads.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/activation.h"
#include "kernels/linear.h"
#include "kernels/matmul.h"
#include "roberta/error.h"
#include "tensor/bf16.h"

namespace rc::kernels {
namespace {

using test::randn;

std::vector<float> round_bf16(std::vector<float> v) {
  for (auto& x : v) x = bf16_to_f32(f32_to_bf16(x));
  return v;
}

std::vector<float> reference(const std::vector<float>& x, const std::vector<float>& w, const float* bias, int64_t M,
                             int64_t N, int64_t K, bool gelu) {
  std::vector<float> y(size_t(M * N));
  ref::matmul_nt(y.data(), x.data(), w.data(), bias, M, N, K);
  if (gelu) ref::gelu_erf_forward(y.data(), y.data(), M * N);
  return y;
}

TEST(Linear, MatchesRefForEveryTypeEpilogueAndM) {
  const ExecCtx ctx{};
  for (auto [N, K] : {std::pair<int64_t, int64_t>{768, 768}, {3072, 768}, {13, 100}}) {
    auto w = randn(N * K, 1, 0.05f), bias = randn(N, 2);
    for (PackedType t : {PackedType::f32, PackedType::bf16}) {
      const PackedLinear packed = PackedLinear::pack(w.data(), N, K, t);
      EXPECT_EQ(packed.n(), N);
      EXPECT_EQ(packed.k(), K);
      EXPECT_GE(packed.packed_bytes(), size_t(N * K) * (t == PackedType::bf16 ? 2 : 4));
      for (int64_t M : {1, 7, 32, 130}) {
        auto x = randn(M * K, 3 + uint64_t(M));
        for (bool gelu : {false, true}) {
          std::vector<float> y(size_t(M * N), -5.0f);
          linear_forward(ctx, y.data(), x.data(), packed, bias.data(), M, gelu ? Epilogue::gelu_erf : Epilogue::none);
          const bool bf = t == PackedType::bf16;
          const auto want = bf ? reference(round_bf16(x), round_bf16(w), bias.data(), M, N, K, gelu)
                               : reference(x, w, bias.data(), M, N, K, gelu);
          // fp32, and bf16 against the reference on bf16-rounded inputs (only the accumulation
          // order differs): measured max |Δ| 5.3e-6 over all cases, |y| up to ~5.
          RC_EXPECT_CLOSE(y.data(), want.data(), M * N, (test::Tol{2e-5, 1e-5}))
              << "N=" << N << " K=" << K << " M=" << M << " bf16=" << bf << " gelu=" << gelu;
        }
      }
      // No bias.
      auto x = randn(5 * K, 9);
      std::vector<float> y(size_t(5 * N));
      linear_forward(ctx, y.data(), x.data(), packed, nullptr, 5, Epilogue::none);
      const bool bf = t == PackedType::bf16;
      const auto want = bf ? reference(round_bf16(x), round_bf16(w), nullptr, 5, N, K, false)
                           : reference(x, w, nullptr, 5, N, K, false);
      RC_EXPECT_CLOSE(y.data(), want.data(), 5 * N, (test::Tol{2e-5, 1e-5}));
    }
  }
}

TEST(Linear, ConcurrentCallsShareOnePackedWeight) {
  const ExecCtx ctx{};
  const int64_t N = 256, K = 192;
  auto w = randn(N * K, 10, 0.05f), bias = randn(N, 11);
  const PackedLinear packed = PackedLinear::pack(w.data(), N, K, PackedType::bf16);
  std::vector<std::vector<float>> got(4), want(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    const int64_t M = 3 + 5 * t;
    auto x = randn(M * K, 20 + uint64_t(t));
    want[size_t(t)] = reference(round_bf16(x), round_bf16(w), bias.data(), M, N, K, true);
    threads.emplace_back([&, t, M, x] {
      std::vector<float> y(size_t(M * N));
      for (int rep = 0; rep < 20; ++rep)
        linear_forward(ctx, y.data(), x.data(), packed, bias.data(), M, Epilogue::gelu_erf);
      got[size_t(t)] = y;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t)
    RC_EXPECT_CLOSE(got[size_t(t)].data(), want[size_t(t)].data(), int64_t(want[size_t(t)].size()),
                    (test::Tol{2e-5, 1e-5}));
}

TEST(Linear, EmptyWeightIsRejected) {
  float w = 1.0f;
  EXPECT_THROW(PackedLinear::pack(&w, 0, 1, PackedType::f32), rc::Error);
}

// int8 cannot represent NaN or Inf, and the quantiser's per-row absolute maximum would drop a
// NaN silently (a finite, meaningless answer): such weights are refused when packed, on every
// path (oneDNN's and the portable one share the quantiser). fp32 and bf16 carry them, and the
// model refuses their non-finite logits instead.
TEST(LinearInt8, NonFiniteWeightsAreRefusedAtPack) {
  const int64_t N = 8, K = 40;
  for (const float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    std::vector<float> w = randn(N * K, 7);
    w[size_t(5 * K + 33)] = bad;  // row 5
    try {
      PackedLinear::pack(w.data(), N, K, PackedType::s8);
      ADD_FAILURE() << "packed a weight holding " << bad << " as int8";
    } catch (const rc::Error& e) {
      EXPECT_EQ(e.errc(), Errc::format);
      EXPECT_NE(std::string(e.what()).find("row 5 of the (8, 40) weight"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(PackedLinear::pack(w.data(), N, K, PackedType::f32));
    EXPECT_NO_THROW(PackedLinear::pack(w.data(), N, K, PackedType::bf16));
  }
}

}  // namespace
}  // namespace rc::kernels
