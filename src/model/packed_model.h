// PackedModel: an inference-only RoBERTa classifier built once from a RobertaModel, with every
// encoder matrix packed (kernels::PackedLinear) in bf16 or int8, and a fused forward:
//   - Q/K/V as one GEMM (the layout's contiguous W_qkv), bias (+ GELU) as GEMM post-ops,
//   - the FFN's GELU output stays bf16 and feeds the second FFN GEMM directly,
//   - residual + LayerNorm in one pass, attention (scale + mask + softmax) over each row's
//     real length only,
//   - the last layer runs its attention output / FFN on the first token only (the head reads
//     nothing else), the head likewise.
// LayerNorm, softmax and every accumulation are fp32.  The source model (its embeddings,
// LayerNorm parameters and biases) must outlive the PackedModel.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/exec_ctx.h"
#include "kernels/linear.h"
#include "model/roberta_model.h"

namespace rc::model {

enum class PackedPrecision { bf16, int8 };
const char* packed_precision_name(PackedPrecision p) noexcept;

// Scratch for PackedModel forwards up to (max_B, max_T).  One per concurrent caller.
class PackedWorkspace {
 public:
  PackedWorkspace(const RobertaConfig& config, int64_t max_B, int64_t max_T);
  int64_t max_B() const { return max_B_; }
  int64_t max_T() const { return max_T_; }

 private:
  friend class PackedModel;
  int64_t max_B_, max_T_;
  FloatBuffer x_, qkv_, attn_, tmp_, ffn_, head_;  // ffn_ holds bf16 (BT·I halves)
  std::vector<int32_t> positions_;
};

class PackedModel {
 public:
  // Packs the 4 matrices of every layer (and the head's dense layer, always bf16) once.
  PackedModel(const RobertaModel& model, PackedPrecision precision);
  const RobertaConfig& config() const { return model_.config(); }
  PackedPrecision precision() const { return precision_; }
  size_t packed_bytes() const;

  // logits (B, num_labels).  Same contract as model::forward_logits (validates the batch).
  void forward_logits(const kernels::ExecCtx& ctx, const Batch& batch, PackedWorkspace& ws, float* logits) const;

 private:
  struct Layer {
    kernels::PackedLinear qkv, attn_out, ffn_in, ffn_out;
  };
  const RobertaModel& model_;
  PackedPrecision precision_;
  std::vector<Layer> layers_;
  kernels::PackedLinear head_dense_;
};

}  // namespace rc::model
