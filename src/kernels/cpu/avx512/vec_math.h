// AVX-512 math helpers for the avx512/ translation units only (they are compiled with
// -mavx512f...; including this anywhere else would break the generic build).  Everything is
// `static inline` inside namespace avx512 so no AVX-512 code can leak into a generic TU by ODR.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

namespace rc::kernels::cpu::avx512 {

// e^x, relative error ≤ 2 ulp on [-87, 88]: x = n·ln2 + r with |r| ≤ ln2/2 (ln2 split in a
// high and a low part for an exact reduction), e^r by a degree-6 Taylor/minimax polynomial,
// then scaled by 2^n.  Below -87.3 the result flushes to 0, above 88.7 to +inf.
static inline __m512 exp_ps(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.33654f), hi = _mm512_set1_ps(88.72283f);
  // The constant first: VMINPS / VMAXPS return their second operand when either is NaN, so a
  // NaN x stays NaN (as std::exp) instead of being clamped to a finite value.
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), _mm512_min_ps(hi, x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  __m512 y = _mm512_scalef_ps(p, n);
  y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), y, _mm512_setzero_ps());
  return y;
}

// Φ(x) = ½(1 + erf(x/√2)) and φ(x) = e^{-x²/2}/√(2π) sharing one exp.  erf by Abramowitz &
// Stegun 7.1.26 (|error| ≤ 1.5e-7), the same formula PyTorch's vectorised CPU erf uses.
static inline void normal_cdf_pdf(__m512 x, __m512* cdf, __m512* pdf) {
  const __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f));
  const __m512 az = _mm512_abs_ps(z);
  const __m512 t =
      _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(az, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f)));
  __m512 poly = _mm512_set1_ps(1.061405429f);
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(-1.453152027f));
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(1.421413741f));
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(-0.284496736f));
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(0.254829592f));
  poly = _mm512_mul_ps(poly, t);
  const __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(z, z)));  // e^{-x²/2}
  // erf(|z|) = 1 - poly·e;  Φ = ½(1 ± erf(|z|)).  For z < 0 use ½·poly·e directly (no cancellation).
  const __m512 half_tail = _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_mul_ps(poly, e));
  const __mmask16 neg = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ);
  *cdf = _mm512_mask_blend_ps(neg, _mm512_sub_ps(_mm512_set1_ps(1.0f), half_tail), half_tail);
  if (pdf) *pdf = _mm512_mul_ps(e, _mm512_set1_ps(0.39894228040143267794f));
}

static inline float hsum(__m512 v) { return _mm512_reduce_add_ps(v); }

static inline __mmask16 tail_mask(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1u); }

namespace {

// The vector operations of the ISA-shared kernel bodies (kernels/cpu/simd_*.inc), on 16 fp32
// lanes: the bodies are written once against this interface and the NEON twin (neon/vec_math.h),
// so only the intrinsics differ between the two paths (the two structs are alike in shape on
// purpose, a `duplicates` pair: they are the one place where the ISAs differ). In an anonymous
// namespace: each TU that includes it gets its own copy, compiled with its own flags (no ODR
// merge across ISAs).
struct Simd {
  using V = __m512;
  using Tail = __mmask16;  // the lanes a partial vector covers
  static constexpr int64_t kWidth = 16;
  static constexpr int kTileVectors = 4;  // attention micro-GEMM: 4 rows × 4 vectors, 16 accumulators

  // Lanes [0, min(left, 16)); none when left ≤ 0.
  static Tail tail(int64_t left) { return left <= 0 ? Tail(0) : tail_mask(left); }
  static bool any(Tail t) { return t != 0; }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const float* p, Tail t) { return _mm512_maskz_loadu_ps(t, p); }  // padding lanes 0
  static V load_or(const float* p, Tail t, float fill) { return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), t, p); }
  static void store(float* p, V v, Tail t) { _mm512_mask_storeu_ps(p, t, v); }
  static V keep(V v, Tail t) { return _mm512_maskz_mov_ps(t, v); }  // padding lanes 0
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V zero() { return _mm512_setzero_ps(); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  // a - b in the tail's lanes; the padding lanes are 0 here (NEON: a - b; callers zero them).
  static V sub_tail(V a, V b, Tail t) { return _mm512_maskz_sub_ps(t, a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V sqrt(V a) { return _mm512_sqrt_ps(a); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }  // a·b + c, one rounding
  static float sum(V v) { return _mm512_reduce_add_ps(v); }
  static float max_of(V v) { return _mm512_reduce_max_ps(v); }
  static V exp(V x) { return exp_ps(x); }
  static V normal_cdf(V x, V* pdf) {
    V cdf;
    normal_cdf_pdf(x, &cdf, pdf);
    return cdf;
  }
};

}  // namespace

}  // namespace rc::kernels::cpu::avx512

#endif  // __x86_64__
