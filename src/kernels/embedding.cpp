// Checks + dispatch for embedding.h.  Ids are trusted (the model range-checks them).
#include "kernels/embedding.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"

namespace rc::kernels {

void embedding_forward(const ExecCtx& ctx, float* out, const int32_t* ids, const int32_t* positions,
                       const int32_t* token_types, const float* wte, const float* wpe, const float* tte, int64_t BT,
                       int64_t C) {
  RC_ASSERT(BT >= 0 && C > 0 && (BT == 0 || (out && ids && positions && wte && wpe)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::embedding_forward(out, ids, positions, token_types, wte, wpe, tte, BT, C);
    case Device::cuda:
      RC_CUDA_RETURN(embedding_forward, out, ids, positions, token_types, wte, wpe, tte, BT, C, ctx.stream);
  }
}

void embedding_backward(const ExecCtx& ctx, float* dwte, float* dwpe, float* dtte, const float* dout,
                        const int32_t* ids, const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C,
                        int32_t pad_id) {
  embedding_backward(ctx, dwte, dwpe, dtte, dout, ids, positions, token_types, BT, C, pad_id, pad_id);
}

void embedding_backward(const ExecCtx& ctx, float* dwte, float* dwpe, float* dtte, const float* dout,
                        const int32_t* ids, const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C,
                        int32_t pad_id, int32_t position_pad_id) {
  RC_ASSERT(BT >= 0 && C > 0 && (BT == 0 || (dout && ids && positions)));
  switch (ctx.device) {
    case Device::cpu:
      return cpu::embedding_backward(dwte, dwpe, dtte, dout, ids, positions, token_types, BT, C, pad_id,
                                     position_pad_id);
    case Device::cuda:
      if (position_pad_id != pad_id && dwpe) {  // the CUDA kernel has one pad id: the positions on their own
        embedding_backward(ctx, nullptr, dwpe, nullptr, dout, ids, positions, nullptr, BT, C, position_pad_id,
                           position_pad_id);
        dwpe = nullptr;
      }
      RC_CUDA_RETURN(embedding_backward, dwte, dwpe, dtte, dout, ids, positions, token_types, BT, C, pad_id,
                     ctx.stream);
  }
}

}  // namespace rc::kernels
