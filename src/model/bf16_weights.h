// The bf16 copy of the encoder's GEMM weights for bf16 training on the CPU (issue 15).
//
// Without it every bf16 GEMM rounds its fp32 weight to bf16 on every call: three times per
// weight per micro-batch (forward, dX = dY·W, and dW = dYᵀ·X which does not read W but was
// counted in the same family). With it each weight is rounded once per optimizer step — by
// AdamW itself, in the pass that writes the new fp32 master (kernels::adamw_step_bf16_copy) —
// and read by its forward GEMM and its dX GEMM in every micro-batch of the step. The fp32
// master stays the truth (HF semantics; mixed precision as torch autocast: bf16 GEMM inputs,
// fp32 weights, grads and optimizer state), and the copy is bitwise what the per-call rounding
// gave, so results do not change.
//
// Never stale: the copy records the model's params_version() it was made from; every write to
// the parameters goes through RobertaModel::params() (non-const), which bumps the version, and
// refresh() (called by each training forward) converts again when they differ. AdamW's fused
// pass makes it fresh for the version AdamW itself bumped (mark_fresh).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/exec_ctx.h"
#include "kernels/optimizer.h"
#include "model/encoder.h"
#include "model/roberta_model.h"

namespace rc::model {

class Bf16WeightCopy {
 public:
  // The four GEMM weights of every encoder layer of `model` (a CPU model). Allocates the copy
  // (2 bytes per weight); it is made by the first refresh() or fused AdamW.
  explicit Bf16WeightCopy(const RobertaModel& model);

  // Converts the copy again unless it was made from the model's current parameters.
  void refresh(const kernels::ExecCtx& ctx, const RobertaModel& model);
  bool fresh(const RobertaModel& model) const { return made_ && version_ == model.params_version(); }
  // How many times refresh() converted (tests: a reused copy does not count).
  int64_t conversions() const { return conversions_; }

  // w (layer l's fp32 view) with each GEMM weight's w16 pointing at its copy. Requires fresh().
  LayerWeights attach(LayerWeights w, size_t l) const;

  // AdamW's segments cut at the copy's ranges, each with its copy pointer (null outside), for
  // kernels::adamw_step_bf16_copy. Every parameter must be in some segment.
  struct AdamWPlan {
    std::vector<kernels::AdamWSegment> segments;
    std::vector<uint16_t*> copies;
  };
  AdamWPlan plan_adamw(std::span<const kernels::AdamWSegment> segments);
  // After adamw_step_bf16_copy with a plan from plan_adamw: the copy is of the model's
  // current parameters (the fused pass rewrote every element).
  void mark_fresh(const RobertaModel& model);

  // The copy of parameters [offset, offset + n) of the flat buffer, or null when the copy does
  // not hold all of them.
  const uint16_t* copy_of(int64_t offset, int64_t n) const;
  size_t bytes() const { return copy_.size() * sizeof(uint16_t); }

 private:
  struct Range {
    int64_t offset, n, at;  // parameters [offset, offset + n) are copy_[at, at + n)
  };
  std::vector<Range> ranges_;                   // sorted by offset, disjoint
  std::vector<std::array<int64_t, 4>> layers_;  // per layer: qkv, attn_out, ffn_in, ffn_out offsets
  std::vector<uint16_t> copy_;
  uint64_t version_ = 0;
  bool made_ = false;
  int64_t conversions_ = 0;
};

}  // namespace rc::model
