// int8 PackedLinear (per-output-channel weights, per-token activations), the quantiser on every
// CPU path, bf16 activation I/O of linear_forward, and every RC_CPU_ISA path of PackedLinear
// (each in a child process: oneDNN's ISA cap is fixed once per process).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/activation.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/isa_paths.h"
#include "kernels/linear.h"
#include "kernels/matmul.h"
#include "support/emulator.h"
#include "tensor/bf16.h"

namespace rc::kernels {
namespace {

using test::randn;

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = f32_to_bf16(v[i]);
  return o;
}
std::vector<float> from_bf16(const std::vector<uint16_t>& v) {
  std::vector<float> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = bf16_to_f32(v[i]);
  return o;
}

// y = xs[m]·ws[n]·Σ xq·wq + bias, from the reference quantiser: what the int8 GEMM must give
// up to fp32 rounding of the dequantisation.
std::vector<float> int8_reference(const std::vector<float>& x, const std::vector<float>& w, const float* bias,
                                  int64_t M, int64_t N, int64_t K, bool gelu) {
  std::vector<int8_t> xq(size_t(M * K)), wq(size_t(N * K));
  std::vector<float> xs(static_cast<size_t>(M)), ws(static_cast<size_t>(N)), y(size_t(M * N));
  ref::quantize_rows_s8(xq.data(), xs.data(), x.data(), M, K);
  ref::quantize_rows_s8(wq.data(), ws.data(), w.data(), N, K);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += int64_t(xq[size_t(m * K + k)]) * wq[size_t(n * K + k)];
      y[size_t(m * N + n)] = float(double(xs[size_t(m)]) * ws[size_t(n)] * double(acc)) + (bias ? bias[n] : 0.0f);
    }
  if (gelu) ref::gelu_erf_forward(y.data(), y.data(), M * N);
  return y;
}

std::vector<float> fp32_reference(const std::vector<float>& x, const std::vector<float>& w, const float* bias,
                                  int64_t M, int64_t N, int64_t K, bool gelu) {
  std::vector<float> y(size_t(M * N));
  ref::matmul_nt(y.data(), x.data(), w.data(), bias, M, N, K);
  if (gelu) ref::gelu_erf_forward(y.data(), y.data(), M * N);
  return y;
}

TEST(Quantize, EveryPathMatchesTheReferenceBitForBit) {
  for (auto [M, K] : {std::pair<int64_t, int64_t>{1, 768}, {7, 100}, {33, 3072}, {3, 5}}) {
    auto x = randn(M * K, uint64_t(M * K), 2.0f);
    for (int64_t k = 0; k < K; ++k) x[size_t(k)] = 0.0f;  // an all-zero row: scale 1, all zeros
    std::vector<int8_t> want(size_t(M * K)), got(size_t(M * K));
    std::vector<float> want_s(static_cast<size_t>(M)), got_s(static_cast<size_t>(M));
    ref::quantize_rows_s8(want.data(), want_s.data(), x.data(), M, K);
    EXPECT_EQ(want_s[0], 1.0f);
    for (int64_t k = 0; k < K; ++k) EXPECT_EQ(want[size_t(k)], 0);
    int8_t lo = 0, hi = 0;
    for (auto v : want) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (M > 1) {
      EXPECT_TRUE(lo == -127 || hi == 127) << "the largest |x| of a row maps to ±127";
    }

    for (const cpu::CpuPath& path : cpu::cpu_paths()) {
      if (!path.runnable) continue;
      path.quantize_rows_s8(got.data(), got_s.data(), x.data(), M, K);
      EXPECT_EQ(got, want) << path.name << " M=" << M << " K=" << K;
      EXPECT_EQ(got_s, want_s);
    }
    // bf16 input: the same as quantising the widened values.
    const auto xb = to_bf16(x);
    const auto xw = from_bf16(xb);
    ref::quantize_rows_s8(want.data(), want_s.data(), xw.data(), M, K);
    for (const cpu::CpuPath& path : cpu::cpu_paths()) {
      if (!path.runnable) continue;
      path.quantize_rows_s8_bf16(got.data(), got_s.data(), xb.data(), M, K);
      EXPECT_EQ(got, want) << path.name;
      EXPECT_EQ(got_s, want_s);
    }
  }
}

