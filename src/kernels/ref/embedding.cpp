// Scalar oracle for the input embeddings (embedding.h).
#include <cstdint>

#include "kernels/embedding.h"

namespace rc::kernels::ref {

void embedding_forward(float* out, const int32_t* ids, const int32_t* positions, const int32_t* token_types,
                       const float* wte, const float* wpe, const float* tte, int64_t BT, int64_t C) {
  for (int64_t i = 0; i < BT; ++i) {
    const float* we = wte + int64_t(ids[i]) * C;
    const float* pe = wpe + int64_t(positions[i]) * C;
    const float* te = tte ? tte + int64_t(token_types ? token_types[i] : 0) * C : nullptr;
    for (int64_t c = 0; c < C; ++c) out[i * C + c] = we[c] + pe[c] + (te ? te[c] : 0.0f);
  }
}

void embedding_backward(float* dwte, float* dwpe, float* dtte, const float* dout, const int32_t* ids,
                        const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C, int32_t pad_id) {
  for (int64_t i = 0; i < BT; ++i) {
    const float* d = dout + i * C;
    if (dwte && ids[i] != pad_id)
      for (int64_t c = 0; c < C; ++c) dwte[int64_t(ids[i]) * C + c] += d[c];
    if (dwpe && positions[i] != pad_id)
      for (int64_t c = 0; c < C; ++c) dwpe[int64_t(positions[i]) * C + c] += d[c];
    if (dtte) {
      const int64_t t = token_types ? token_types[i] : 0;
      for (int64_t c = 0; c < C; ++c) dtte[t * C + c] += d[c];
    }
  }
}

}  // namespace rc::kernels::ref
