// NEON LayerNorm, GELU (erf), AdamW and fp32→bf16 conversion. Same contracts and split over
// threads as the generic versions in kernels/cpu/*.cpp; 4 lanes × 4 accumulators, scalar-free
// tails through zero-padded partial loads.
#if defined(__aarch64__)

#include <arm_neon.h>

#include <cmath>
#include <cstdint>

#include "kernels/cpu/neon/neon_kernels.h"
#include "kernels/cpu/neon/vec_math.h"

namespace rc::kernels::cpu::neon {

namespace {

constexpr int64_t kParallelMin = 1 << 14;

inline float32x4_t load(const float* p, int64_t left) { return left >= 4 ? vld1q_f32(p) : load_partial(p, left); }
inline void store(float* p, float32x4_t v, int64_t left) {
  if (left >= 4)
    vst1q_f32(p, v);
  else
    store_partial(p, v, left);
}

// y = (s - μ)·rstd·γ + β over one row, s = x (+ residual, stored to sum when given).
inline void ln_row(float* y, float* mean, float* rstd, const float* x, const float* residual, float* sum,
                   const float* gamma, const float* beta, int64_t C, float eps) {
  const float* s = x;
  if (residual) {
    for (int64_t c = 0; c < C; c += 4) store(sum + c, vaddq_f32(load(x + c, C - c), load(residual + c, C - c)), C - c);
    s = sum;
  }
  // One summation order with or without the residual, so both entry points agree bit for bit.
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
  int64_t c = 0;
  for (; c + 16 <= C; c += 16) {
    a0 = vaddq_f32(a0, vld1q_f32(s + c));
    a1 = vaddq_f32(a1, vld1q_f32(s + c + 4));
    a2 = vaddq_f32(a2, vld1q_f32(s + c + 8));
    a3 = vaddq_f32(a3, vld1q_f32(s + c + 12));
  }
  for (; c < C; c += 4) a0 = vaddq_f32(a0, load(s + c, C - c));
  const float mu = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3))) / float(C);
  const float32x4_t vmu = vdupq_n_f32(mu);
  float32x4_t v0 = vdupq_n_f32(0.0f), v1 = v0;
  c = 0;
  for (; c + 8 <= C; c += 8) {
    const float32x4_t d0 = vsubq_f32(vld1q_f32(s + c), vmu), d1 = vsubq_f32(vld1q_f32(s + c + 4), vmu);
    v0 = vfmaq_f32(v0, d0, d0);
    v1 = vfmaq_f32(v1, d1, d1);
  }
  for (; c < C; ++c) {
    const float d = s[c] - mu;
    v0 = vsetq_lane_f32(vgetq_lane_f32(v0, 0) + d * d, v0, 0);
  }
  const float rs = 1.0f / std::sqrt(vaddvq_f32(vaddq_f32(v0, v1)) / float(C) + eps);
  const float32x4_t vrs = vdupq_n_f32(rs);
  for (c = 0; c < C; c += 4) {
    const float32x4_t xh = vmulq_f32(vsubq_f32(load(s + c, C - c), vmu), vrs);
    store(y + c, vfmaq_f32(load(beta + c, C - c), xh, load(gamma + c, C - c)), C - c);
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
  // Parameter gradients first (dx may alias dy): 16-column chunks per task, summed in registers
  // over all rows and added once.
  const int64_t chunks = (C + 15) / 16;
#pragma omp parallel for schedule(static) if (N * C >= kParallelMin)
  for (int64_t ch = 0; ch < chunks; ++ch) {
    const int64_t c0 = ch * 16, w = C - c0 < 16 ? C - c0 : 16;
    float32x4_t sg[4], sb[4];
    for (int u = 0; u < 4; ++u) sg[u] = sb[u] = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < N; ++i) {
      const float32x4_t mu = vdupq_n_f32(mean[i]), rs = vdupq_n_f32(rstd[i]);
      const float* dyi = dy + i * C + c0;
      const float* xi = x + i * C + c0;
      for (int u = 0; u < 4 && 4 * u < w; ++u) {
        const float32x4_t d = load(dyi + 4 * u, w - 4 * u);
        const float32x4_t xh = vmulq_f32(vsubq_f32(load(xi + 4 * u, w - 4 * u), mu), rs);
        sg[u] = vfmaq_f32(sg[u], d, xh);
        sb[u] = vaddq_f32(sb[u], d);
      }
    }
    for (int u = 0; u < 4 && 4 * u < w; ++u) {
      float* g = dgamma + c0 + 4 * u;
      float* b = dbeta + c0 + 4 * u;
      store(g, vaddq_f32(load(g, w - 4 * u), sg[u]), w - 4 * u);
      store(b, vaddq_f32(load(b, w - 4 * u), sb[u]), w - 4 * u);
    }
  }
