// CPU AdamW: one pass over params, grads, m, v (each read once, three written once), in fp32
// with the bias corrections computed once in double, as torch does in Python.
#include <cmath>
#include <cstdint>

#include "kernels/cpu/avx2/avx2_kernels.h"
#include "kernels/cpu/avx512/avx512_kernels.h"
#include "kernels/cpu/neon/neon_kernels.h"
#include "kernels/cpu/cpu_kernels.h"

namespace rc::kernels::cpu {

namespace generic {

void adamw_step(float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                int64_t num_segments, const AdamWHyper& h) noexcept {
  const double bc1 = 1.0 - std::pow(double(h.beta1), double(h.step));
  const double bc2 = 1.0 - std::pow(double(h.beta2), double(h.step));
  const float step_size = float(double(h.lr) / bc1);
  const float bc2_sqrt = float(std::sqrt(bc2));
  const float b1 = h.beta1, b2 = h.beta2, omb1 = 1.0f - h.beta1, omb2 = 1.0f - h.beta2, eps = h.eps;
  const float gs = h.grad_scale;
  for (int64_t s = 0; s < num_segments; ++s) {
    const int64_t off = segments[s].offset, n = segments[s].n;
    const float decay = segments[s].decay ? float(1.0 - double(h.lr) * double(h.weight_decay)) : 1.0f;
    float* p = params + off;
    const float* g = grads + off;
    float* mm = m + off;
    float* vv = v + off;
#pragma omp parallel for schedule(static) if (n >= (1 << 15))
    for (int64_t i = 0; i < n; ++i) {
      const float gi = g[i] * gs;
      const float mi = b1 * mm[i] + omb1 * gi;
      const float vi = b2 * vv[i] + omb2 * gi * gi;
      mm[i] = mi;
      vv[i] = vi;
      // The same operation order as torch: denom = √v / √bc2 + ε;  p += -step · (m / denom).
      p[i] = p[i] * decay - step_size * (mi / (std::sqrt(vi) / bc2_sqrt + eps));
    }
  }
}

}  // namespace generic

void adamw_step(float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                int64_t num_segments, const AdamWHyper& hyper) noexcept {
#if defined(__x86_64__)
  if (avx512::enabled()) return avx512::adamw_step(params, grads, m, v, segments, num_segments, hyper);
  if (avx2::enabled()) return avx2::adamw_step(params, grads, m, v, segments, num_segments, hyper);
#elif defined(__aarch64__)
  if (neon::enabled()) return neon::adamw_step(params, grads, m, v, segments, num_segments, hyper);
#endif
  generic::adamw_step(params, grads, m, v, segments, num_segments, hyper);
}

double sum_squares(const float* x, int64_t n) noexcept {
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total) if (n >= (1 << 15))
  for (int64_t i0 = 0; i0 < n; i0 += 4096) {
    const int64_t i1 = i0 + 4096 < n ? i0 + 4096 : n;
    float part = 0;  // float within a 4096 block, double across blocks
    for (int64_t i = i0; i < i1; ++i) part += x[i] * x[i];
    total += part;
  }
  return total;
}

void zero(float* x, int64_t n) noexcept {
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;
}

}  // namespace rc::kernels::cpu
