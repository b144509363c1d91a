// Checks + dispatch for attention.h.
#include "kernels/attention.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"

namespace rc::kernels {

namespace {
void check_lens(const ExecCtx& ctx, const int32_t* seq_lens, int64_t B, int64_t T) {
  RC_ASSERT(B == 0 || seq_lens);
  if (ctx.device == Device::cpu)  // host memory only: device arrays are not readable here
    for (int64_t b = 0; b < B; ++b) RC_ASSERT(seq_lens[b] >= 0 && seq_lens[b] <= T);
}
}  // namespace

void attention_forward(const ExecCtx& ctx, float* out, float* probs, const float* qkv, const int32_t* seq_lens,
                       int64_t B, int64_t T, int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0) {
  RC_ASSERT(B >= 0 && T >= 0 && H > 0 && D > 0 && (B * T == 0 || (out && qkv)));
  RC_ASSERT(dropout_p >= 0.0f && dropout_p < 1.0f && T < (int64_t(1) << 20) && H < (int64_t(1) << 24));
  check_lens(ctx, seq_lens, B, T);
  switch (ctx.device) {
    case Device::cpu:
      return cpu::attention_forward(out, probs, qkv, seq_lens, B, T, H, D, dropout_p, seed, row0);
    case Device::cuda:
      RC_CUDA_RETURN(attention_forward, out, probs, qkv, seq_lens, B, T, H, D, dropout_p, seed, row0, ctx.stream);
  }
}

void attention_backward(const ExecCtx& ctx, float* dqkv, const float* dout, const float* qkv, const float* probs,
                        const int32_t* seq_lens, int64_t B, int64_t T, int64_t H, int64_t D, float dropout_p,
                        uint64_t seed, uint64_t row0) {
  RC_ASSERT(B >= 0 && T >= 0 && H > 0 && D > 0 && (B * T == 0 || (dqkv && dout && qkv && probs)));
  RC_ASSERT(dropout_p >= 0.0f && dropout_p < 1.0f && T < (int64_t(1) << 20) && H < (int64_t(1) << 24));
  check_lens(ctx, seq_lens, B, T);
  switch (ctx.device) {
    case Device::cpu:
      return cpu::attention_backward(dqkv, dout, qkv, probs, seq_lens, B, T, H, D, dropout_p, seed, row0);
    case Device::cuda:
      RC_CUDA_RETURN(attention_backward, dqkv, dout, qkv, probs, seq_lens, B, T, H, D, dropout_p, seed, row0,
                     ctx.stream);
  }
}

}  // namespace rc::kernels
