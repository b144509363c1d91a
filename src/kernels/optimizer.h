// Fused optimizer passes over the flat parameter / gradient / moment buffers.
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

// A contiguous run of the flat buffers sharing one weight-decay setting (HF Trainer
// excludes biases and LayerNorm weights from decay).
struct AdamWSegment {
  int64_t offset = 0, n = 0;
  bool decay = true;
};

struct AdamWHyper {
  float lr = 1e-5f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
  int64_t step = 1;         // 1-based, after increment (torch's state['step'])
  float grad_scale = 1.0f;  // multiplies every gradient first (clipping, accumulation)
};

// torch.optim.AdamW, exactly:  p ← p·(1 - lr·wd);  m ← β1·m + (1-β1)·g;  v ← β2·v + (1-β2)·g²;
// p ← p - (lr / (1-β1^t)) · m / (√v / √(1-β2^t) + ε).   One pass; updates p, m, v in place.
void adamw_step(const ExecCtx& ctx, float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                int64_t num_segments, const AdamWHyper& hyper);

// adamw_step that also writes, in the same pass, the bf16 copy (cpu::convert_f32_to_bf16:
// round to nearest even) of each updated parameter of segment s into copies[s]: copies[s][i]
// is parameter segments[s].offset + i; copies[s] null: none for that segment. The bf16 GEMM
// weights of the training step (model/bf16_weights.h). params, m, v bitwise as adamw_step.
// CPU only (Errc::unsupported elsewhere).
void adamw_step_bf16_copy(const ExecCtx& ctx, float* params, const float* grads, float* m, float* v,
                          const AdamWSegment* segments, uint16_t* const* copies, int64_t num_segments,
                          const AdamWHyper& hyper);

// Σ g² in double, for global-norm clipping.
double sum_squares(const ExecCtx& ctx, const float* x, int64_t n);

// x ← 0.  OVERWRITES.
void zero(const ExecCtx& ctx, float* x, int64_t n);

namespace ref {
void adamw_step(float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                int64_t num_segments, const AdamWHyper& hyper);
}  // namespace ref

}  // namespace rc::kernels
