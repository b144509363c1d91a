// Oracle for attention_bf16.h: the fp32 reference attention on the widened input.
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_bf16.h"
#include "tensor/bf16.h"

namespace rc::kernels::ref {

void attention_forward_bf16(uint16_t* out, const uint16_t* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                            int64_t H, int64_t D) {
  const int64_t C = H * D;
  std::vector<float> x(size_t(B * T * 3 * C)), y(size_t(B * T * C));
  for (size_t i = 0; i < x.size(); ++i) x[i] = bf16_to_f32(qkv[i]);
  attention_forward(y.data(), nullptr, x.data(), seq_lens, B, T, H, D, 0.0f, 0);
  for (size_t i = 0; i < y.size(); ++i) out[i] = f32_to_bf16(y[i]);
}

}  // namespace rc::kernels::ref
