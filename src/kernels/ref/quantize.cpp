// Reference per-row symmetric int8 quantisation (kernels/linear.h): the oracle for the CPU paths.
#include <cmath>
#include <cstdint>

#include "kernels/linear.h"

namespace rc::kernels::ref {

void quantize_rows_s8(int8_t* q, float* scale, const float* x, int64_t M, int64_t K) {
  for (int64_t m = 0; m < M; ++m) {
    const float* xm = x + m * K;
    float amax = 0.0f;
    for (int64_t k = 0; k < K; ++k) amax = std::fmax(amax, std::fabs(xm[k]));
    const float inv = amax > 0.0f ? 127.0f / amax : 1.0f;
    scale[m] = amax > 0.0f ? amax / 127.0f : 1.0f;
    for (int64_t k = 0; k < K; ++k) q[m * K + k] = int8_t(std::nearbyint(xm[k] * inv));  // FE_TONEAREST: half-even
  }
}

}  // namespace rc::kernels::ref
