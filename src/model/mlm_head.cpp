// RobertaForMaskedLM's lm_head on the masked rows (see mlm_head.h).
#include "model/mlm_head.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/activation.h"
#include "kernels/layernorm.h"
#include "kernels/loss.h"
#include "kernels/matmul.h"
#include "kernels/rows.h"

namespace rc::model {

using kernels::ExecCtx;

MlmWorkspace::MlmWorkspace(const ExecCtx& ctx, const RobertaConfig& c, int64_t max_rows) : max_rows_(max_rows) {
  RC_CHECK(max_rows > 0, Errc::invalid_argument, "masked-LM workspace needs a positive row count");
  const int64_t C = c.hidden_size, V = c.vocab_size, R = std::min(kChunkRows, max_rows);
  rows_ = kernels::alloc_floats(ctx, max_rows * C);
  pre_ = kernels::alloc_floats(ctx, max_rows * C);
  act_ = kernels::alloc_floats(ctx, max_rows * C);
  ln_ = kernels::alloc_floats(ctx, max_rows * C);
  mean_ = kernels::alloc_floats(ctx, max_rows);
  rstd_ = kernels::alloc_floats(ctx, max_rows);
  d_a_ = kernels::alloc_floats(ctx, max_rows * C);
  d_b_ = kernels::alloc_floats(ctx, max_rows * C);
  logits_ = kernels::alloc_floats(ctx, R * V);
  probs_ = kernels::alloc_floats(ctx, R * V);
  losses_ = kernels::alloc_floats(ctx, R);
  index_dev_ = kernels::alloc(ctx, size_t(max_rows) * sizeof(int64_t));
  targets_dev_ = kernels::alloc(ctx, size_t(max_rows) * sizeof(int32_t));
  index_.reserve(size_t(max_rows));
  targets_.reserve(size_t(max_rows));
  losses_host_.resize(size_t(R));
}

MlmWorkspace::MlmWorkspace(const RobertaConfig& c, int64_t max_rows) : MlmWorkspace(ExecCtx{}, c, max_rows) {}

// The workspace's buffers for the functions below (the class keeps them private).
struct MlmAccess {
  MlmWorkspace& w;
  float* rows() { return w.rows_.f32(); }
  float* pre() { return w.pre_.f32(); }
  float* act() { return w.act_.f32(); }
  float* ln() { return w.ln_.f32(); }
  float* mean() { return w.mean_.f32(); }
  float* rstd() { return w.rstd_.f32(); }
  float* d_a() { return w.d_a_.f32(); }
  float* d_b() { return w.d_b_.f32(); }
  float* logits() { return w.logits_.f32(); }
  float* probs() { return w.probs_.f32(); }
  float* losses() { return w.losses_.f32(); }
  std::vector<int64_t>& index() { return w.index_; }
  std::vector<int32_t>& targets() { return w.targets_; }
  int64_t* index_dev() { return w.index_dev_.as<int64_t>(); }
  int32_t* targets_dev() { return w.targets_dev_.as<int32_t>(); }
  float* losses_host() { return w.losses_host_.data(); }
  // The host index (and targets) to the device, then the indexed rows of x gathered.
  void gather(const ExecCtx& ctx, const float* x, int64_t C) {
    const int64_t M = int64_t(w.index_.size());
    kernels::upload(ctx, index_dev(), w.index_.data(), size_t(M) * sizeof(int64_t));
    if (!w.targets_.empty())
      kernels::upload(ctx, targets_dev(), w.targets_.data(), w.targets_.size() * sizeof(int32_t));
    kernels::gather_rows(ctx, rows(), x, index_dev(), M, C);
  }
};

namespace {

// The transform's activation. RobertaLMHead: gelu, the erf form, whatever hidden_act says
// (modeling_roberta.py: `x = gelu(x)`); BertPredictionHeadTransform: ACT2FN[config.hidden_act]
// (modeling_bert.py); DistilBertForMaskedLM: get_activation(config.activation)
// (modeling_distilbert.py).
Activation transform_activation(const RobertaConfig& c) {
  return c.family().mlm_uses_hidden_act ? c.activation() : Activation::gelu;
}

// dense → activation → LayerNorm on the M gathered rows (saved for the backward).
void transform_forward(const ExecCtx& ctx, const RobertaModel& model, MlmAccess& a, int64_t M) {
  const RobertaConfig& c = model.config();
  const ModelOffsets& o = model.offsets();
  const float* P = model.params();
  const int64_t C = c.hidden_size;
  kernels::matmul_nt(ctx, a.pre(), a.rows(), P + o.lm_dense_w, P + o.lm_dense_b, M, C, C);
  switch (transform_activation(c)) {
    case Activation::gelu:
      kernels::gelu_erf_forward(ctx, a.act(), a.pre(), M * C);
      break;
    case Activation::gelu_new:
      kernels::gelu_tanh_forward(ctx, a.act(), a.pre(), M * C);
      break;
    case Activation::relu:
      kernels::relu_forward(ctx, a.act(), a.pre(), M * C);
      break;
  }
  kernels::layernorm_forward(ctx, a.ln(), a.mean(), a.rstd(), a.act(), P + o.lm_ln_gamma, P + o.lm_ln_beta, M, C,
                             c.layer_norm_eps);
}

void check_masked_lm(const ExecCtx& ctx, const RobertaModel& model) {
  RC_CHECK(model.head_kind() == HeadKind::masked_lm, Errc::invalid_argument,
           "this model has a classification head, not a masked-LM head (lm_head.*)");
  RC_CHECK(model.device() == ctx.device, Errc::invalid_argument,
           "the masked-LM head runs where its model is: move the model to the context's device first");
}

}  // namespace

MlmLoss mlm_head_forward_backward(const ExecCtx& ctx, const RobertaModel& model, const float* x, const int32_t* labels,
                                  int64_t rows, float loss_scale, float* grads, float* d_x, MlmWorkspace& ws) {
  check_masked_lm(ctx, model);
  const RobertaConfig& c = model.config();
  const ModelOffsets& o = model.offsets();
  const float* P = model.params();
  const int64_t C = c.hidden_size, V = c.vocab_size;
  MlmAccess a{ws};
  auto& index = a.index();
  auto& targets = a.targets();
  index.clear();
  targets.clear();
  for (int64_t r = 0; r < rows; ++r) {
    if (labels[r] == kIgnoreLabel) continue;
    RC_CHECK(labels[r] >= 0 && labels[r] < V, Errc::invalid_argument, "masked-LM label ", labels[r],
             " outside the vocabulary [0, ", V, ") and not -100");
    RC_CHECK(int64_t(index.size()) < ws.max_rows(), Errc::invalid_argument, "more than ", ws.max_rows(),
             " masked positions in one batch");
    index.push_back(r);
    targets.push_back(labels[r]);
  }
  MlmLoss out;
  const int64_t M = int64_t(index.size());
  out.count = M;
  if (M == 0) return out;

  a.gather(ctx, x, C);
  transform_forward(ctx, model, a, M);

  // Decoder + cross-entropy in chunks of rows; d(ln) gathered in d_a.
  const float grad_scale = loss_scale / float(M);
  for (int64_t r0 = 0; r0 < M; r0 += MlmWorkspace::kChunkRows) {
    const int64_t R = std::min(MlmWorkspace::kChunkRows, M - r0);
    const float* h = a.ln() + r0 * C;
    kernels::matmul_nt(ctx, a.logits(), h, P + o.wte, P + o.lm_bias, R, V, C);
    kernels::cross_entropy_forward(ctx, a.losses(), a.probs(), a.logits(), a.targets_dev() + r0, R, V);
    kernels::download(ctx, a.losses_host(), a.losses(), size_t(R) * sizeof(float));
    for (int64_t r = 0; r < R; ++r) out.loss_sum += double(a.losses_host()[r]);
    if (!grads) continue;
    float* d_logits = a.probs();  // in place: the backward reads each prob once, where it writes
    kernels::cross_entropy_backward(ctx, d_logits, a.probs(), a.targets_dev() + r0, R, V, grad_scale);
    kernels::linear_backward(ctx, a.d_a() + r0 * C, grads + o.wte, grads + o.lm_bias, d_logits, h, P + o.wte, nullptr,
                             R, V, C, false);  // the tied decoder
  }
  if (!grads) return out;

  // LayerNorm ← activation ← dense, then the rows' gradients scattered back to their positions.
  kernels::layernorm_backward(ctx, a.d_b(), grads + o.lm_ln_gamma, grads + o.lm_ln_beta, a.d_a(), a.act(),
                              P + o.lm_ln_gamma, a.mean(), a.rstd(), M, C);
  switch (transform_activation(c)) {
    case Activation::gelu:
      kernels::gelu_erf_backward(ctx, a.d_b(), a.d_b(), a.pre(), M * C);
      break;
    case Activation::gelu_new:
      kernels::gelu_tanh_backward(ctx, a.d_b(), a.d_b(), a.pre(), M * C);
      break;
    case Activation::relu:  // from the output: relu's gradient is where it is positive
      kernels::relu_backward(ctx, a.d_b(), a.d_b(), a.act(), M * C);
      break;
  }
  kernels::linear_backward(ctx, a.d_a(), grads + o.lm_dense_w, grads + o.lm_dense_b, a.d_b(), a.rows(),
                           P + o.lm_dense_w, nullptr, M, C, C, false);
  kernels::scatter_rows(ctx, d_x, a.d_a(), a.index_dev(), M, C);
  return out;
}

namespace {

struct MlmTrainHead final : HiddenHead {
  const ExecCtx& ctx;
  const RobertaModel& model;
  const int32_t* labels;
  int64_t rows;
  float loss_scale;
  float* grads;
  MlmWorkspace& ws;
  MlmLoss loss;
  MlmTrainHead(const ExecCtx& c, const RobertaModel& m, const int32_t* l, int64_t r, float s, float* g, MlmWorkspace& w)
      : ctx(c), model(m), labels(l), rows(r), loss_scale(s), grads(g), ws(w) {}
  Result run(const float* x_last, float* d_x, const int32_t*) override {
    loss = mlm_head_forward_backward(ctx, model, x_last, labels, rows, loss_scale, grads, d_x, ws);
    return {float(loss.mean()), grads != nullptr && loss.count > 0};
  }
};

struct LogitsHead final : HiddenHead {
  const ExecCtx& ctx;
  const RobertaModel& model;
  const std::vector<int64_t>& positions;
  float* logits;
  MlmWorkspace& ws;
  LogitsHead(const ExecCtx& c, const RobertaModel& m, const std::vector<int64_t>& p, float* l, MlmWorkspace& w)
      : ctx(c), model(m), positions(p), logits(l), ws(w) {}
  Result run(const float* x_last, float*, const int32_t*) override {
    const RobertaConfig& cfg = model.config();
    const ModelOffsets& o = model.offsets();
    const float* P = model.params();
    const int64_t C = cfg.hidden_size, V = cfg.vocab_size, M = int64_t(positions.size());
    MlmAccess a{ws};
    a.index().assign(positions.begin(), positions.end());
    a.targets().clear();
    a.gather(ctx, x_last, C);
    transform_forward(ctx, model, a, M);
    kernels::matmul_nt(ctx, logits, a.ln(), P + o.wte, P + o.lm_bias, M, V, C);
    return {0.0f, false};
  }
};

}  // namespace

MlmLoss mlm_forward_backward(const ExecCtx& ctx, const RobertaModel& model, const Batch& batch, const int32_t* labels,
                             const DropoutConfig& dropout, uint64_t seed, float loss_scale, float* grads,
                             TrainWorkspace& ws, MlmWorkspace& mlm) {
  check_masked_lm(ctx, model);
  MlmTrainHead head(ctx, model, labels, batch.B * batch.T, loss_scale, grads, mlm);
  forward_backward_hidden(ctx, model, batch, dropout, seed, grads, ws, head);
  return head.loss;
}

void mlm_head_logits(const ExecCtx& ctx, const RobertaModel& model, const float* x,
                     const std::vector<int64_t>& positions, float* logits, MlmWorkspace& mlm) {
  check_masked_lm(ctx, model);
  RC_CHECK(int64_t(positions.size()) <= mlm.max_rows(), Errc::invalid_argument, "more than ", mlm.max_rows(),
           " positions to predict");
  if (positions.empty()) return;
  const RobertaConfig& c = model.config();
  const ModelOffsets& o = model.offsets();
  const float* P = model.params();
  const int64_t C = c.hidden_size, V = c.vocab_size, M = int64_t(positions.size());
  MlmAccess a{mlm};
  a.index().assign(positions.begin(), positions.end());
  a.targets().clear();
  a.gather(ctx, x, C);
  transform_forward(ctx, model, a, M);
  // The decoder stays fp32 in every precision: it is the word-embedding table, which the packed
  // formats keep in fp32 anyway (the embedding lookup reads it), so quantising it would add a
  // second copy; and the answer is a ranking over the whole vocabulary (50k-250k tokens), where
  // per-channel int8 error lands directly on the scores of near-tied candidates, for a GEMM of a
  // few mask rows that costs little next to the encoder.
  if (ctx.device == Device::cpu) {
    kernels::matmul_nt(ctx, logits, a.ln(), P + o.wte, P + o.lm_bias, M, V, C);
    return;
  }
  for (int64_t r0 = 0; r0 < M; r0 += MlmWorkspace::kChunkRows) {
    const int64_t R = std::min(MlmWorkspace::kChunkRows, M - r0);
    kernels::matmul_nt(ctx, a.logits(), a.ln() + r0 * C, P + o.wte, P + o.lm_bias, R, V, C);
    kernels::download(ctx, logits + r0 * V, a.logits(), size_t(R * V) * sizeof(float));
  }
}

void mlm_logits(const ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                const std::vector<int64_t>& positions, float* logits, TrainWorkspace& ws, MlmWorkspace& mlm) {
  check_masked_lm(ctx, model);
  RC_CHECK(int64_t(positions.size()) <= mlm.max_rows(), Errc::invalid_argument, "more than ", mlm.max_rows(),
           " positions to predict");
  for (int64_t p : positions)
    RC_CHECK(p >= 0 && p < batch.B * batch.T, Errc::invalid_argument, "position ", p, " outside the batch");
  if (positions.empty()) return;
  LogitsHead head(ctx, model, positions, logits, mlm);
  forward_backward_hidden(ctx, model, batch, DropoutConfig{}, 0, nullptr, ws, head);
}

}  // namespace rc::model
