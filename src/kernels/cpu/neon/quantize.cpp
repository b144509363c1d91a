// NEON per-row int8 quantisation (kernels/linear.h). Same formula as the reference: amax by max
// of |x|, inv = 127 / amax, q = FCVTNS(x · inv) (round to nearest, ties to even, as
// std::nearbyint under the default rounding mode), saturating narrow to int8: bit-identical.
#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstdint>

#include "kernels/cpu/neon/neon_kernels.h"
#include "kernels/cpu/neon/vec_math.h"
#include "tensor/bf16.h"

namespace rc::kernels::cpu::neon {

namespace {

inline float32x4_t load4(const float* p) { return vld1q_f32(p); }
inline float32x4_t load4(const uint16_t* p) { return bf16_to_f32(vld1_u16(p)); }
inline float load1(const float* p) { return *p; }
inline float load1(const uint16_t* p) { return rc::bf16_to_f32(*p); }

template <class T>
void quantize_rows(int8_t* q, float* scale, const T* x, int64_t M, int64_t K) noexcept {
  // Serial below ~128k elements, as the generic loop (a parallel region costs more there).
#pragma omp parallel for schedule(static) if (M * K >= (1 << 17))
  for (int64_t m = 0; m < M; ++m) {
    const T* xm = x + m * K;
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0;
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
      a0 = vmaxq_f32(a0, vabsq_f32(load4(xm + k)));
      a1 = vmaxq_f32(a1, vabsq_f32(load4(xm + k + 4)));
    }
    float amax = vmaxvq_f32(vmaxq_f32(a0, a1));
    for (; k < K; ++k) {
      const float a = load1(xm + k) < 0.0f ? -load1(xm + k) : load1(xm + k);
      amax = a > amax ? a : amax;
    }
    const float inv = amax > 0.0f ? 127.0f / amax : 1.0f;
    scale[m] = amax > 0.0f ? amax / 127.0f : 1.0f;
    const float32x4_t vinv = vdupq_n_f32(inv);
    int8_t* qm = q + m * K;
    k = 0;
    for (; k + 8 <= K; k += 8) {
      const int32x4_t i0 = vcvtnq_s32_f32(vmulq_f32(load4(xm + k), vinv));
      const int32x4_t i1 = vcvtnq_s32_f32(vmulq_f32(load4(xm + k + 4), vinv));
      vst1_s8(qm + k, vqmovn_s16(vcombine_s16(vqmovn_s32(i0), vqmovn_s32(i1))));
    }
    for (; k < K; ++k) {
      const int32x4_t i = vcvtnq_s32_f32(vdupq_n_f32(load1(xm + k) * inv));
      qm[k] = int8_t(vgetq_lane_s32(i, 0));
    }
  }
}

}  // namespace

void quantize_rows_s8(int8_t* q, float* scale, const float* x, int64_t M, int64_t K) noexcept {
  quantize_rows(q, scale, x, M, K);
}
void quantize_rows_s8_bf16(int8_t* q, float* scale, const uint16_t* x, int64_t M, int64_t K) noexcept {
  quantize_rows(q, scale, x, M, K);
}

void dequantize_rows(float* yf, uint16_t* yb, const int32_t* acc, const float* xs, const float* ws, const float* bias,
                     int64_t M, int64_t N, bool gelu) noexcept {
#pragma omp parallel for schedule(static) if (M * N >= (1 << 17))
  for (int64_t m = 0; m < M; ++m) {
    const float32x4_t vxs = vdupq_n_f32(xs[m]);
    for (int64_t n = 0; n < N; n += 4) {
      const int64_t left = N - n;
      float32x4_t a, s, b = vdupq_n_f32(0.0f);
      if (left >= 4) {
        a = vcvtq_f32_s32(vld1q_s32(acc + m * N + n));
        s = vld1q_f32(ws + n);
        if (bias) b = vld1q_f32(bias + n);
      } else {
        int32_t ab[4] = {0, 0, 0, 0};
        for (int64_t i = 0; i < left; ++i) ab[i] = acc[m * N + n + i];
        a = vcvtq_f32_s32(vld1q_s32(ab));
        s = load_partial(ws + n, left);
        if (bias) b = load_partial(bias + n, left);
      }
      float32x4_t v = vmulq_f32(vmulq_f32(vxs, s), a);
      if (bias) v = vaddq_f32(v, b);
      if (gelu) v = vmulq_f32(v, normal_cdf_pdf(v, nullptr));
      if (yf) {
        if (left >= 4)
          vst1q_f32(yf + m * N + n, v);
        else
          store_partial(yf + m * N + n, v, left);
      } else {
        const uint16x4_t h = f32_to_bf16_rne(v);
        if (left >= 4) {
          vst1_u16(yb + m * N + n, h);
        } else {
          uint16_t hb[4];
          vst1_u16(hb, h);
          for (int64_t i = 0; i < left; ++i) yb[m * N + n + i] = hb[i];
        }
      }
    }
  }
}

}  // namespace rc::kernels::cpu::neon

#endif  // __aarch64__