TEST(Quantize, DequantizeEpilogueOnEveryPath) {
  const int64_t M = 5, N = 37;
  std::vector<int32_t> acc(size_t(M * N));
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> d(-200000, 200000);
  for (auto& a : acc) a = d(rng);
  const auto xs = test::uniform(M, 4, 1e-3f, 2e-2f), ws = test::uniform(N, 5, 1e-4f, 1e-3f), bias = randn(N, 6);
  for (bool gelu : {false, true})
    for (const float* b : std::initializer_list<const float*>{bias.data(), nullptr}) {
      std::vector<float> want(size_t(M * N));
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n)
          want[size_t(m * N + n)] =
              float(double(xs[size_t(m)]) * ws[size_t(n)] * acc[size_t(m * N + n)]) + (b ? b[n] : 0.0f);
      if (gelu) ref::gelu_erf_forward(want.data(), want.data(), M * N);
      std::vector<float> yf(size_t(M * N));
      std::vector<uint16_t> yb(size_t(M * N));
      for (const cpu::CpuPath& cp : cpu::cpu_paths()) {
        if (!cp.runnable) continue;
        const std::string path = cp.name;
        auto fn = cp.dequantize_rows;
        fn(yf.data(), nullptr, acc.data(), xs.data(), ws.data(), b, M, N, gelu);
        // fp32 products in a different order + the A&S erf (1.5e-7): measured max |Δ| 2.4e-7.
        RC_EXPECT_CLOSE(yf.data(), want.data(), M * N, (test::Tol{2e-6, 2e-6})) << "path " << path;
        fn(nullptr, yb.data(), acc.data(), xs.data(), ws.data(), b, M, N, gelu);
        const auto got = from_bf16(yb);
        // + one bf16 rounding (2^-9 relative): measured max |Δ| 7.8e-3 at |y| up to ~4.
        RC_EXPECT_CLOSE(got.data(), want.data(), M * N, (test::Tol{2e-6, 4e-3})) << "bf16 path " << path;
      }
    }
}

TEST(LinearInt8, MatchesQuantisedReferenceForEveryEpilogueAndM) {
  const ExecCtx ctx{};
  for (auto [N, K] : {std::pair<int64_t, int64_t>{768, 768}, {1024, 256}, {256, 3072}, {13, 100}}) {
    auto w = randn(N * K, 1, 0.05f), bias = randn(N, 2);
    const PackedLinear packed = PackedLinear::pack(w.data(), N, K, PackedType::s8);
    EXPECT_EQ(packed.type(), PackedType::s8);
    ASSERT_NE(packed.weight_scales(), nullptr);
    EXPECT_GE(packed.packed_bytes(), size_t(N * K));
    for (int64_t M : {1, 7, 32, 130}) {
      auto x = randn(M * K, 3 + uint64_t(M));
      for (bool gelu : {false, true}) {
        for (const float* b : std::initializer_list<const float*>{bias.data(), nullptr}) {
          std::vector<float> y(size_t(M * N), -5.0f);
          linear_forward(ctx, y.data(), x.data(), packed, b, M, gelu ? Epilogue::gelu_erf : Epilogue::none);
          // Exact integer products; only the fp32 dequantisation order differs: measured max
          // |Δ| 1.9e-6 with |y| up to ~5.
          const auto want = int8_reference(x, w, b, M, N, K, gelu);
          RC_EXPECT_CLOSE(y.data(), want.data(), M * N, (test::Tol{2e-5, 1e-5}))
              << "N=" << N << " K=" << K << " M=" << M << " gelu=" << gelu << " bias=" << (b != nullptr);
          // Against fp32: the quantisation error itself.  Measured NMSE up to 2.0e-4 (gaussian
          // data, per-token/per-channel scales; worst with GELU, whose small outputs weigh more).
          const auto exact = fp32_reference(x, w, b, M, N, K, gelu);
          EXPECT_LT(RC_NMSE(y, exact), 5e-4) << "N=" << N << " K=" << K << " M=" << M;
        }
      }
    }
  }
}

