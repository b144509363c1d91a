// AVX2 + FMA math helpers for the avx2/ translation units only (compiled with -mavx2 -mfma
// -mf16c; including this anywhere else would break the generic build). Everything is `static
// inline` in namespace avx2, so no AVX2 code can leak into a generic TU by ODR. The formulas are
// those of avx512/vec_math.h and neon/vec_math.h, so the three vectorised paths round alike.
// For x86-64 CPUs without AVX-512 (AMD Zen 2/3, Intel before Skylake-SP): 8 fp32 lanes,
// 16 vector registers, no mask registers (tails by VMASKMOV).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

namespace rc::kernels::cpu::avx2 {

// e^x, relative error ≤ 2 ulp on [-87, 88]: the reduction and polynomial of avx512::exp_ps,
// scaled by 2^n as two exact power-of-two factors (n ∈ [-150, 128] does not fit one exponent
// field; AVX2 has no VSCALEFPS). Below -87.3 the result flushes to 0, above 88.7 to +inf.
static inline __m256 exp_ps(__m256 x) {
  const __m256 under = _mm256_cmp_ps(x, _mm256_set1_ps(-87.33654f), _CMP_LT_OQ);
  // The constant first: MINPS / MAXPS return their second operand when either is NaN, so a NaN
  // x stays NaN (as std::exp) instead of being clamped to a finite value.
  x = _mm256_max_ps(_mm256_set1_ps(-104.0f), _mm256_min_ps(_mm256_set1_ps(88.72283f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, _mm256_set1_epi32(127)), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
  return _mm256_andnot_ps(under, _mm256_mul_ps(_mm256_mul_ps(p, s1), s2));
}

// Φ(x) = ½(1 + erf(x/√2)) and φ(x) = e^{-x²/2}/√(2π) sharing one exp; erf by Abramowitz &
// Stegun 7.1.26 (|error| ≤ 1.5e-7), as avx512/vec_math.h.
static inline __m256 normal_cdf_pdf(__m256 x, __m256* pdf) {
  const __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f));
  const __m256 az = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), z);
  const __m256 t =
      _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(az, _mm256_set1_ps(0.3275911f), _mm256_set1_ps(1.0f)));
  __m256 poly = _mm256_set1_ps(1.061405429f);
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(-1.453152027f));
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(1.421413741f));
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(-0.284496736f));
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(0.254829592f));
  poly = _mm256_mul_ps(poly, t);
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_mul_ps(z, z)));  // e^{-x²/2}
  const __m256 half_tail = _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_mul_ps(poly, e));
  const __m256 neg = _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ);
  if (pdf) *pdf = _mm256_mul_ps(e, _mm256_set1_ps(0.39894228040143267794f));
  return _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(1.0f), half_tail), half_tail, neg);
}

static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// All-ones in lanes [0, n), zero above (n ≥ 8: every lane): the mask of VMASKMOV.
static inline __m256i lanes_below(int64_t n) {
  const int32_t k = n >= 8 ? 8 : (n <= 0 ? 0 : int32_t(n));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// fp32 → bf16 bits, round to nearest even, NaN kept quiet: rc::f32_to_bf16 on 8 lanes
// (the integer rounding of neon::f32_to_bf16_rne; AVX2 has no VCVTNEPS2BF16).
static inline __m128i f32_to_bf16_rne(__m256 v) {
  const __m256i b = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(b, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i nan =
      _mm256_cmpgt_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(0x40));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

static inline __m256 bf16_to_f32(__m128i h) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

namespace {

// The vector operations of the ISA-shared kernel bodies (kernels/cpu/simd_*.inc) on 8 fp32
// lanes: the twin of avx512/vec_math.h's and neon/vec_math.h's Simd, so the bodies are written
// once and only the intrinsics differ. In an anonymous namespace: each TU that includes it gets
// its own copy, compiled with its own flags (no ODR merge across ISAs).
struct Simd {
  using V = __m256;
  using Tail = int64_t;  // the number of lanes a partial vector covers, 0 to 8
  static constexpr int64_t kWidth = 8;
  // Vectors per row of the attention micro-GEMM tile: 4 rows × 2 vectors = 8 accumulators,
  // which with the B loads and the broadcast fit AVX2's 16 registers (4 × 4 would spill).
  static constexpr int kTileVectors = 2;

  static Tail tail(int64_t left) { return left <= 0 ? 0 : (left >= 8 ? 8 : left); }
  static bool any(Tail t) { return t != 0; }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load(const float* p, Tail t) {  // padding lanes 0
    return t >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes_below(t));
  }
  static V load_or(const float* p, Tail t, float fill) {
    if (t >= 8) return _mm256_loadu_ps(p);
    const __m256i m = lanes_below(t);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static void store(float* p, V v, Tail t) {
    if (t >= 8)
      _mm256_storeu_ps(p, v);
    else
      _mm256_maskstore_ps(p, lanes_below(t), v);
  }
  static V keep(V v, Tail t) { return t >= 8 ? v : _mm256_and_ps(v, _mm256_castsi256_ps(lanes_below(t))); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V zero() { return _mm256_setzero_ps(); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  // a - b in the tail's lanes; the padding lanes are 0 here, as on AVX-512.
  static V sub_tail(V a, V b, Tail t) { return keep(_mm256_sub_ps(a, b), t); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V sqrt(V a) { return _mm256_sqrt_ps(a); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }  // a·b + c, one rounding
  static float sum(V v) { return hsum(v); }
  static float max_of(V v) { return hmax(v); }
  static V exp(V x) { return exp_ps(x); }
  static V normal_cdf(V x, V* pdf) { return normal_cdf_pdf(x, pdf); }
};

}  // namespace

}  // namespace rc::kernels::cpu::avx2

#endif  // __x86_64__
