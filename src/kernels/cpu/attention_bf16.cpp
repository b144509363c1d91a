// CPU attention on bf16 Q/K/V (attention_bf16.h): the portable loops, and the dispatch to the
// AVX512-BF16 kernel (cpu/avx512/attention_bf16.cpp). One task per (b, h) over the real
// length only, as cpu/attention.cpp. Both paths round the probabilities to bf16 before P·V,
// so they agree to fp32 summation order.
#include <cmath>
#include <cstdint>
#include <vector>

#include "device/cpu_isa.h"
#include "kernels/cpu/avx512/attention_bf16.h"
#include "kernels/cpu/avx512/avx512_kernels.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tensor/bf16.h"

namespace rc::kernels::cpu {

namespace generic {

void attention_forward_bf16(uint16_t* out, const uint16_t* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                            int64_t H, int64_t D) noexcept {
  const int64_t C = H * D, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(float(D));
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      thread_local std::vector<float> row_buf, acc_buf;
      if (int64_t(row_buf.size()) < T) row_buf.resize(size_t(T));
      if (int64_t(acc_buf.size()) < D) acc_buf.resize(size_t(D));
      float* row = row_buf.data();
      float* acc = acc_buf.data();
      const int64_t L = seq_lens[b];
      const uint16_t* kbase = qkv + b * T * C3 + C + h * D;
      const uint16_t* vbase = qkv + b * T * C3 + 2 * C + h * D;
      for (int64_t i = 0; i < T; ++i) {
        uint16_t* o = out + (b * T + i) * C + h * D;
        if (i >= L) {
          for (int64_t d = 0; d < D; ++d) o[d] = 0;
          continue;
        }
        const uint16_t* q = qkv + (b * T + i) * C3 + h * D;
        float mx = -INFINITY;
        for (int64_t j = 0; j < L; ++j) {
          const uint16_t* k = kbase + j * C3;
          float s = 0;
          for (int64_t d = 0; d < D; ++d) s += bf16_to_f32(q[d]) * bf16_to_f32(k[d]);
          row[j] = s * scale;
          mx = row[j] > mx ? row[j] : mx;
        }
        float sum = 0;
        for (int64_t j = 0; j < L; ++j) sum += (row[j] = std::exp(row[j] - mx));
        const float inv = 1.0f / sum;
        for (int64_t d = 0; d < D; ++d) acc[d] = 0.0f;
        for (int64_t j = 0; j < L; ++j) {
          const float pj = bf16_to_f32(f32_to_bf16(row[j] * inv));  // the bf16 P of the fast path
          const uint16_t* v = vbase + j * C3;
          for (int64_t d = 0; d < D; ++d) acc[d] += pj * bf16_to_f32(v[d]);
        }
        for (int64_t d = 0; d < D; ++d) o[d] = f32_to_bf16(acc[d]);
      }
    }
}

}  // namespace generic

bool attention_bf16_native(int64_t D) noexcept {
#if defined(__x86_64__)
  return avx512::enabled() && cpu_features().avx512_bf16 && (D == 16 || D == 32 || D == 64 || D == 128 || D == 256);
#else
  return false;
#endif
}

void attention_forward_bf16(uint16_t* out, const uint16_t* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                            int64_t H, int64_t D) noexcept {
#if defined(__x86_64__)
  if (attention_bf16_native(D)) return avx512::attention_forward_bf16(out, qkv, seq_lens, B, T, H, D);
#endif
  generic::attention_forward_bf16(out, qkv, seq_lens, B, T, H, D);
}

}  // namespace rc::kernels::cpu
