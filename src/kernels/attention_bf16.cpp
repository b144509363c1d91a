// Checks + dispatch for attention_bf16.h.
#include "kernels/attention_bf16.h"

#include "core/check.h"
#include "kernels/cpu/cpu_kernels.h"

namespace rc::kernels {

bool attention_bf16_native(int64_t D) noexcept { return cpu::attention_bf16_native(D); }

void attention_forward_bf16(const ExecCtx& ctx, uint16_t* out, const uint16_t* qkv, const int32_t* seq_lens, int64_t B,
                            int64_t T, int64_t H, int64_t D) {
  RC_ASSERT(B >= 0 && T > 0 && H > 0 && D > 0 && (B == 0 || (out && qkv && seq_lens)));
  RC_CHECK(ctx.device == Device::cpu, Errc::unsupported,
           "attention_forward_bf16: bf16 activations are a CPU inference form"
           "\nHINT: on CUDA the model runs fp32 activations");
  cpu::attention_forward_bf16(out, qkv, seq_lens, B, T, H, D);
}

}  // namespace rc::kernels