// The no-VNNI int8 GEMM (fp32 GEMM in K chunks) against 64-bit integer sums, on operands that
// make the sums large: values in [100, 127], so a 3000-long dot product reaches ~38 M, past
// fp32's exact integers (2^24 = 16.8 M), with random low bits. One unchunked fp32 GEMM rounds
// there (checked: with 4096-long chunks this test fails).
TEST(LinearInt8, NoVnniGemmIsExactPastTwoToThe24) {
  const int64_t M = 5, N = 7, K = 3000;
  std::vector<int8_t> xq(size_t(M * K)), wq(size_t(N * K));
  std::mt19937 rng(11);
  for (auto& v : xq) v = int8_t(100 + int(rng() % 28));
  for (auto& v : wq) v = int8_t(100 + int(rng() % 28));
  for (int64_t k = 0; k < K; ++k) xq[size_t(k)] = wq[size_t(k)] = 127;  // row 0 · col 0 = K·127²
  std::vector<int32_t> acc(size_t(M * N));
  if (!cpu::portable::gemm_s8_on_fp32(acc.data(), xq.data(), wq.data(), M, N, K))
    GTEST_SKIP() << "no oneDNN fp32 GEMM in this build";
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      int64_t want = 0;
      for (int64_t k = 0; k < K; ++k) want += int64_t(xq[size_t(m * K + k)]) * wq[size_t(n * K + k)];
      ASSERT_EQ(acc[size_t(m * N + n)], want) << "m=" << m << " n=" << n;
    }
  EXPECT_EQ(acc[0], K * 127 * 127);
}

TEST(LinearInt8, Bf16ActivationsInAndOut) {
  const ExecCtx ctx{};
  const int64_t N = 384, K = 256, M = 19;
  auto w = randn(N * K, 5, 0.05f), bias = randn(N, 6);
  auto x = randn(M * K, 7);
  const auto xb = to_bf16(x);
  const auto xw = from_bf16(xb);
  for (PackedType t : {PackedType::f32, PackedType::bf16, PackedType::s8}) {
    const PackedLinear packed = PackedLinear::pack(w.data(), N, K, t);
    // Reference: the f32-in, f32-out call on the widened input, rounded to bf16 on output.
    std::vector<float> want(size_t(M * N));
    linear_forward(ctx, want.data(), xw.data(), packed, bias.data(), M, Epilogue::gelu_erf);
    std::vector<uint16_t> yb(size_t(M * N));
    linear_forward(ctx, yb.data(), ActType::bf16, xb.data(), ActType::bf16, packed, bias.data(), M, Epilogue::gelu_erf);
    // bf16 output: one rounding (2^-9 relative); measured max |Δ| 1.5e-2 at |y| up to ~6.
    const auto got = from_bf16(yb);
    RC_EXPECT_CLOSE(got.data(), want.data(), M * N, (test::Tol{1e-5, 4e-3})) << "type " << int(t);
    std::vector<float> yf(size_t(M * N));
    linear_forward(ctx, yf.data(), ActType::f32, xb.data(), ActType::bf16, packed, bias.data(), M, Epilogue::gelu_erf);
    // bf16 input = the widened input exactly: measured max |Δ| 0.
    RC_EXPECT_CLOSE(yf.data(), want.data(), M * N, (test::Tol{2e-5, 1e-5})) << "type " << int(t);
  }
}

