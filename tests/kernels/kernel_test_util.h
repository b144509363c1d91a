// Shared helpers for tests/kernels: seeded inputs, NMSE, and a finite-difference gradient
// check for the reference kernels (ggml's MODE_GRAD idea: a scalar loss L = Σ w·y with fixed
// random weights w, so dL/dy = w is the upstream gradient fed to backward).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "device/cpu_isa.h"
#include "support/allclose.h"

namespace rc::test {

inline void note(const char* what, double value, int line);

inline std::vector<float> randn(int64_t n, uint64_t seed, float scale = 1.0f, float shift = 0.0f) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen) * scale + shift;
  return v;
}

inline std::vector<float> uniform(int64_t n, uint64_t seed, float lo, float hi) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

inline double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    err += d * d;
    ref += double(want[i]) * double(want[i]);
  }
  return ref > 0 ? err / ref : err;
}

inline double nmse_impl(const std::vector<float>& got, const std::vector<float>& want, int line) {
  const double e = nmse(got, want);
  note("nmse", e, line);
  return e;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

inline double dot(const std::vector<float>& w, const std::vector<float>& y) {
  double s = 0;
  for (size_t i = 0; i < w.size(); ++i) s += double(w[i]) * double(y[i]);
  return s;
}

// Numerical dL/dx for every element of x by the 4-point central stencil
// (f(-2h) - 8f(-h) + 8f(h) - f(2h)) / 12h; `loss` re-reads x each call.
inline std::vector<double> numeric_grad(std::vector<float>& x, const std::function<double()>& loss, float h) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float x0 = x[i];
    auto at = [&](float off) {
      x[i] = x0 + off;
      const double v = loss();
      x[i] = x0;
      return v;
    };
    g[i] = (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12.0 * double(h));
  }
  return g;
}

// ggml's mean-abs-asymmetric error: mean |a-n| / mean(|a|+|n|)/2 -- robust to tiny entries.
inline bool verbose() {
  static const bool v = std::getenv("RC_TEST_VERBOSE") != nullptr;
  return v;
}

// RC_TEST_VERBOSE=1 prints every measured error, to keep the "measured" notes beside the
// tolerances honest.
inline void note(const char* what, double value, int line) {
  if (verbose()) std::printf("    measured %s = %.3g (line %d)\n", what, value, line);
}

inline double grad_error_impl(const std::vector<float>& analytic, const std::vector<double>& numeric, int line) {
  double num = 0, den = 0;
  for (size_t i = 0; i < numeric.size(); ++i) {
    num += std::fabs(double(analytic[i]) - numeric[i]);
    den += 0.5 * (std::fabs(double(analytic[i])) + std::fabs(numeric[i]));
  }
  const double e = den > 0 ? num / den : num;
  note("grad_error", e, line);
  return e;
}

inline ::testing::AssertionResult close_impl(const float* got, const float* want, int64_t n, Tol tol, int line) {
  const CloseReport r = compare(got, want, n, tol);
  note("max|d|", r.max_abs, line);
  return all_close(got, want, n, tol);
}

// Runs fn() once per available CPU path of the kernels, setting the path name for messages.
// The ISA is fixed per process by rc::cpu_isa(); the second ctest run (RC_CPU_ISA=generic)
// covers the other path.
inline std::string isa_label() { return std::string(cpu_isa_name(cpu_isa())); }

}  // namespace rc::test

#define RC_GRAD_ERROR(a, n) ::rc::test::grad_error_impl((a), (n), __LINE__)
#define RC_NMSE(got, want) ::rc::test::nmse_impl((got), (want), __LINE__)
#define RC_EXPECT_CLOSE(got, want, n, tol) EXPECT_TRUE(::rc::test::close_impl((got), (want), (n), (tol), __LINE__))
