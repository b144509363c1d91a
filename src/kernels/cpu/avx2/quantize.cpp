// AVX2 per-row int8 quantisation (kernels/linear.h). Same formula as the reference: amax by max
// of |x|, inv = 127 / amax, q = cvtps2dq(x · inv) (round-half-even under the default MXCSR),
// saturating packs to int8. And the dequantise (+ bias, + GELU) epilogue of the int8 GEMM.
#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/avx2/avx2_kernels.h"
#include "kernels/cpu/avx2/vec_math.h"

namespace rc::kernels::cpu::avx2 {

namespace {

inline __m256 load_f32(const float* p, int64_t n) { return Simd::load(p, Simd::tail(n)); }
inline __m256 load_bf16(const uint16_t* p, int64_t n) {
  if (n >= 8) return bf16_to_f32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  alignas(16) uint16_t b[8] = {};
  for (int64_t i = 0; i < n; ++i) b[i] = p[i];
  return bf16_to_f32(_mm_load_si128(reinterpret_cast<const __m128i*>(b)));
}

// 8 int32 → 8 int8 with signed saturation (as VPMOVSDB), in the low 8 bytes.
inline __m128i pack_s8(__m256i i) {
  const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
  return _mm_packs_epi16(w, w);
}

template <class T, class Load>
void quantize_rows(int8_t* q, float* scale, const T* x, int64_t M, int64_t K, Load load) noexcept {
// Serial below ~128k elements (all of a 1×32 forward): a parallel region costs more than the
// work there, and far more when a neighbour holds the cores.
#pragma omp parallel for schedule(static) if (M * K >= (1 << 17))
  for (int64_t m = 0; m < M; ++m) {
    const T* xm = x + m * K;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 vmax = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; k += 8) vmax = _mm256_max_ps(vmax, _mm256_and_ps(abs_mask, load(xm + k, K - k)));
    const float amax = hmax(vmax);
    const float inv = amax > 0.0f ? 127.0f / amax : 1.0f;
    scale[m] = amax > 0.0f ? amax / 127.0f : 1.0f;
    const __m256 vinv = _mm256_set1_ps(inv);
    int8_t* qm = q + m * K;
    int64_t k = 0;
    for (; k + 8 <= K; k += 8)
      _mm_storel_epi64(reinterpret_cast<__m128i*>(qm + k),
                       pack_s8(_mm256_cvtps_epi32(_mm256_mul_ps(load(xm + k, 8), vinv))));
    if (k < K) {
      alignas(16) int8_t b[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(b),
                      pack_s8(_mm256_cvtps_epi32(_mm256_mul_ps(load(xm + k, K - k), vinv))));
      for (int64_t i = 0; k + i < K; ++i) qm[k + i] = b[i];
    }
  }
}

}  // namespace

// The entry points are the same two lines as avx512/ and neon/quantize.cpp's (a `duplicates`
// shape pair, left on purpose): each only names this TU's quantize_rows, whose bodies differ.
void quantize_rows_s8(int8_t* q, float* scale, const float* x, int64_t M, int64_t K) noexcept {
  quantize_rows(q, scale, x, M, K, load_f32);
}
void quantize_rows_s8_bf16(int8_t* q, float* scale, const uint16_t* x, int64_t M, int64_t K) noexcept {
  quantize_rows(q, scale, x, M, K, load_bf16);
}

void dequantize_rows(float* yf, uint16_t* yb, const int32_t* acc, const float* xs, const float* ws, const float* bias,
                     int64_t M, int64_t N, bool gelu) noexcept {
#pragma omp parallel for schedule(static) if (M * N >= (1 << 17))
  for (int64_t m = 0; m < M; ++m) {
    const __m256 vxs = _mm256_set1_ps(xs[m]);
    for (int64_t n = 0; n < N; n += 8) {
      const Simd::Tail t = Simd::tail(N - n);
      const __m256i am = lanes_below(t);
      const __m256 a = _mm256_cvtepi32_ps(_mm256_maskload_epi32(acc + m * N + n, am));
      __m256 v = _mm256_mul_ps(_mm256_mul_ps(vxs, Simd::load(ws + n, t)), a);
      if (bias) v = _mm256_add_ps(v, Simd::load(bias + n, t));
      if (gelu) v = _mm256_mul_ps(v, normal_cdf_pdf(v, nullptr));
      if (yf) {
        Simd::store(yf + m * N + n, v, t);
      } else {
        const __m128i h = f32_to_bf16_rne(v);
        if (t >= 8) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(yb + m * N + n), h);
        } else {
          alignas(16) uint16_t b[8];
          _mm_store_si128(reinterpret_cast<__m128i*>(b), h);
          for (int64_t i = 0; i < t; ++i) yb[m * N + n + i] = b[i];
        }
      }
    }
  }
}

}  // namespace rc::kernels::cpu::avx2

#endif  // __x86_64__
