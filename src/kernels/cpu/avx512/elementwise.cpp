// AVX-512 LayerNorm, GELU (erf), AdamW and fp32→bf16 conversion.  Same contracts and split
// over threads as the generic versions in kernels/cpu/*.cpp; tails by masked loads/stores.
#if defined(__x86_64__)

// GCC 12 flags the _mm512_undefined_ps() inside its own masked intrinsics (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "kernels/cpu/avx512/avx512_kernels.h"
#include "kernels/cpu/avx512/vec_math.h"

namespace rc::kernels::cpu::avx512 {

namespace {

constexpr int64_t kParallelMin = 1 << 14;

// y = (s - μ)·rstd·γ + β over one row, s = x (+ residual, stored to sum when given).
inline void ln_row(float* y, float* mean, float* rstd, const float* x, const float* residual, float* sum,
                   const float* gamma, const float* beta, int64_t C, float eps) {
  const float* s = x;
  __m512 acc = _mm512_setzero_ps();
  if (residual) {
    for (int64_t c = 0; c < C; c += 16) {
      const __mmask16 m = tail_mask(C - c);
      const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, x + c), _mm512_maskz_loadu_ps(m, residual + c));
      _mm512_mask_storeu_ps(sum + c, m, v);
      acc = _mm512_add_ps(acc, v);
    }
    s = sum;
  } else {
    for (int64_t c = 0; c < C; c += 16) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(tail_mask(C - c), x + c));
  }
  const float mu = hsum(acc) / float(C);
  const __m512 vmu = _mm512_set1_ps(mu);
  __m512 var = _mm512_setzero_ps();
  for (int64_t c = 0; c < C; c += 16) {
    const __mmask16 m = tail_mask(C - c);
    const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, s + c), vmu);
    var = _mm512_fmadd_ps(d, d, var);
  }
  const float rs = 1.0f / std::sqrt(hsum(var) / float(C) + eps);
  const __m512 vrs = _mm512_set1_ps(rs);
  for (int64_t c = 0; c < C; c += 16) {
    const __mmask16 m = tail_mask(C - c);
    const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + c), vmu), vrs);
    _mm512_mask_storeu_ps(y + c, m,
                          _mm512_fmadd_ps(xh, _mm512_maskz_loadu_ps(m, gamma + c), _mm512_maskz_loadu_ps(m, beta + c)));
  }
  if (mean) *mean = mu;
  if (rstd) *rstd = rs;
}

}  // namespace

void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps) noexcept {
#pragma omp parallel for schedule(static) if (N * C >= kParallelMin)
  for (int64_t i = 0; i < N; ++i)
    ln_row(y + i * C, mean ? mean + i : nullptr, rstd ? rstd + i : nullptr, x + i * C, nullptr, nullptr, gamma, beta, C,
           eps);
}

void add_layernorm_forward(float* y, float* sum, float* mean, float* rstd, const float* x, const float* residual,
                           const float* gamma, const float* beta, int64_t N, int64_t C, float eps) noexcept {
#pragma omp parallel for schedule(static) if (N * C >= kParallelMin)
  for (int64_t i = 0; i < N; ++i)
    ln_row(y + i * C, mean ? mean + i : nullptr, rstd ? rstd + i : nullptr, x + i * C, residual + i * C, sum + i * C,
           gamma, beta, C, eps);
}

void layernorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x, const float* gamma,
                        const float* mean, const float* rstd, int64_t N, int64_t C) noexcept {
  // Parameter gradients first (dx may alias dy): 64-column chunks per thread, summed in
  // registers over all rows and added once.
#pragma omp parallel for schedule(static) if (N * C >= kParallelMin)
  for (int64_t c0 = 0; c0 < C; c0 += 64) {
    __m512 sg[4], sb[4];
    __mmask16 mk[4];
    for (int u = 0; u < 4; ++u) {
      sg[u] = sb[u] = _mm512_setzero_ps();
      mk[u] = c0 + 16 * u < C ? tail_mask(C - c0 - 16 * u) : __mmask16(0);
    }
    for (int64_t i = 0; i < N; ++i) {
      const __m512 mu = _mm512_set1_ps(mean[i]), rs = _mm512_set1_ps(rstd[i]);
      const float* dyi = dy + i * C + c0;
      const float* xi = x + i * C + c0;
      for (int u = 0; u < 4; ++u) {
        const __m512 d = _mm512_maskz_loadu_ps(mk[u], dyi + 16 * u);
        const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk[u], xi + 16 * u), mu), rs);
        sg[u] = _mm512_fmadd_ps(d, xh, sg[u]);
        sb[u] = _mm512_add_ps(sb[u], d);
      }
    }
    for (int u = 0; u < 4; ++u) {
      float* g = dgamma + c0 + 16 * u;
      float* b = dbeta + c0 + 16 * u;
      _mm512_mask_storeu_ps(g, mk[u], _mm512_add_ps(_mm512_maskz_loadu_ps(mk[u], g), sg[u]));
      _mm512_mask_storeu_ps(b, mk[u], _mm512_add_ps(_mm512_maskz_loadu_ps(mk[u], b), sb[u]));
    }
  }
