// RobertaForMaskedLM's lm_head (transformers' RobertaLMHead), run on the masked positions
// only — the decoder over a 50k vocabulary is most of a small model's cost, and the loss
// reads nothing else:
//   h = LayerNorm(gelu(x·Wdᵀ + bd));  logits = h·wteᵀ + lm_head.bias  (decoder tied to the
//   word embeddings);  loss = mean cross-entropy over the positions whose label != -100.
// The backward adds the decoder's gradient to the word-embedding gradient (one tensor, as
// PyTorch's tied parameter), over every row, the padding row included.
// The vocabulary-wide logits are computed in chunks of rows, so memory is bounded by
// kChunkRows × vocab whatever the batch. Every step runs on the model's device: the masked
// rows are chosen on the host (the labels come from the collator there), their row numbers
// uploaded, and the rows gathered and scattered by kernels (kernels/rows.h).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/exec_ctx.h"
#include "model/roberta_model.h"

namespace rc::model {

inline constexpr int32_t kIgnoreLabel = -100;  // torch CrossEntropyLoss's ignore_index, as HF

class MlmWorkspace {
 public:
  static constexpr int64_t kChunkRows = 128;
  // Up to max_rows masked positions per call, on ctx's device.
  MlmWorkspace(const kernels::ExecCtx& ctx, const RobertaConfig& config, int64_t max_rows);
  MlmWorkspace(const RobertaConfig& config, int64_t max_rows);  // CPU
  int64_t max_rows() const { return max_rows_; }

 private:
  friend struct MlmAccess;
  int64_t max_rows_;
  Buffer rows_, pre_, act_, ln_, mean_, rstd_, d_a_, d_b_, logits_, probs_, losses_;
  Buffer index_dev_, targets_dev_;  // the host vectors below, on the device
  std::vector<int64_t> index_;
  std::vector<int32_t> targets_;
  std::vector<float> losses_host_;
};

struct MlmLoss {
  double loss_sum = 0;  // Σ cross-entropy over the masked positions
  int64_t count = 0;    // masked positions (labels != -100)
  double mean() const { return count > 0 ? loss_sum / double(count) : 0.0; }
};

// The head on final hidden states x (rows, C, on the model's device) with labels (rows, on the
// HOST; -100 = not a target; other values checked against the vocabulary). grads null: forward only. Otherwise
// gradients of (mean loss · loss_scale) ACCUMULATE into grads (lm_head.* and the word embeddings) and d_x (rows, C)
// gets the hidden states' gradient at the masked rows (other rows untouched).
MlmLoss mlm_head_forward_backward(const kernels::ExecCtx& ctx, const RobertaModel& model, const float* x,
                                  const int32_t* labels, int64_t rows, float loss_scale, float* grads, float* d_x,
                                  MlmWorkspace& ws);

// One training micro-step of RobertaForMaskedLM: encoder forward, head, backward
// (forward_backward_hidden with the lm_head). labels (B·T) as above. Returns the mean loss
// over the masked positions (0 with no gradient when a batch has none: HF would give NaN).
// grads null: eval mode forward only (pass a zero DropoutConfig).
MlmLoss mlm_forward_backward(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                             const int32_t* labels, const DropoutConfig& dropout, uint64_t seed, float loss_scale,
                             float* grads, TrainWorkspace& ws, MlmWorkspace& mlm);

// Eval-mode vocabulary logits (n, V) at flat positions b·T + t of the batch (fill-mask).
// At most mlm.max_rows() positions. OVERWRITES logits (on ctx's device).
void mlm_logits(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                const std::vector<int64_t>& positions, float* logits, TrainWorkspace& ws, MlmWorkspace& mlm);

// The same logits through the inference forward (forward_logits' encoder stack: the model's
// weight format, packed fp32 / bf16 / int8 included, any device), then the lm_head in fp32 on
// the rows at `positions` (flat b·T + t): fill-mask at a precision and `bench infer` on a
// masked-LM model. logits (n, V) in HOST memory, OVERWRITTEN; at most mlm.max_rows() positions;
// on CUDA each call ends synchronised (the logits come back). Implemented in inference.cpp.
void forward_mlm_logits(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                        InferenceWorkspace& ws, const std::vector<int64_t>& positions, float* logits,
                        MlmWorkspace& mlm);

// The lm_head alone, eval mode: logits (n, V), HOST memory, OVERWRITTEN, of the rows
// `positions` of the final hidden states x (on ctx's device). On a device the decoder runs in
// chunks of MlmWorkspace::kChunkRows rows through the workspace, each downloaded.
void mlm_head_logits(const kernels::ExecCtx& ctx, const RobertaModel& model, const float* x,
                     const std::vector<int64_t>& positions, float* logits, MlmWorkspace& mlm);

}  // namespace rc::model
