// SVE kernels (compiled with -march=armv8.2-a+sve, called only when RC_CPU_ISA resolves to sve):
// vector-length agnostic, tails by predicate (no scalar or zero-padded tail code), and FSCALE for
// the 2^n of exp (exact over the whole range, no two-factor trick as on NEON). Same formulas as
// neon/vec_math.h and avx512/vec_math.h.
#if defined(__aarch64__)

#include <arm_sve.h>

#include <cmath>
#include <cstdint>

#include "kernels/cpu/neon/neon_kernels.h"

namespace rc::kernels::cpu::sve {

namespace {

constexpr int64_t kParallelMin = 1 << 14;

inline svfloat32_t exp_ps(svbool_t pg, svfloat32_t x) {
  const svbool_t under = svcmplt_n_f32(pg, x, -87.33654f);
  x = svmax_n_f32_x(pg, svmin_n_f32_x(pg, x, 88.72283f), -104.0f);
  const svfloat32_t n = svrintn_f32_x(pg, svmul_n_f32_x(pg, x, 1.44269504088896341f));
  svfloat32_t r = svmls_n_f32_x(pg, x, n, 0.693359375f);
  r = svmls_n_f32_x(pg, r, n, -2.12194440e-4f);
  svfloat32_t p = svdup_n_f32(1.0f / 720.0f);
  p = svmad_n_f32_x(pg, p, r, 1.0f / 120.0f);
  p = svmad_n_f32_x(pg, p, r, 1.0f / 24.0f);
  p = svmad_n_f32_x(pg, p, r, 1.0f / 6.0f);
  p = svmad_n_f32_x(pg, p, r, 0.5f);
  p = svmad_n_f32_x(pg, p, r, 1.0f);
  p = svmad_n_f32_x(pg, p, r, 1.0f);
  const svfloat32_t y = svscale_f32_x(pg, p, svcvt_s32_f32_x(pg, n));
  return svsel_f32(under, svdup_n_f32(0.0f), y);
}

// Φ(x) and, when pdf is given, φ(x), sharing one exp (Abramowitz & Stegun 7.1.26 for erf).
inline svfloat32_t normal_cdf_pdf(svbool_t pg, svfloat32_t x, svfloat32_t* pdf) {
  const svfloat32_t z = svmul_n_f32_x(pg, x, 0.70710678118654752f);
  const svfloat32_t az = svabs_f32_x(pg, z);
  const svfloat32_t t = svdivr_n_f32_x(pg, svmad_n_f32_x(pg, az, svdup_n_f32(0.3275911f), 1.0f), 1.0f);
  svfloat32_t poly = svdup_n_f32(1.061405429f);
  poly = svmad_n_f32_x(pg, poly, t, -1.453152027f);
  poly = svmad_n_f32_x(pg, poly, t, 1.421413741f);
  poly = svmad_n_f32_x(pg, poly, t, -0.284496736f);
  poly = svmad_n_f32_x(pg, poly, t, 0.254829592f);
  poly = svmul_f32_x(pg, poly, t);
  const svfloat32_t e = exp_ps(pg, svneg_f32_x(pg, svmul_f32_x(pg, z, z)));
  const svfloat32_t half_tail = svmul_n_f32_x(pg, svmul_f32_x(pg, poly, e), 0.5f);
  if (pdf) *pdf = svmul_n_f32_x(pg, e, 0.39894228040143267794f);
  const svbool_t neg = svcmplt_n_f32(pg, z, 0.0f);
  return svsel_f32(neg, half_tail, svsubr_n_f32_x(pg, half_tail, 1.0f));
}

// y = (s - μ)·rstd·γ + β over one row, s = x (+ residual, stored to sum when given).
inline void ln_row(float* y, float* mean, float* rstd, const float* x, const float* residual, float* sum,
                   const float* gamma, const float* beta, int64_t C, float eps) {
  const int64_t vl = int64_t(svcntw());
  const float* s = x;
  svfloat32_t acc = svdup_n_f32(0.0f);
  for (int64_t c = 0; c < C; c += vl) {
    const svbool_t pg = svwhilelt_b32_s64(c, C);
    svfloat32_t v = svld1_f32(pg, x + c);
    if (residual) {
      v = svadd_f32_x(pg, v, svld1_f32(pg, residual + c));
      svst1_f32(pg, sum + c, v);
    }
    acc = svadd_f32_m(pg, acc, v);
  }
  if (residual) s = sum;
  const float mu = svaddv_f32(svptrue_b32(), acc) / float(C);
  svfloat32_t var = svdup_n_f32(0.0f);
  for (int64_t c = 0; c < C; c += vl) {
    const svbool_t pg = svwhilelt_b32_s64(c, C);
    const svfloat32_t d = svsub_n_f32_x(pg, svld1_f32(pg, s + c), mu);
    var = svmla_f32_m(pg, var, d, d);
  }
  const float rs = 1.0f / std::sqrt(svaddv_f32(svptrue_b32(), var) / float(C) + eps);
  for (int64_t c = 0; c < C; c += vl) {
    const svbool_t pg = svwhilelt_b32_s64(c, C);
    const svfloat32_t xh = svmul_n_f32_x(pg, svsub_n_f32_x(pg, svld1_f32(pg, s + c), mu), rs);
    svst1_f32(pg, y + c, svmla_f32_x(pg, svld1_f32(pg, beta + c), xh, svld1_f32(pg, gamma + c)));
  }
  if (mean) *mean = mu;
  if (rstd) *rstd = rs;
}

// op(i, pg) for each vector of svcntw() lanes from i = 0 to n, pg its predicate, in parallel
// from kParallelMin elements.
template <class Op>
inline void for_each_vector(int64_t n, const Op& op) {
  const int64_t vl = int64_t(svcntw()), blocks = (n + vl - 1) / vl;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t blk = 0; blk < blocks; ++blk) op(blk * vl, svwhilelt_b32_s64(blk * vl, n));
}

}  // namespace

void gelu_erf_forward(float* y, const float* x, int64_t n) noexcept {
  for_each_vector(n, [&](int64_t i, svbool_t pg) {
    const svfloat32_t v = svld1_f32(pg, x + i);
    svst1_f32(pg, y + i, svmul_f32_x(pg, v, normal_cdf_pdf(pg, v, nullptr)));
  });
}

void gelu_erf_backward(float* dx, const float* dy, const float* x, int64_t n) noexcept {
  for_each_vector(n, [&](int64_t i, svbool_t pg) {
    const svfloat32_t v = svld1_f32(pg, x + i);
    svfloat32_t pdf;
    const svfloat32_t cdf = normal_cdf_pdf(pg, v, &pdf);
    svst1_f32(pg, dx + i, svmul_f32_x(pg, svld1_f32(pg, dy + i), svmla_f32_x(pg, cdf, v, pdf)));
  });
}

#include "kernels/cpu/layernorm_rows.inc"

}  // namespace rc::kernels::cpu::sve

#endif  // __aarch64__
