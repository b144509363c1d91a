// Comparison helpers for kernel and model tests: max |Δ|, NMSE, and the first mismatches,
// so a failure says how far off it was, not just that it was.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>

namespace rc::test {

struct Tol {
  double atol = 1e-6, rtol = 1e-5;
};

struct CloseReport {
  double max_abs = 0, nmse = 0;
  int64_t mismatches = 0;
  std::string first;  // up to 5 mismatches "i: got g, want w"
};

inline CloseReport compare(const float* got, const float* want, int64_t n, Tol tol) {
  CloseReport r;
  double err = 0, ref = 0;
  std::ostringstream first;
  for (int64_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i]));
    const bool bad = !(d <= tol.atol + tol.rtol * std::fabs(double(want[i])));  // NaN counts as bad
    if (bad) {
      if (r.mismatches < 5) first << "  [" << i << "] got " << got[i] << ", want " << want[i] << "\n";
      ++r.mismatches;
    }
    r.max_abs = std::isnan(d) ? INFINITY : std::max(r.max_abs, d);
    err += d * d;
    ref += double(want[i]) * double(want[i]);
  }
  r.nmse = ref > 0 ? err / ref : err;
  r.first = first.str();
  return r;
}

inline ::testing::AssertionResult all_close(const float* got, const float* want, int64_t n, Tol tol) {
  const CloseReport r = compare(got, want, n, tol);
  if (r.mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.mismatches << " of " << n << " elements differ (atol " << tol.atol
                                       << ", rtol " << tol.rtol << "); max |d| " << r.max_abs << ", NMSE " << r.nmse
                                       << "\n"
                                       << r.first;
}

}  // namespace rc::test

#define EXPECT_ALLCLOSE(got, want, n, tol) EXPECT_TRUE(::rc::test::all_close((got), (want), (n), (tol)))
#define ASSERT_ALLCLOSE(got, want, n, tol) ASSERT_TRUE(::rc::test::all_close((got), (want), (n), (tol)))
