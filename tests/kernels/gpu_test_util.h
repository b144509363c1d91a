// Shared by tests/kernels/test_*_gpu.cpp: device round trips, bf16 rounding of host data,
// and one comparison that records the measured error (max |Δ|, NMSE) as a test property and
// prints it, so scripts/gpu-check.sh's log carries the numbers the tolerances are set from.
// Every GPU test starts with RC_REQUIRE_GPU(): it skips, not fails, without a device, naming
// CUDA's reason (an outdated driver reads "CUDA driver version is insufficient ..."), and
// scripts/gpu-check.sh fails a run in which any GPU test skipped.
// Tests call the public ops (kernels/<op>.h) with cuda_ctx(), i.e. through the dispatch
// layer; only bf16-storage variants and the Gemm struct, which have no public op, call
// kernels/cuda directly.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "support/allclose.h"
#include "tensor/bf16.h"

#if RC_WITH_CUDA
#include "device/cuda/device.h"
#include "kernels/exec_ctx.h"
#include "kernels/cuda/cuda_kernels.h"

#define RC_REQUIRE_GPU()                                                                            \
  do {                                                                                              \
    const ::rc::cuda::DeviceProbe rc_probe_ = ::rc::cuda::probe_devices();                          \
    if (rc_probe_.count == 0)                                                                       \
      GTEST_SKIP() << "no CUDA device" << (rc_probe_.error.empty() ? "" : ": ") << rc_probe_.error; \
  } while (0)

namespace rc::test::gpu {

// The context the public ops (kernels/<op>.h) dispatch to CUDA with: device 0, default stream.
inline rc::kernels::ExecCtx cuda_ctx(rc::kernels::MatmulPrecision prec = rc::kernels::MatmulPrecision::fp32) {
  rc::kernels::ExecCtx c;
  c.device = rc::kernels::Device::cuda;
  c.matmul_precision = prec;
  return c;
}

template <class T>
using Dev = rc::cuda::DeviceArray<T>;
using rc::kernels::cuda::Bf16;

template <class T>
Dev<T> up(const std::vector<T>& h) {
  return Dev<T>(h.data(), h.size());
}
template <class T>
std::vector<T> down(const Dev<T>& d) {
  std::vector<T> h(d.size());
  d.download(h.data(), h.size());
  return h;
}

inline std::vector<Bf16> to_bf16(const std::vector<float>& v) {
  std::vector<Bf16> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = rc::f32_to_bf16(v[i]);
  return o;
}
inline std::vector<float> to_f32(const std::vector<Bf16>& v) {
  std::vector<float> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = rc::bf16_to_f32(v[i]);
  return o;
}
// What a bf16 tensor holding v holds: the reference runs on these values.
inline std::vector<float> round_bf16(const std::vector<float>& v) { return to_f32(to_bf16(v)); }

inline std::vector<float> randn(int64_t n, uint64_t seed, float scale = 1.0f, float shift = 0.0f) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(size_t(n > 0 ? n : 0));
  for (auto& x : v) x = dist(gen) * scale + shift;
  return v;
}

// EXPECT all-close, and record the measured error under `what`.
inline void expect_close(const std::string& what, const std::vector<float>& got, const std::vector<float>& want,
                         rc::test::Tol tol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const rc::test::CloseReport r = rc::test::compare(got.data(), want.data(), int64_t(got.size()), tol);
  ::testing::Test::RecordProperty(what + ".max_abs", std::to_string(r.max_abs));
  ::testing::Test::RecordProperty(what + ".nmse", std::to_string(r.nmse));
  std::printf("[measured] %s: max|d| %.3g  nmse %.3g  (atol %.1g rtol %.1g)\n", what.c_str(), r.max_abs, r.nmse,
              tol.atol, tol.rtol);
  EXPECT_TRUE(rc::test::all_close(got.data(), want.data(), int64_t(got.size()), tol)) << what;
}

// Normalised mean squared error bound, for GEMM-bearing results (ggml's metric).
inline void expect_nmse(const std::string& what, const std::vector<float>& got, const std::vector<float>& want,
                        double max_nmse) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const rc::test::CloseReport r = rc::test::compare(got.data(), want.data(), int64_t(got.size()), {0, 0});
  ::testing::Test::RecordProperty(what + ".nmse", std::to_string(r.nmse));
  std::printf("[measured] %s: max|d| %.3g  nmse %.3g  (max nmse %.1g)\n", what.c_str(), r.max_abs, r.nmse, max_nmse);
  EXPECT_LE(r.nmse, max_nmse) << what << ": max|d| " << r.max_abs;
}

}  // namespace rc::test::gpu
#endif  // RC_WITH_CUDA
