// NEON math helpers for the neon/ translation units only. Everything is `static inline` in
// namespace neon, so nothing can leak into a TU compiled for another ISA by ODR. The formulas
// are those of avx512/vec_math.h, so both vectorised paths round alike.
#pragma once

#if defined(__aarch64__)
#include <arm_neon.h>

#include <cstdint>

namespace rc::kernels::cpu::neon {

// e^x, relative error ≤ 2 ulp on [-87, 88]: x = n·ln2 + r with |r| ≤ ln2/2 (ln2 split in a high
// and a low part for an exact reduction), e^r by a degree-6 polynomial, then scaled by 2^n as
// two exact power-of-two factors (n ∈ [-150, 128] does not fit one exponent field). Below
// -87.3 the result flushes to 0, as the AVX-512 version does.
static inline float32x4_t exp_ps(float32x4_t x) {
  const float32x4_t lo = vdupq_n_f32(-87.33654f);
  const uint32x4_t under = vcltq_f32(x, lo);
  x = vmaxq_f32(vminq_f32(x, vdupq_n_f32(88.72283f)), vdupq_n_f32(-104.0f));
  const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.0f / 720.0f);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  const int32x4_t ni = vcvtq_s32_f32(n);
  const int32x4_t n1 = vshrq_n_s32(ni, 1), n2 = vsubq_s32(ni, n1);
  const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, vdupq_n_s32(127)), 23));
  const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, vdupq_n_s32(127)), 23));
  const float32x4_t y = vmulq_f32(vmulq_f32(p, s1), s2);
  return vbslq_f32(under, vdupq_n_f32(0.0f), y);
}

// Φ(x) = ½(1 + erf(x/√2)) and φ(x) = e^{-x²/2}/√(2π) sharing one exp; erf by Abramowitz &
// Stegun 7.1.26 (|error| ≤ 1.5e-7), as avx512/vec_math.h.
static inline float32x4_t normal_cdf_pdf(float32x4_t x, float32x4_t* pdf) {
  const float32x4_t z = vmulq_f32(x, vdupq_n_f32(0.70710678118654752f));
  const float32x4_t az = vabsq_f32(z);
  const float32x4_t t = vdivq_f32(vdupq_n_f32(1.0f), vfmaq_f32(vdupq_n_f32(1.0f), az, vdupq_n_f32(0.3275911f)));
  float32x4_t poly = vdupq_n_f32(1.061405429f);
  poly = vfmaq_f32(vdupq_n_f32(-1.453152027f), poly, t);
  poly = vfmaq_f32(vdupq_n_f32(1.421413741f), poly, t);
  poly = vfmaq_f32(vdupq_n_f32(-0.284496736f), poly, t);
  poly = vfmaq_f32(vdupq_n_f32(0.254829592f), poly, t);
  poly = vmulq_f32(poly, t);
  const float32x4_t e = exp_ps(vnegq_f32(vmulq_f32(z, z)));  // e^{-x²/2}
  const float32x4_t half_tail = vmulq_f32(vdupq_n_f32(0.5f), vmulq_f32(poly, e));
  const uint32x4_t neg = vcltq_f32(z, vdupq_n_f32(0.0f));
  if (pdf) *pdf = vmulq_f32(e, vdupq_n_f32(0.39894228040143267794f));
  return vbslq_f32(neg, half_tail, vsubq_f32(vdupq_n_f32(1.0f), half_tail));
}

// Loads of n < 4 elements into a zero-padded vector and the matching store: the tails.
static inline float32x4_t load_partial(const float* p, int64_t n) {
  float b[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t i = 0; i < n; ++i) b[i] = p[i];
  return vld1q_f32(b);
}
static inline void store_partial(float* p, float32x4_t v, int64_t n) {
  float b[4];
  vst1q_f32(b, v);
  for (int64_t i = 0; i < n; ++i) p[i] = b[i];
}

// fp32 → bf16 bits, round to nearest even, NaN kept quiet: rc::f32_to_bf16 on 4 lanes.
static inline uint16x4_t f32_to_bf16_rne(float32x4_t v) {
  const uint32x4_t b = vreinterpretq_u32_f32(v);
  const uint32x4_t lsb = vandq_u32(vshrq_n_u32(b, 16), vdupq_n_u32(1));
  const uint32x4_t rounded = vshrq_n_u32(vaddq_u32(b, vaddq_u32(lsb, vdupq_n_u32(0x7fff))), 16);
  const uint32x4_t nan = vcgtq_u32(vandq_u32(b, vdupq_n_u32(0x7fffffff)), vdupq_n_u32(0x7f800000));
  const uint32x4_t quiet = vorrq_u32(vshrq_n_u32(b, 16), vdupq_n_u32(0x40));
  return vmovn_u32(vbslq_u32(nan, quiet, rounded));
}

static inline float32x4_t bf16_to_f32(uint16x4_t h) { return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); }

namespace {

// The vector operations of the ISA-shared kernel bodies (kernels/cpu/simd_*.inc) on 4 fp32
// lanes: the twin of avx512/vec_math.h's Simd, so the bodies are written once and only the
// intrinsics differ. In an anonymous namespace: each TU (baseline, +bf16, +sve flags) gets its
// own copy, so nothing is merged across TUs compiled for different CPUs.
struct Simd {
  using V = float32x4_t;
  using Tail = int64_t;  // the number of lanes a partial vector covers, 0 to 4
  static constexpr int64_t kWidth = 4;
  static constexpr int kTileVectors = 4;  // attention micro-GEMM: 4 rows × 4 vectors, 16 accumulators

  static Tail tail(int64_t left) { return left <= 0 ? 0 : (left >= 4 ? 4 : left); }
  static bool any(Tail t) { return t != 0; }
  static V load(const float* p) { return vld1q_f32(p); }
  static V load(const float* p, Tail t) { return t >= 4 ? vld1q_f32(p) : load_partial(p, t); }  // padding 0
  static V load_or(const float* p, Tail t, float fill) {
    if (t >= 4) return vld1q_f32(p);
    float b[4] = {fill, fill, fill, fill};
    for (int64_t i = 0; i < t; ++i) b[i] = p[i];
    return vld1q_f32(b);
  }
  static void store(float* p, V v, Tail t) {
    if (t >= 4)
      vst1q_f32(p, v);
    else
      store_partial(p, v, t);
  }
  static V keep(V v, Tail t) {  // padding lanes 0
    if (t >= 4) return v;
    static const uint32_t lane[4] = {0, 1, 2, 3};
    return vbslq_f32(vcltq_u32(vld1q_u32(lane), vdupq_n_u32(uint32_t(t))), v, vdupq_n_f32(0.0f));
  }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V zero() { return vdupq_n_f32(0.0f); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V sub(V a, V b) { return vsubq_f32(a, b); }
  // a - b in every lane: the callers' padding lanes are multiplied by a zero (AVX-512 zeroes them).
  static V sub_tail(V a, V b, Tail) { return vsubq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V div(V a, V b) { return vdivq_f32(a, b); }
  static V sqrt(V a) { return vsqrtq_f32(a); }
  static V max(V a, V b) { return vmaxq_f32(a, b); }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }  // a·b + c, one rounding
  static float sum(V v) { return vaddvq_f32(v); }
  static float max_of(V v) { return vmaxvq_f32(v); }
  static V exp(V x) { return exp_ps(x); }
  static V normal_cdf(V x, V* pdf) { return normal_cdf_pdf(x, pdf); }
};

}  // namespace

}  // namespace rc::kernels::cpu::neon

#endif  // __aarch64__
