// RobertaForSequenceClassification on the kernels layer: parameters in one flat fp32
// buffer (param_layout.h), forward for inference, forward + backward for training.
// Activations are planned once for the largest batch × length of a workspace; nothing is
// allocated per layer or per call.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/exec_ctx.h"
#include "model/param_layout.h"
#include "model/roberta_config.h"

namespace rc::model {

// 64-byte aligned, zero-initialised float storage.
class FloatBuffer {
 public:
  FloatBuffer() = default;
  explicit FloatBuffer(int64_t n);
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  int64_t size() const { return size_; }

 private:
  struct Free { void operator()(float* p) const noexcept; };
  std::unique_ptr<float[], Free> data_;
  int64_t size_ = 0;
};

class RobertaModel {
 public:
  // Parameters zeroed. head: classifier.* (RobertaForSequenceClassification) or lm_head.*
  // (RobertaForMaskedLM, see mlm_head.h).
  explicit RobertaModel(RobertaConfig config, HeadKind head = HeadKind::classifier);
  const RobertaConfig& config() const { return config_; }
  HeadKind head_kind() const { return head_; }
  const ParamLayout& layout() const { return layout_; }
  const ModelOffsets& offsets() const { return offsets_; }
  float* params() { return params_.data(); }
  const float* params() const { return params_.data(); }
  int64_t num_params() const { return layout_.total(); }
  // The parameter's slice; throws not_found for an unknown name.
  std::span<float> param(std::string_view hf_name);
  std::span<const float> param(std::string_view hf_name) const;
  // HF's _init_weights: normal(0, initializer_range) for Linear/Embedding weights, zero
  // biases, LayerNorm 1/0, zero padding rows. head_only: only classifier.* (--init-head).
  void init_weights(uint64_t seed, bool head_only = false);

 private:
  RobertaConfig config_;
  HeadKind head_;
  ParamLayout layout_;
  ModelOffsets offsets_;
  FloatBuffer params_;
};

// A right-padded batch of token ids. seq_lens[b] real tokens in row b (≥ 1).
struct Batch {
  int64_t B = 0, T = 0;
  const int32_t* ids = nullptr;          // (B, T)
  const int32_t* seq_lens = nullptr;     // (B)
  const int32_t* token_types = nullptr;  // (B, T) or null → 0
};

// Checks ids against the vocabulary, lengths against T and the model limit. Throws
// rc::Error(invalid_argument) — batches can come from users.
void validate_batch(const RobertaConfig& config, const Batch& batch);

// HF create_position_ids_from_input_ids: pad + running count of non-pad tokens; pad tokens
// (padding included) get position pad. positions: (B, T), OVERWRITTEN.
void make_positions(int32_t* positions, const Batch& batch, int32_t pad);

// Inference embeddings: x(B·T, C) = LayerNorm(wte[ids] + wpe[positions] + tte[types]), no
// dropout. positions (B·T) and scratch (B·T·C) are the caller's workspace; all OVERWRITTEN.
// Shared by the fp32 and the packed (bf16/int8) forwards.
void embed_for_inference(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                         int32_t* positions, float* scratch, float* x);

// Scratch for forward passes up to (max_B, max_T). One per concurrent caller.
class InferenceWorkspace {
 public:
  InferenceWorkspace(const RobertaConfig& config, int64_t max_B, int64_t max_T);
  int64_t max_B() const { return max_B_; }
  int64_t max_T() const { return max_T_; }

 private:
  friend void forward_logits(const kernels::ExecCtx&, const RobertaModel&, const Batch&, InferenceWorkspace&,
                             float*);
  int64_t max_B_, max_T_;
  FloatBuffer x_, qkv_, attn_, tmp_, ffn_, head_;
  std::vector<int32_t> positions_;
};

// logits (B, num_labels). Eval mode: no dropout. Same logits for a row whether padded in
// a batch or alone.
void forward_logits(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                    InferenceWorkspace& ws, float* logits);

// Where dropout applies in training; p = 0 turns a site off (--dropout 0 zeroes all).
struct DropoutConfig {
  float hidden = 0, attention = 0, classifier = 0;
  static DropoutConfig from(const RobertaConfig& config);  // the config's probabilities
};

struct HiddenHead;  // below

// Saved activations for one forward + backward up to (max_B, max_T).
class TrainWorkspace {
 public:
  TrainWorkspace(const RobertaConfig& config, int64_t max_B, int64_t max_T);
  int64_t max_B() const { return max_B_; }
  int64_t max_T() const { return max_T_; }

 private:
  friend float forward_backward(const kernels::ExecCtx&, const RobertaModel&, const Batch&, const int32_t*,
                                const DropoutConfig&, uint64_t, float, float*, TrainWorkspace&, float*);
  friend float forward_backward_hidden(const kernels::ExecCtx&, const RobertaModel&, const Batch&,
                                       const DropoutConfig&, uint64_t, float*, TrainWorkspace&, HiddenHead&);
  int64_t max_B_, max_T_;
  // Per layer: inputs of every op the backward needs (llm.c style, one buffer per role).
  FloatBuffer emb_sum_, emb_mean_, emb_rstd_, layer_in_;
  FloatBuffer qkv_, probs_, attn_ctx_, attn_proj_, attn_sum_, ln1_out_, ln1_mean_, ln1_rstd_;
  FloatBuffer ffn_pre_, ffn_act_, ffn_proj_, ffn_sum_, ln2_mean_, ln2_rstd_;
  FloatBuffer head_in_, head_pre_, head_act_, head_drop_, logits_, probs_out_, losses_;
  FloatBuffer d_x_, d_x2_, d_qkv_, d_ctx_, d_ffn_, d_head_;
  std::vector<int32_t> positions_;
};

// Mean cross-entropy over the batch; gradients of (loss · loss_scale) ACCUMULATE into
// grads (the model's layout). logits_out (B, num_labels) may be null. Dropout masks come
// from `seed` (counter-based: the same seed gives the same masks on any thread count).
float forward_backward(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                       const int32_t* labels, const DropoutConfig& dropout, uint64_t seed, float loss_scale,
                       float* grads, TrainWorkspace& ws, float* logits_out);

// The seam for heads other than the classifier (RobertaForMaskedLM's lm_head, mlm_head.h):
// the training forward through the embeddings and every encoder layer (activations saved,
// dropout from `seed` as forward_backward), then head.run(x_last, d_x_last) with the final
// hidden states x_last (B·T, C). The head returns its loss; when it asks for a backward it
// has written ∂(its scaled loss)/∂x_last into d_x_last (B·T, C; zeroed before the call) and
// ACCUMULATED its own parameters' gradients into grads, and the encoder backward then
// accumulates the rest. backward = false makes this an eval-mode forward (pass dropout 0).
// forward_backward is this function with the classifier head.
struct HiddenHead {
  struct Result {
    float loss = 0;
    bool backward = false;
  };
  virtual ~HiddenHead() = default;
  virtual Result run(const float* x_last, float* d_x_last) = 0;
};
float forward_backward_hidden(const kernels::ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                              const DropoutConfig& dropout, uint64_t seed, float* grads, TrainWorkspace& ws,
                              HiddenHead& head);

}  // namespace rc::model