#pragma omp parallel for schedule(static) if (N * C >= kParallelMin)
  for (int64_t i = 0; i < N; ++i) {
    const float* xi = x + i * C;
    const float* dyi = dy + i * C;
    const __m512 mu = _mm512_set1_ps(mean[i]), rs = _mm512_set1_ps(rstd[i]);
    __m512 sg = _mm512_setzero_ps(), sgx = _mm512_setzero_ps();
    for (int64_t c = 0; c < C; c += 16) {
      const __mmask16 m = tail_mask(C - c);
      const __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, dyi + c), _mm512_maskz_loadu_ps(m, gamma + c));
      const __m512 xh = _mm512_mul_ps(_mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, xi + c), mu), rs);
      sg = _mm512_add_ps(sg, g);
      sgx = _mm512_fmadd_ps(g, xh, sgx);
    }
    const __m512 g_mean = _mm512_set1_ps(hsum(sg) / float(C)), gx_mean = _mm512_set1_ps(hsum(sgx) / float(C));
    float* dxi = dx + i * C;
    for (int64_t c = 0; c < C; c += 16) {
      const __mmask16 m = tail_mask(C - c);
      const __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, dyi + c), _mm512_maskz_loadu_ps(m, gamma + c));
      const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, xi + c), mu), rs);
      const __m512 r = _mm512_sub_ps(_mm512_sub_ps(g, g_mean), _mm512_mul_ps(xh, gx_mean));
      _mm512_mask_storeu_ps(dxi + c, m, _mm512_mul_ps(rs, r));
    }
  }
}

void gelu_erf_forward(float* y, const float* x, int64_t n) noexcept {
  const int64_t blocks = (n + 15) / 16;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i = blk * 16;
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __m512 cdf;
    normal_cdf_pdf(v, &cdf, nullptr);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(v, cdf));
  }
}

void gelu_erf_backward(float* dx, const float* dy, const float* x, int64_t n) noexcept {
  const int64_t blocks = (n + 15) / 16;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i = blk * 16;
    const __mmask16 m = tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __m512 cdf, pdf;
    normal_cdf_pdf(v, &cdf, &pdf);
    const __m512 grad = _mm512_fmadd_ps(v, pdf, cdf);
    _mm512_mask_storeu_ps(dx + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, dy + i), grad));
  }
}

void adamw_step(float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                int64_t num_segments, const AdamWHyper& h) noexcept {
  const double bc1 = 1.0 - std::pow(double(h.beta1), double(h.step));
  const double bc2 = 1.0 - std::pow(double(h.beta2), double(h.step));
  const __m512 step_size = _mm512_set1_ps(float(double(h.lr) / bc1)), bc2_sqrt = _mm512_set1_ps(float(std::sqrt(bc2)));
  const __m512 b1 = _mm512_set1_ps(h.beta1), b2 = _mm512_set1_ps(h.beta2), omb1 = _mm512_set1_ps(1.0f - h.beta1),
               omb2 = _mm512_set1_ps(1.0f - h.beta2), eps = _mm512_set1_ps(h.eps), gs = _mm512_set1_ps(h.grad_scale);
  for (int64_t s = 0; s < num_segments; ++s) {
    const int64_t off = segments[s].offset, n = segments[s].n;
    const __m512 decay = _mm512_set1_ps(segments[s].decay ? float(1.0 - double(h.lr) * double(h.weight_decay)) : 1.0f);
    float* p = params + off;
    const float* g = grads + off;
    float* mm = m + off;
    float* vv = v + off;
    const int64_t blocks = (n + 15) / 16;
#pragma omp parallel for schedule(static) if (n >= (1 << 15))
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t i = blk * 16;
      const __mmask16 k = tail_mask(n - i);
      const __m512 gi = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, g + i), gs);
      // Same operation order as the generic path and torch (see kernels/cpu/optimizer.cpp).
      const __m512 mi = _mm512_add_ps(_mm512_mul_ps(b1, _mm512_maskz_loadu_ps(k, mm + i)), _mm512_mul_ps(omb1, gi));
      const __m512 vi = _mm512_add_ps(_mm512_mul_ps(b2, _mm512_maskz_loadu_ps(k, vv + i)),
                                      _mm512_mul_ps(_mm512_mul_ps(omb2, gi), gi));
      const __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), bc2_sqrt), eps);
      const __m512 pi = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, p + i), decay);
      _mm512_mask_storeu_ps(mm + i, k, mi);
      _mm512_mask_storeu_ps(vv + i, k, vi);
      _mm512_mask_storeu_ps(p + i, k, _mm512_sub_ps(pi, _mm512_mul_ps(step_size, _mm512_div_ps(mi, denom))));
    }
  }
}

void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n) noexcept {
  const int64_t blocks = (n + 15) / 16;
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i = blk * 16;
    const __mmask16 m = tail_mask(n - i);
    const __m256bh b = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + i));
    _mm256_mask_storeu_epi16(dst + i, m, reinterpret_cast<__m256i>(b));
  }
}

}  // namespace rc::kernels::cpu::avx512

#endif  // __x86_64__