#pragma omp parallel for schedule(static) if (N * C >= kParallelMin)
  for (int64_t i = 0; i < N; ++i) {
    const float* xi = x + i * C;
    const float* dyi = dy + i * C;
    const float32x4_t mu = vdupq_n_f32(mean[i]), rs = vdupq_n_f32(rstd[i]);
    float32x4_t sg = vdupq_n_f32(0.0f), sgx = sg;
    for (int64_t c = 0; c < C; c += 4) {
      // Padding lanes: dy = 0 there, so g = 0 and they add nothing.
      const float32x4_t g = vmulq_f32(load(dyi + c, C - c), load(gamma + c, C - c));
      const float32x4_t xh = vmulq_f32(vsubq_f32(load(xi + c, C - c), mu), rs);
      sg = vaddq_f32(sg, g);
      sgx = vfmaq_f32(sgx, g, xh);
    }
    const float32x4_t g_mean = vdupq_n_f32(vaddvq_f32(sg) / float(C));
    const float32x4_t gx_mean = vdupq_n_f32(vaddvq_f32(sgx) / float(C));
    float* dxi = dx + i * C;
    for (int64_t c = 0; c < C; c += 4) {
      const float32x4_t g = vmulq_f32(load(dyi + c, C - c), load(gamma + c, C - c));
      const float32x4_t xh = vmulq_f32(vsubq_f32(load(xi + c, C - c), mu), rs);
      const float32x4_t r = vsubq_f32(vsubq_f32(g, g_mean), vmulq_f32(xh, gx_mean));
      store(dxi + c, vmulq_f32(rs, r), C - c);
    }
  }
}

void gelu_erf_forward(float* y, const float* x, int64_t n) noexcept {
  const int64_t blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i = blk * 4;
    const float32x4_t v = load(x + i, n - i);
    store(y + i, vmulq_f32(v, normal_cdf_pdf(v, nullptr)), n - i);
  }
}

void gelu_erf_backward(float* dx, const float* dy, const float* x, int64_t n) noexcept {
  const int64_t blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i = blk * 4;
    const float32x4_t v = load(x + i, n - i);
    float32x4_t pdf;
    const float32x4_t cdf = normal_cdf_pdf(v, &pdf);
    store(dx + i, vmulq_f32(load(dy + i, n - i), vfmaq_f32(cdf, v, pdf)), n - i);
  }
}

void adamw_step(float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                int64_t num_segments, const AdamWHyper& h) noexcept {
  const double bc1 = 1.0 - std::pow(double(h.beta1), double(h.step));
  const double bc2 = 1.0 - std::pow(double(h.beta2), double(h.step));
  const float32x4_t step_size = vdupq_n_f32(float(double(h.lr) / bc1)), bc2_sqrt = vdupq_n_f32(float(std::sqrt(bc2)));
  const float32x4_t b1 = vdupq_n_f32(h.beta1), b2 = vdupq_n_f32(h.beta2), omb1 = vdupq_n_f32(1.0f - h.beta1),
                    omb2 = vdupq_n_f32(1.0f - h.beta2), eps = vdupq_n_f32(h.eps), gs = vdupq_n_f32(h.grad_scale);
  for (int64_t s = 0; s < num_segments; ++s) {
    const int64_t off = segments[s].offset, n = segments[s].n;
    const float32x4_t decay =
        vdupq_n_f32(segments[s].decay ? float(1.0 - double(h.lr) * double(h.weight_decay)) : 1.0f);
    float* p = params + off;
    const float* g = grads + off;
    float* mm = m + off;
    float* vv = v + off;
    const int64_t blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static) if (n >= (1 << 15))
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t i = blk * 4, left = n - i;
      const float32x4_t gi = vmulq_f32(load(g + i, left), gs);
      // Same operation order as the generic path and torch (see kernels/cpu/optimizer.cpp).
      const float32x4_t mi = vaddq_f32(vmulq_f32(b1, load(mm + i, left)), vmulq_f32(omb1, gi));
      const float32x4_t vi = vaddq_f32(vmulq_f32(b2, load(vv + i, left)), vmulq_f32(vmulq_f32(omb2, gi), gi));
      const float32x4_t denom = vaddq_f32(vdivq_f32(vsqrtq_f32(vi), bc2_sqrt), eps);
      const float32x4_t pi = vmulq_f32(load(p + i, left), decay);
      store(mm + i, mi, left);
      store(vv + i, vi, left);
      store(p + i, vsubq_f32(pi, vmulq_f32(step_size, vdivq_f32(mi, denom))), left);
    }
  }
}

void convert_f32_to_bf16(uint16_t* dst, const float* src, int64_t n) noexcept {
  const int64_t blocks = n / 8;
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t i = blk * 8;
    vst1q_u16(dst + i, vcombine_u16(f32_to_bf16_rne(vld1q_f32(src + i)), f32_to_bf16_rne(vld1q_f32(src + i + 4))));
  }
  for (int64_t i = blocks * 8; i < n; i += 4) {
    uint16_t b[4];
    vst1_u16(b, f32_to_bf16_rne(load(src + i, n - i)));
    for (int64_t k = 0; k < 4 && i + k < n; ++k) dst[i + k] = b[k];
  }
}

}  // namespace rc::kernels::cpu::neon

#endif  // __aarch64__