TEST(LinearInt8, PerTokenScalesMakeRowsIndependent) {
  // A row's result does not depend on the other rows of the call (per-token scales), even when
  // another row is 1000x larger.
  const ExecCtx ctx{};
  const int64_t N = 64, K = 96;
  auto w = randn(N * K, 8, 0.05f);
  auto x = randn(2 * K, 9);
  for (int64_t k = 0; k < K; ++k) x[size_t(K + k)] *= 1000.0f;
  const PackedLinear packed = PackedLinear::pack(w.data(), N, K, PackedType::s8);
  std::vector<float> both(size_t(2 * N)), alone(static_cast<size_t>(N));
  linear_forward(ctx, both.data(), x.data(), packed, nullptr, 2, Epilogue::none);
  linear_forward(ctx, alone.data(), x.data(), packed, nullptr, 1, Epilogue::none);
  RC_EXPECT_CLOSE(both.data(), alone.data(), N, (test::Tol{1e-6, 1e-6}));  // measured 0
}

// A shell command's exit status and output (stdout and stderr as the command redirects them).
std::pair<int, std::string> run_shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, out};
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, got);
  return {pclose(p), out};
}

// Every ISA path this CPU can run, in a child process with RC_CPU_ISA set: the Linear and
// LinearInt8 suites (and the quantiser) must pass on each.  Which GEMM runs is printed.
TEST(LinearIsaPaths, EveryForcedPathPasses) {
  if (std::getenv("RC_LINEAR_CHILD")) GTEST_SKIP() << "child process";
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  exe[n] = 0;
  std::set<std::string> passed;  // the paths children ran as (cpu_isa_name)
#if defined(__aarch64__)
  for (const char* isa : {"generic", "neon", "neon_bf16", "sve"}) {
#else
  for (const char* isa : {"generic", "avx2", "avx512", "avx512_bf16", "amx"}) {
#endif
    // A path this CPU lacks runs as the best one it has (cpu_isa: never raised), which the
    // loop runs in its turn: LinearPath.ReportsGemmPerType alone says which one a child gets,
    // and a path already run is not run again (on Ice Lake, avx512_bf16 and amx were two more
    // runs of avx512: two of five children, in a test that took 17.6 s).
    const std::string child = std::string("RC_LINEAR_CHILD=1 RC_CPU_ISA=") + isa + " " + test::emulator_prefix() + exe;
    const auto [probe_status, probe] = run_shell(child + " --gtest_filter='LinearPath.ReportsGemmPerType' 2>&1");
    ASSERT_TRUE(WIFEXITED(probe_status) && WEXITSTATUS(probe_status) == 0) << "RC_CPU_ISA=" << isa << ":\n" << probe;
    const size_t at = probe.find("isa=");
    ASSERT_NE(at, std::string::npos) << probe;
    const std::string runs_as = probe.substr(at + 4, probe.find(' ', at) - at - 4);
    if (!passed.insert(runs_as).second) {
      if (test::verbose()) std::printf("RC_CPU_ISA=%s runs as %s, passed above\n", isa, runs_as.c_str());
      continue;
    }
    const auto [status, out] =
        run_shell(child + " --gtest_filter='Quantize.*:LinearInt8.*:LinearPath.*' --gtest_brief=1 2>&1");
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "RC_CPU_ISA=" << isa << ":\n" << out;
    if (test::verbose()) std::printf("RC_CPU_ISA=%s:\n%s\n", isa, out.c_str());
  }
}

// Reports (RC_TEST_VERBOSE) which GEMM this process's path uses per type, and checks that the
// fallback, when taken, gives the same results as the reference (covered above as well).
TEST(LinearPath, ReportsGemmPerType) {
  const int64_t N = 32, K = 64;
  auto w = randn(N * K, 12, 0.05f);
  for (PackedType t : {PackedType::f32, PackedType::bf16, PackedType::s8}) {
    const PackedLinear packed = PackedLinear::pack(w.data(), N, K, t);
    if (test::verbose() || std::getenv("RC_LINEAR_CHILD"))
      std::printf("isa=%s type=%d gemm=%s\n", test::isa_label().c_str(), int(t),
                  packed.uses_onednn() ? "onednn" : "fallback");
  }
}

}  // namespace
}  // namespace rc::kernels
