// CPU embeddings.  Backward scatters into the tables; to avoid races (two rows with the same id)
// without atomics or scratch, each thread owns a range of columns and walks every row, which
// also makes the sum order fixed (deterministic for any thread count).
#include <cstdint>

#include "kernels/cpu/cpu_kernels.h"

namespace rc::kernels::cpu {

void embedding_forward(float* out, const int32_t* ids, const int32_t* positions, const int32_t* token_types,
                       const float* wte, const float* wpe, const float* tte, int64_t BT, int64_t C) noexcept {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < BT; ++i) {
    const float* we = wte + int64_t(ids[i]) * C;
    const float* pe = wpe + int64_t(positions[i]) * C;
    float* o = out + i * C;
    if (tte) {
      const float* te = tte + int64_t(token_types ? token_types[i] : 0) * C;
      for (int64_t c = 0; c < C; ++c) o[c] = we[c] + pe[c] + te[c];
    } else {
      for (int64_t c = 0; c < C; ++c) o[c] = we[c] + pe[c];
    }
  }
}

void embedding_backward(float* dwte, float* dwpe, float* dtte, const float* dout, const int32_t* ids,
                        const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C, int32_t pad_id,
                        int32_t position_pad_id) noexcept {
  constexpr int64_t kCols = 64;
#pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; c0 < C; c0 += kCols) {
    const int64_t c1 = c0 + kCols < C ? c0 + kCols : C;
    for (int64_t i = 0; i < BT; ++i) {
      const float* d = dout + i * C;
      if (dwte && ids[i] != pad_id) {
        float* w = dwte + int64_t(ids[i]) * C;
        for (int64_t c = c0; c < c1; ++c) w[c] += d[c];
      }
      if (dwpe && positions[i] != position_pad_id) {
        float* w = dwpe + int64_t(positions[i]) * C;
        for (int64_t c = c0; c < c1; ++c) w[c] += d[c];
      }
      if (dtte) {
        float* w = dtte + int64_t(token_types ? token_types[i] : 0) * C;
        for (int64_t c = c0; c < c1; ++c) w[c] += d[c];
      }
    }
  }
}

}  // namespace rc::kernels::cpu
