// AVX512-BF16 attention on bf16 Q/K/V (kernels/attention_bf16.h). Per (b, h): K and V are
// re-laid once into the pair-interleaved form vdpbf16ps reads (K: [D/2][keys] dwords, each the
// bf16 pair (k[j][2t], k[j][2t+1]); V: [keys/2][D] dwords, the pair (v[2u][d], v[2u+1][d])),
// so a query's scores for 16 keys take D/2 dot-product instructions on a broadcast q pair, and
// an output row takes L/2 × D/16 on a broadcast probability pair; no horizontal sums. The
// re-layout costs L·D per head against L²·D of products. Softmax in fp32; P rounded to bf16
// (round to nearest even, as the portable path) for P·V.
#if defined(__x86_64__)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/cpu/avx512/attention_bf16.h"

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/avx512/vec_math.h"

namespace rc::kernels::cpu::avx512 {

namespace {

inline uint32_t pair(uint16_t lo, uint16_t hi) { return uint32_t(lo) | (uint32_t(hi) << 16); }

template <class T>
T* grow(std::vector<T>& v, int64_t n) {
  if (int64_t(v.size()) < n) v.resize(size_t(n));
  return v.data();
}

// DV = D / 16 output vectors, a constant so that the accumulators stay in registers.
template <int DV>
void head(uint16_t* out, const uint16_t* qkv, int64_t b, int64_t h, int64_t L, int64_t T, int64_t H) noexcept {
  constexpr int64_t D = 16 * DV, D2 = D / 2;
  const int64_t C = H * D, C3 = 3 * C;
  for (int64_t i = L; i < T; ++i)
    for (int64_t d = 0; d < D; ++d) out[(b * T + i) * C + h * D + d] = 0;
  if (L == 0) return;
  thread_local std::vector<uint32_t> kp_buf, vp_buf, pp_buf;
  thread_local std::vector<float> row_buf;
  // Keys padded to whole groups of 64 (four 16-key score vectors in flight: vdpbf16ps has a
  // latency of several cycles, one accumulator chain would idle the unit).
  const int64_t Lp = (L + 63) / 64 * 64;
  uint32_t* kp = grow(kp_buf, D2 * Lp);
  uint32_t* vp = grow(vp_buf, Lp / 2 * D);
  uint32_t* pp = grow(pp_buf, Lp / 2);
  uint32_t qp[D2];
  float* row = grow(row_buf, Lp);
  const uint16_t* kbase = qkv + b * T * C3 + C + h * D;
  const uint16_t* vbase = qkv + b * T * C3 + 2 * C + h * D;
  for (int64_t j = 0; j < Lp; ++j) {
    if (j < L) {
      std::memcpy(qp, kbase + j * C3, sizeof(qp));  // k's bf16 pairs as dwords
      for (int64_t t = 0; t < D2; ++t) kp[t * Lp + j] = qp[t];
    } else {
      for (int64_t t = 0; t < D2; ++t) kp[t * Lp + j] = 0u;
    }
  }
  for (int64_t u = 0; u < Lp / 2; ++u) {  // 16 (v[2u][d], v[2u+1][d]) pairs per step
    const int64_t j0 = 2 * u, j1 = 2 * u + 1;
    for (int64_t d = 0; d < D; d += 16) {
      const __m512i lo = j0 < L ? _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(vbase + j0 * C3 + d)))
                                : _mm512_setzero_si512();
      const __m512i hi = j1 < L ? _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(vbase + j1 * C3 + d)))
                                : _mm512_setzero_si512();
      _mm512_storeu_si512(vp + u * D + d, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
  }
  const __m512 vscale = _mm512_set1_ps(1.0f / std::sqrt(float(D)));
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int64_t i = 0; i < L; ++i) {
    std::memcpy(qp, qkv + (b * T + i) * C3 + h * D, sizeof(qp));
    __m512 vmax = ninf;
    for (int64_t j0 = 0; j0 < Lp; j0 += 64) {
      __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
      for (int64_t t = 0; t < D2; ++t) {
        const __m512bh qt = (__m512bh)_mm512_set1_epi32(int(qp[t]));
        const uint32_t* k = kp + t * Lp + j0;
        for (int g = 0; g < 4; ++g) acc[g] = _mm512_dpbf16_ps(acc[g], (__m512bh)_mm512_loadu_si512(k + 16 * g), qt);
      }
      for (int g = 0; g < 4; ++g) {
        const int64_t jg = j0 + 16 * g;
        const __mmask16 real =
            _mm512_cmplt_epi32_mask(_mm512_add_epi32(lane, _mm512_set1_epi32(int(jg))), _mm512_set1_epi32(int(L)));
        const __m512 sc = _mm512_mask_blend_ps(real, ninf, _mm512_mul_ps(acc[g], vscale));
        _mm512_storeu_ps(row + jg, sc);
        vmax = _mm512_max_ps(vmax, sc);
      }
    }
    const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
    __m512 vsum = _mm512_setzero_ps();
    for (int64_t j0 = 0; j0 < Lp; j0 += 16) {
      const __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(row + j0), mx));  // masked: exp(-inf) = 0
      _mm512_storeu_ps(row + j0, e);
      vsum = _mm512_add_ps(vsum, e);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
    for (int64_t j0 = 0; j0 < Lp; j0 += 32) {
      const __m512bh p = _mm512_cvtne2ps_pbh(_mm512_mul_ps(_mm512_loadu_ps(row + j0 + 16), inv),
                                             _mm512_mul_ps(_mm512_loadu_ps(row + j0), inv));
      _mm512_storeu_si512(pp + j0 / 2, (__m512i)p);
    }
    // Two accumulator sets (even / odd key pairs) for the same latency reason; pp is 0 past L.
    __m512 acc[2][16];
    for (int64_t c = 0; c < DV; ++c) acc[0][c] = acc[1][c] = _mm512_setzero_ps();
    const int64_t pairs = (L + 3) / 4 * 2;
    for (int64_t u = 0; u < pairs; u += 2)
      for (int s = 0; s < 2; ++s) {
        const __m512bh pu = (__m512bh)_mm512_set1_epi32(int(pp[u + s]));
        const uint32_t* v = vp + (u + s) * D;
        for (int64_t c = 0; c < DV; ++c)
          acc[s][c] = _mm512_dpbf16_ps(acc[s][c], (__m512bh)_mm512_loadu_si512(v + 16 * c), pu);
      }
    uint16_t* o = out + (b * T + i) * C + h * D;
    for (int64_t c = 0; c < DV; ++c)
      _mm256_storeu_si256((__m256i*)(o + 16 * c), (__m256i)_mm512_cvtneps_pbh(_mm512_add_ps(acc[0][c], acc[1][c])));
  }
}

}  // namespace

void attention_forward_bf16(uint16_t* out, const uint16_t* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                            int64_t H, int64_t D) noexcept {
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) switch (D) {
        case 16:
          head<1>(out, qkv, b, h, seq_lens[b], T, H);
          break;
        case 32:
          head<2>(out, qkv, b, h, seq_lens[b], T, H);
          break;
        case 64:
          head<4>(out, qkv, b, h, seq_lens[b], T, H);
          break;
        case 128:
          head<8>(out, qkv, b, h, seq_lens[b], T, H);
          break;
        default:
          head<16>(out, qkv, b, h, seq_lens[b], T, H);
          break;  // D = 256 (the caller checks D)
      }
}

}  // namespace rc::kernels::cpu::avx512

#endif  // __x86_64__
