// AVX-512 per-row int8 quantisation (kernels/linear.h).  Same formula as the reference:
// amax by max of |x|, inv = 127 / amax, q = cvtps2dq(x · inv) (round-half-even under the default
// MXCSR), saturating pack to int8.
#if defined(__x86_64__)

// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own _mm512_undefined_*() (a known
// false positive); RC_WERROR builds would fail on it.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/avx512/avx512_kernels.h"
#include "kernels/cpu/avx512/vec_math.h"

namespace rc::kernels::cpu::avx512 {

namespace {

inline __mmask16 tail(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }

inline __m512 load_f32(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
inline __m512 load_bf16(const uint16_t* p, __mmask16 m) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

template <class T, class Load>
void quantize_rows(int8_t* q, float* scale, const T* x, int64_t M, int64_t K, Load load) noexcept {
// Serial below ~128k elements (all of a 1×32 forward): a parallel region costs more than the
// work there, and far more when a neighbour holds the cores.
#pragma omp parallel for schedule(static) if (M * K >= (1 << 17))
  for (int64_t m = 0; m < M; ++m) {
    const T* xm = x + m * K;
    __m512 vmax = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k += 16) vmax = _mm512_max_ps(vmax, _mm512_abs_ps(load(xm + k, tail(K - k))));
    const float amax = _mm512_reduce_max_ps(vmax);
    const float inv = amax > 0.0f ? 127.0f / amax : 1.0f;
    scale[m] = amax > 0.0f ? amax / 127.0f : 1.0f;
    const __m512 vinv = _mm512_set1_ps(inv);
    int8_t* qm = q + m * K;
    for (int64_t k = 0; k < K; k += 16) {
      const __mmask16 t = tail(K - k);
      const __m512i i = _mm512_cvtps_epi32(_mm512_mul_ps(load(xm + k, t), vinv));
      _mm_mask_storeu_epi8(qm + k, t, _mm512_cvtsepi32_epi8(i));
    }
  }
}

}  // namespace

// The entry points are the same two lines as neon/quantize.cpp's (a `duplicates` shape pair,
// left on purpose): each only names this TU's quantize_rows, whose bodies differ.
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
    const __m512 vxs = _mm512_set1_ps(xs[m]);
    for (int64_t n = 0; n < N; n += 16) {
      const __mmask16 t = tail(N - n);
      const __m512 a = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(t, acc + m * N + n));
      const __m512 s = _mm512_mul_ps(vxs, _mm512_maskz_loadu_ps(t, ws + n));
      __m512 v = _mm512_mul_ps(s, a);
      if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(t, bias + n));
      if (gelu) {
        __m512 cdf;
        normal_cdf_pdf(v, &cdf, nullptr);
        v = _mm512_mul_ps(v, cdf);
      }
      if (yf) {
        _mm512_mask_storeu_ps(yf + m * N + n, t, v);
      } else {
        // Round to nearest even on the bit pattern (finite values only: ours are).
        const __m512i b = _mm512_castps_si512(v);
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
        const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
        _mm256_mask_storeu_epi16(yb + m * N + n, t, _mm512_cvtepi32_epi16(r));
      }
    }
  }
}

}  // namespace rc::kernels::cpu::avx512

#endif  // __x86_64__
