// The encoder's final hidden states for every token (RobertaModel's last_hidden_state): what
// sentence-transformers' Pooling, TEI's /embed_all and the token-embedding answers read. The
// same inference forward as forward_logits (roberta_model.h: every weight format, every
// device) with every layer carrying every row, and no head.
#pragma once

#include <cstdint>

#include "device/buffer.h"
#include "kernels/exec_ctx.h"
#include "model/batch.h"
#include "model/roberta_model.h"

namespace rc::model {

// Scratch for hidden-state forwards up to (max_B, max_T) on one device. One per concurrent caller.
class HiddenStatesWorkspace {
 public:
  HiddenStatesWorkspace(const kernels::ExecCtx& ctx, const RobertaConfig& config, int64_t max_B, int64_t max_T);
  int64_t max_B() const { return max_B_; }
  int64_t max_T() const { return max_T_; }

 private:
  friend void forward_hidden_states(const kernels::ExecCtx&, const RobertaModel&, const Batch&, HiddenStatesWorkspace&,
                                    float*);
  int64_t max_B_, max_T_;
  Device device_;
  Buffer x_, qkv_, attn_, tmp_, ffn_, rows_, gemm_in_, gemm_scale_, ffn_scale_;
  DeviceBatch batch_;
};

// hidden (B, T, C), host memory, OVERWRITTEN: the final hidden state of every position, the
// padding's included (what HF's RobertaModel returns; callers mask them). Eval mode. The
// model and the workspace must be on ctx's device. Any head the model has is not run.
void forward_hidden_states(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                           HiddenStatesWorkspace& ws, float* hidden);

}  // namespace rc::model
