// The training forward + backward (roberta_model.h): embeddings with dropout, the encoder
// layers (encoder.h) saving what the backward needs, the head, the mean cross-entropy, then
// the backward through the same layers. On any device; always the fp32 weights (in bf16 on the
// CPU, their per-step bf16 copy where the workspace has one: bf16_weights.h).
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "kernels/activation.h"
#include "kernels/dropout.h"
#include "kernels/embedding.h"
#include "kernels/layernorm.h"
#include "kernels/loss.h"
#include "kernels/matmul.h"
#include "kernels/optimizer.h"
#include "kernels/profile.h"
#include "kernels/rows.h"
#include "model/bf16_weights.h"
#include "model/roberta_model.h"

namespace rc::model {

using kernels::ExecCtx;
using kernels::profiled;
using F = kernels::OpFamily;

namespace {
// The CPU's bf16 GEMMs: they round their operands to bf16 (so a bf16 copy of an input or a
// weight gives the same products); CUDA's take fp32 operands.
bool cpu_bf16_gemms(const ExecCtx& ctx) {
  return ctx.device == Device::cpu && ctx.matmul_precision == kernels::MatmulPrecision::bf16;
}
}  // namespace

DropoutConfig DropoutConfig::from(const RobertaConfig& c) {
  return {c.hidden_dropout_prob, c.attention_probs_dropout_prob, c.classifier_dropout_prob()};
}

SequenceLoss sequence_loss_of(const RobertaConfig& c) {
  if (c.problem_type == "regression") return SequenceLoss::mse;
  if (c.problem_type == "multi_label_classification") return SequenceLoss::bce_with_logits;
  if (c.problem_type.empty() && c.num_labels() == 1) return SequenceLoss::mse;
  return SequenceLoss::cross_entropy;
}

TrainWorkspace::TrainWorkspace(const RobertaConfig& c, int64_t max_B, int64_t max_T, HeadKind head)
    : TrainWorkspace(ExecCtx{}, c, max_B, max_T, head) {}

TrainWorkspace::TrainWorkspace(const ExecCtx& ctx, const RobertaConfig& c, int64_t max_B, int64_t max_T, HeadKind head)
    : max_B_(max_B), max_T_(max_T), device_(ctx.device) {
  RC_CHECK(max_B > 0 && max_T > 0, Errc::invalid_argument, "workspace needs a positive batch and length");
  const int64_t L = c.num_hidden_layers, BT = max_B * max_T, C = c.hidden_size, I = c.intermediate_size;
  const int64_t H = c.num_attention_heads, K = std::max<int64_t>(1, c.num_labels());
  auto f = [&](int64_t n) { return kernels::alloc_floats(ctx, n); };
  auto h = [&](int64_t n) { return kernels::alloc(ctx, size_t(n) * sizeof(uint16_t)); };
  saves_bf16_ = cpu_bf16_gemms(ctx);
  const int64_t L32 = saves_bf16_ ? 1 : L;  // layers whose GEMM inputs are kept in fp32
  emb_sum_ = f(BT * C);
  emb_mean_ = f(BT);
  emb_rstd_ = f(BT);
  layer_in_ = f((L32 + 1) * BT * C);
  qkv_ = f(L * BT * 3 * C);
  probs_ = f(L * max_B * H * max_T * max_T);
  attn_ctx_ = f(L32 * BT * C);
  proj_ = f(BT * C);
  attn_sum_ = f(L * BT * C);
  ln1_out_ = f(L32 * BT * C);
  ln1_mean_ = f(L * BT);
  ln1_rstd_ = f(L * BT);
  ffn_pre_ = f(L * BT * I);
  if (saves_bf16_) {
    x_in16_ = h(L * BT * C);
    attn16_ = h(L * BT * C);
    ln1_16_ = h(L * BT * C);
    ffn_act16_ = h(L * BT * I);
  } else {
    ffn_act_ = f(L * BT * I);
  }
  ffn_sum_ = f(L * BT * C);
  ln2_mean_ = f(L * BT);
  ln2_rstd_ = f(L * BT);
  head_in_ = f(max_B * C);
  head_pre_ = f(max_B * C);
  head_act_ = f(max_B * C);
  head_drop_ = f(max_B * C);
  logits_ = f(max_B * K);
  probs_out_ = f(max_B * K);
  losses_ = f(max_B);
  loss_ = f(1);
  d_x_ = f(BT * C);
  d_x2_ = f(BT * C);
  d_qkv_ = f(BT * 3 * C);
  d_ctx_ = f(BT * C);
  d_ffn_ = f(BT * I);
  d_head_ = f(max_B * (K + 3 * C));
  targets_ = f(max_B * K);
  if (head == HeadKind::token_classifier) {
    tok_drop_ = f(BT * C);
    tok_logits_ = f(BT * K);
    tok_probs_ = f(BT * K);
    tok_losses_ = f(BT);
    d_tok_logits_ = f(BT * K);
    tok_labels_ = kernels::alloc(ctx, size_t(BT) * sizeof(int32_t));
  }
  batch_ = DeviceBatch(ctx, max_B, max_T, true);
  batch_.token_types_used = c.family().has_token_types();
}

namespace {

// Layer l's saved activations in the workspace for a (B, T) batch.
LayerActs layer_acts(float* layer_in, float* qkv, float* probs, float* attn_ctx, float* proj, float* attn_sum,
                     float* ln1, float* ln1_mean, float* ln1_rstd, float* ffn_pre, float* ffn_act, float* ffn_sum,
                     float* ln2_mean, float* ln2_rstd, int64_t l, int64_t BT, int64_t C, int64_t I,
                     int64_t probs_stride) {
  LayerActs a;
  a.x_in = layer_in + l * BT * C;
  a.x_out = layer_in + (l + 1) * BT * C;
  a.qkv = qkv + l * BT * 3 * C;
  a.probs = probs + l * probs_stride;
  a.attn = attn_ctx + l * BT * C;
  a.proj = proj;
  a.attn_sum = attn_sum + l * BT * C;
  a.ln1 = ln1 + l * BT * C;
  a.ln1_mean = ln1_mean + l * BT;
  a.ln1_rstd = ln1_rstd + l * BT;
  a.ffn_pre = ffn_pre + l * BT * I;
  a.ffn_act = ffn_act + l * BT * I;
  a.ffn_sum = ffn_sum + l * BT * C;
  a.ln2_mean = ln2_mean + l * BT;
  a.ln2_rstd = ln2_rstd + l * BT;
  return a;
}

}  // namespace

float forward_backward_hidden(const ExecCtx& ctx, const RobertaModel& model, const Batch& host_batch,
                              const DropoutConfig& dropout, uint64_t seed, float* grads, TrainWorkspace& ws,
                              HiddenHead& head) {
  const RobertaConfig& c = model.config();
  RC_CHECK(host_batch.B <= ws.max_B() && host_batch.T <= ws.max_T(), Errc::invalid_argument, "batch ", host_batch.B,
           "x", host_batch.T, " exceeds the workspace ", ws.max_B(), "x", ws.max_T());
  RC_CHECK(model.device() == ctx.device && ws.device_ == ctx.device, Errc::invalid_argument,
           "forward_backward: the model, the workspace and the context are on different devices");
  kernels::use_device(ctx);  // the caller's thread may not have chosen it (it starts on device 0)
  const bool save16 = ws.saves_bf16_;
  RC_CHECK(!save16 || cpu_bf16_gemms(ctx), Errc::invalid_argument,
           "forward_backward: this workspace saves bf16 GEMM inputs; run it with bf16 GEMMs");
  kernels::Profiler* prof = ctx.profiler;
  if (prof) prof->set_phase(kernels::Phase::forward);
  const int32_t* labels = nullptr;
  Batch batch;
  profiled(ctx, F::other, [&] {
    validate_batch(c, host_batch);
    batch = ws.batch_.stage(ctx, host_batch, head.row_labels(), &labels);
  });

  const ModelOffsets& o = model.offsets();
  const float* P = model.params();
  float* G = grads;
  const int64_t B = batch.B, T = batch.T, BT = B * T, C = c.hidden_size, I = c.intermediate_size;
  const int64_t H = c.num_attention_heads, NL = c.num_hidden_layers;
  const float eps = c.layer_norm_eps;
  const int64_t probs_stride = B * H * T * T;
  // Dropout sites: 0 embeddings, then 3 per layer (attention probs, attention output,
  // FFN output), then the head's (from 1 + 3·NL). Each gets its own stream from the step seed,
  // and within it each row the stream of its global sample index (kernels/dropout.h).
  const uint64_t row0 = host_batch.first_sample;
  auto seed_of = [&](int64_t site) { return dropout_site_seed(seed, uint64_t(site)); };
  const bool attention_output_dropout = c.family().attention_output_dropout;
  auto layer_dropout = [&](int64_t l) {
    return LayerDropout{dropout.hidden,           dropout.attention,  seed_of(1 + 3 * l),
                        seed_of(2 + 3 * l),       seed_of(3 + 3 * l), row0,
                        !attention_output_dropout};
  };
  auto acts = [&](int64_t l) {
    if (!save16)
      return layer_acts(ws.layer_in_.f32(), ws.qkv_.f32(), ws.probs_.f32(), ws.attn_ctx_.f32(), ws.proj_.f32(),
                        ws.attn_sum_.f32(), ws.ln1_out_.f32(), ws.ln1_mean_.f32(), ws.ln1_rstd_.f32(),
                        ws.ffn_pre_.f32(), ws.ffn_act_.f32(), ws.ffn_sum_.f32(), ws.ln2_mean_.f32(), ws.ln2_rstd_.f32(),
                        l, BT, C, I, probs_stride);
    // One layer of fp32 rows, reused by every layer (x_in and x_out share it: LN2 writes x_out
    // after the last read of x_in), and the bf16 GEMM inputs in per-layer slots.
    LayerActs a =
        layer_acts(ws.layer_in_.f32(), ws.qkv_.f32(), ws.probs_.f32(), ws.attn_ctx_.f32(), ws.proj_.f32(),
                   ws.attn_sum_.f32(), ws.ln1_out_.f32(), ws.ln1_mean_.f32(), ws.ln1_rstd_.f32(), ws.ffn_pre_.f32(),
                   nullptr, ws.ffn_sum_.f32(), ws.ln2_mean_.f32(), ws.ln2_rstd_.f32(), l, BT, C, I, probs_stride);
    a.x_in = a.x_out = ws.layer_in_.f32();
    a.attn = ws.attn_ctx_.f32();
    a.ln1 = ws.ln1_out_.f32();
    auto slot16 = [&](Buffer& b, int64_t layer, int64_t width) {
      return kernels::GemmInput{b.as<uint16_t>() + layer * BT * width, kernels::ActType::bf16, nullptr};
    };
    a.x_in_gemm = slot16(ws.x_in16_, l, C);
    if (l + 1 < NL) a.x_out_gemm = slot16(ws.x_in16_, l + 1, C);
    a.attn_gemm = slot16(ws.attn16_, l, C);
    a.ln1_gemm = slot16(ws.ln1_16_, l, C);
    a.ffn_act = ws.ffn_act16_.as<uint16_t>() + l * BT * I;
    a.ffn_type = kernels::ActType::bf16;
    a.ffn_act_scratch = ws.d_ffn_.f32();  // gelu_new / relu: the forward's fp32 rows before the copy
    return a;
  };
  int32_t* positions = ws.batch_.positions.as<int32_t>();
  // bf16 on the CPU: the GEMM weights' bf16 copy, converted here only when the parameters
  // changed since it was made (the fused AdamW keeps it fresh: bf16_weights.h).
  Bf16WeightCopy* w16 = cpu_bf16_gemms(ctx) ? ws.bf16_weights : nullptr;
  if (w16) w16->refresh(ctx, model);
  auto weights = [&](int64_t l) {
    const LayerWeights w = model.layer_weights(size_t(l), true);
    return w16 ? w16->attach(w, size_t(l)) : w;
  };

  // ---- forward, saving what backward needs
  profiled(ctx, F::other, [&] { family_position_ids(ctx, c, positions, batch); });
  const bool types = o.tte >= 0;  // DistilBERT has no token type embeddings
  profiled(ctx, F::embedding, [&] {
    kernels::embedding_forward(ctx, ws.emb_sum_.f32(), batch.ids, positions, batch.token_types, P + o.wte, P + o.wpe,
                               types ? P + o.tte : nullptr, BT, C);
  });
  float* x0 = ws.layer_in_.f32();
  profiled(ctx, F::layernorm, [&] {
    kernels::layernorm_forward(ctx, x0, ws.emb_mean_.f32(), ws.emb_rstd_.f32(), ws.emb_sum_.f32(), P + o.ln_emb_gamma,
                               P + o.ln_emb_beta, BT, C, eps);
  });
  profiled(ctx, F::dropout, [&] { kernels::dropout_forward(ctx, x0, x0, B, T * C, dropout.hidden, seed_of(0), row0); });
  if (save16)  // the first layer's GEMM input (the later ones are written by the LayerNorm before)
    profiled(ctx, F::convert, [&] { kernels::convert_to_bf16(ctx, ws.x_in16_.as<uint16_t>(), x0, BT * C); });

  for (int64_t l = 0; l < NL; ++l) {
    const LayerDropout d = layer_dropout(l);
    encoder_layer_forward(ctx, c, weights(l), acts(l), batch.seq_lens, B, T, &d, Rows::all);
  }

  // ---- the head, then (if it asks) the backward through the layers from its d_x.
  // Parameter grads ACCUMULATE into G; activation grads overwrite.
  const float* x_last = ws.layer_in_.f32() + (save16 ? 0 : NL * BT * C);
  float* d_x = ws.d_x_.f32();  // gradient w.r.t. the current layer's output
  profiled(ctx, F::other, [&] { kernels::zero(ctx, d_x, BT * C); });
  const HiddenHead::Result hr = head.run(x_last, d_x, labels);
  if (!hr.backward) return hr.loss;
  if (prof) prof->set_phase(kernels::Phase::backward);

  const LayerBackwardScratch scratch{ws.d_x2_.f32(), ws.d_qkv_.f32(), ws.d_ctx_.f32(), ws.d_ffn_.f32()};
  for (int64_t l = NL - 1; l >= 0; --l) {
    encoder_layer_backward(ctx, c, weights(l), model.layer_grads(G, size_t(l)), acts(l), batch.seq_lens, B, T,
                           layer_dropout(l), d_x, scratch);
    if (ws.on_layer_grads) ws.on_layer_grads(l);
  }

  // Embeddings: x0 = dropout(LN(emb_sum))
  float* d_s = scratch.d_s;
  profiled(ctx, F::dropout,
           [&] { kernels::dropout_backward(ctx, d_x, d_x, B, T * C, dropout.hidden, seed_of(0), row0); });
  profiled(ctx, F::layernorm, [&] {
    kernels::layernorm_backward(ctx, d_s, G + o.ln_emb_gamma, G + o.ln_emb_beta, d_x, ws.emb_sum_.f32(),
                                P + o.ln_emb_gamma, ws.emb_mean_.f32(), ws.emb_rstd_.f32(), BT, C);
  });
  profiled(ctx, F::embedding, [&] {
    // One pass over d_s for every family; a position table without a padding row (BERT,
    // DistilBERT) gives every position its gradient.
    kernels::embedding_backward(ctx, G + o.wte, G + o.wpe, types ? G + o.tte : nullptr, d_s, batch.ids, positions,
                                batch.token_types, BT, C, c.pad_token_id,
                                c.family().position_pad_row ? c.pad_token_id : -1);
  });
  return hr.loss;
}

namespace {

// The sequence head on token 0 of each row, the family's variant (family.h SequenceHead):
// RobertaClassificationHead dropout → dense → tanh → dropout → out_proj; BERT's pooler (dense
// → tanh) → dropout → classifier; DistilBERT's pre_classifier → ReLU → dropout → classifier.
// Then the loss and its backward down to d_x_last.
struct ClassifierHead final : HiddenHead {
  const ExecCtx& ctx;
  const RobertaModel& model;
  TrainWorkspace::HeadBuffers ws;
  const int32_t* host_labels;
  const float* host_values = nullptr;  // BCE / MSE targets (B, K)
  SequenceLoss loss_kind = SequenceLoss::cross_entropy;
  float smoothing = 0;  // cross-entropy only (Targets::label_smoothing)
  float dropout_p;
  uint64_t seed0, seed1, row0;
  int64_t B, T;
  float loss_scale;
  float* grads;
  float* logits_out;
  ClassifierHead(const ExecCtx& ctx_, const RobertaModel& model_, TrainWorkspace::HeadBuffers ws_,
                 const int32_t* host_labels_, float dropout_p_, uint64_t seed0_, uint64_t seed1_, uint64_t row0_,
                 int64_t B_, int64_t T_, float loss_scale_, float* grads_, float* logits_out_)
      : ctx(ctx_),
        model(model_),
        ws(ws_),
        host_labels(host_labels_),
        dropout_p(dropout_p_),
        seed0(seed0_),
        seed1(seed1_),
        row0(row0_),
        B(B_),
        T(T_),
        loss_scale(loss_scale_),
        grads(grads_),
        logits_out(logits_out_) {}

  const int32_t* row_labels() const override { return host_labels; }

  Result run(const float* x_last, float* d_x, const int32_t* labels) override {
    const ModelOffsets& o = model.offsets();
    const float* P = model.params();
    float* G = grads;
    const int64_t C = model.config().hidden_size, K = model.config().num_labels();
    const SequenceHead variant = model.config().family().sequence_head;
    const float input_dropout = variant == SequenceHead::roberta ? dropout_p : 0.0f;
    const bool relu = variant == SequenceHead::pre_relu;
    profiled(ctx, F::head, [&] {
      kernels::gather_first_tokens(ctx, ws.head_in, x_last, B, T, C);
      kernels::dropout_forward(ctx, ws.head_in, ws.head_in, B, C, input_dropout, seed0, row0);
    });
    profiled(ctx, F::gemm_head, [&] {
      kernels::matmul_nt(ctx, ws.head_pre, ws.head_in, P + o.head_dense_w, P + o.head_dense_b, B, C, C);
    });
    profiled(ctx, F::head, [&] {
      if (relu)
        kernels::relu_forward(ctx, ws.head_act, ws.head_pre, B * C);
      else
        kernels::tanh_forward(ctx, ws.head_act, ws.head_pre, B * C);
      kernels::dropout_forward(ctx, ws.head_drop, ws.head_act, B, C, dropout_p, seed1, row0);
    });
    profiled(ctx, F::gemm_head,
             [&] { kernels::matmul_nt(ctx, ws.logits, ws.head_drop, P + o.head_out_w, P + o.head_out_b, B, K, C); });
    float loss = 0;
    const bool ce = loss_kind == SequenceLoss::cross_entropy;
    const kernels::PointwiseLoss pointwise = loss_kind == SequenceLoss::mse ? kernels::PointwiseLoss::squared_error
                                                                            : kernels::PointwiseLoss::bce_with_logits;
    const float* targets = host_values;
    profiled(ctx, F::loss, [&] {
      if (ce) {
        kernels::cross_entropy_forward(ctx, ws.losses, ws.probs_out, ws.logits, labels, B, K, smoothing);
      } else {
        if (ctx.device != Device::cpu) {
          kernels::upload(ctx, ws.targets, host_values, size_t(B * K) * sizeof(float));
          targets = ws.targets;
        }
        kernels::pointwise_loss_forward(ctx, pointwise, ws.losses, ws.logits, targets, B, K);
      }
      kernels::mean_forward(ctx, ws.loss, ws.losses, B);
      if (logits_out) kernels::download(ctx, logits_out, ws.logits, size_t(B * K) * sizeof(float));
      kernels::download(ctx, &loss, ws.loss, sizeof(float));
    });
    if (!ce) loss /= float(K);  // the row sums' mean over rows → the mean over every element

    if (ctx.profiler) ctx.profiler->set_phase(kernels::Phase::backward);
    float* d_logits = ws.d_head;
    float* d_head_drop = d_logits + B * K;  // d_head holds B·K + 3·B·C
    float* d_head_pre = d_head_drop + B * C;
    float* d_head_in = d_head_pre + B * C;
    profiled(ctx, F::loss, [&] {
      if (ce)
        kernels::cross_entropy_backward(ctx, d_logits, ws.probs_out, labels, B, K, loss_scale / float(B), smoothing);
      else
        kernels::pointwise_loss_backward(ctx, pointwise, d_logits, ws.logits, targets, B, K, loss_scale / float(B * K));
    });
    profiled(ctx, F::gemm_head, [&] {
      kernels::linear_backward(ctx, d_head_drop, G + o.head_out_w, G + o.head_out_b, d_logits, ws.head_drop,
                               P + o.head_out_w, nullptr, B, K, C, false);
    });
    profiled(ctx, F::head, [&] {
      kernels::dropout_backward(ctx, d_head_drop, d_head_drop, B, C, dropout_p, seed1, row0);
      if (relu)
        kernels::relu_backward(ctx, d_head_pre, d_head_drop, ws.head_act, B * C);
      else
        kernels::tanh_backward(ctx, d_head_pre, d_head_drop, ws.head_act, B * C);
    });
    profiled(ctx, F::gemm_head, [&] {
      kernels::linear_backward(ctx, d_head_in, G + o.head_dense_w, G + o.head_dense_b, d_head_pre, ws.head_in,
                               P + o.head_dense_w, nullptr, B, C, C, false);
    });
    profiled(ctx, F::head, [&] {
      kernels::dropout_backward(ctx, d_head_in, d_head_in, B, C, input_dropout, seed0, row0);
      kernels::scatter_first_tokens(ctx, d_x, d_head_in, B, T, C);
    });
    return {loss, true};
  }
};

// RobertaForTokenClassification's head on every token: dropout → classifier, the mean
// cross-entropy over the tokens labelled (not -100), and its backward down to d_x_last.
struct TokenClassifierHead final : HiddenHead {
  const ExecCtx& ctx;
  const RobertaModel& model;
  TrainWorkspace::HeadBuffers ws;
  const int32_t* host_labels;  // (B·T)
  float smoothing = 0;         // Targets::label_smoothing
  float dropout_p;
  uint64_t seed, row0;
  int64_t B, T;
  float loss_scale;
  float* grads;
  TokenClassifierHead(const ExecCtx& ctx_, const RobertaModel& model_, TrainWorkspace::HeadBuffers ws_,
                      const int32_t* host_labels_, float dropout_p_, uint64_t seed_, uint64_t row0_, int64_t B_,
                      int64_t T_, float loss_scale_, float* grads_)
      : ctx(ctx_),
        model(model_),
        ws(ws_),
        host_labels(host_labels_),
        dropout_p(dropout_p_),
        seed(seed_),
        row0(row0_),
        B(B_),
        T(T_),
        loss_scale(loss_scale_),
        grads(grads_) {}

  Result run(const float* x_last, float* d_x, const int32_t*) override {
    const ModelOffsets& o = model.offsets();
    const float* P = model.params();
    const int64_t C = model.config().hidden_size, K = model.config().num_labels(), BT = B * T;
    int64_t counted = 0;
    for (int64_t i = 0; i < BT; ++i) counted += host_labels[i] >= 0;
    const int32_t* labels = host_labels;
    profiled(ctx, F::head, [&] {
      if (ctx.device != Device::cpu) {
        kernels::upload(ctx, ws.tok_labels, host_labels, size_t(BT) * sizeof(int32_t));
        labels = ws.tok_labels;
      }
      // Dropout rows are the batch's rows (each T·C wide), keyed like the encoder's.
      kernels::dropout_forward(ctx, ws.tok_drop, x_last, B, T * C, dropout_p, seed, row0);
    });
    profiled(ctx, F::gemm_head, [&] {
      kernels::matmul_nt(ctx, ws.tok_logits, ws.tok_drop, P + o.head_out_w, P + o.head_out_b, BT, K, C);
    });
    float mean_all = 0;
    profiled(ctx, F::loss, [&] {
      kernels::cross_entropy_forward(ctx, ws.tok_losses, ws.tok_probs, ws.tok_logits, labels, BT, K, smoothing);
      kernels::mean_forward(ctx, ws.loss, ws.tok_losses, BT);
      kernels::download(ctx, &mean_all, ws.loss, sizeof(float));
    });
    if (counted == 0) return {0.0f, false};
    const float loss = float(double(mean_all) * double(BT) / double(counted));
    if (ctx.profiler) ctx.profiler->set_phase(kernels::Phase::backward);
    float* G = grads;
    profiled(ctx, F::loss, [&] {
      kernels::cross_entropy_backward(ctx, ws.d_tok_logits, ws.tok_probs, labels, BT, K, loss_scale / float(counted),
                                      smoothing);
    });
    profiled(ctx, F::gemm_head, [&] {
      kernels::linear_backward(ctx, d_x, G + o.head_out_w, G + o.head_out_b, ws.d_tok_logits, ws.tok_drop,
                               P + o.head_out_w, nullptr, BT, K, C, false);
    });
    profiled(ctx, F::head, [&] { kernels::dropout_backward(ctx, d_x, d_x, B, T * C, dropout_p, seed, row0); });
    return {loss, true};
  }
};

}  // namespace

TrainWorkspace::HeadBuffers TrainWorkspace::head_buffers() {
  HeadBuffers h{head_in_.f32(), head_pre_.f32(), head_act_.f32(), head_drop_.f32(), logits_.f32(), probs_out_.f32(),
                losses_.f32(),  loss_.f32(),     d_head_.f32(),   targets_.f32(),   nullptr,       nullptr,
                nullptr,        nullptr,         nullptr,         nullptr};
  if (tok_drop_.data()) {
    h.tok_drop = tok_drop_.f32();
    h.tok_logits = tok_logits_.f32();
    h.tok_probs = tok_probs_.f32();
    h.tok_losses = tok_losses_.f32();
    h.d_tok_logits = d_tok_logits_.f32();
    h.tok_labels = tok_labels_.as<int32_t>();
  }
  return h;
}

float forward_backward(const ExecCtx& ctx, const RobertaModel& model, const Batch& host_batch, Targets targets,
                       const DropoutConfig& dropout, uint64_t seed, float loss_scale, float* grads, TrainWorkspace& ws,
                       float* logits_out) {
  const RobertaConfig& c = model.config();
  RC_CHECK(model.head_kind() != HeadKind::masked_lm, Errc::invalid_argument,
           "forward_backward needs a classifier; this model has a masked-LM head (mlm_forward_backward)");
  const int64_t K = c.num_labels();
  const int64_t head_site = 1 + 3 * c.num_hidden_layers;
  RC_CHECK(targets.label_smoothing >= 0 && targets.label_smoothing < 1, Errc::invalid_argument,
           "label smoothing must be in [0, 1), got ", targets.label_smoothing);
  if (model.head_kind() == HeadKind::token_classifier) {
    RC_CHECK(targets.labels && ws.head_buffers().tok_drop, Errc::invalid_argument,
             "forward_backward: a token classifier needs per-token labels and a workspace planned for it");
    for (int64_t i = 0; i < host_batch.B * host_batch.T; ++i)
      RC_CHECK(targets.labels[i] == -100 || (targets.labels[i] >= 0 && targets.labels[i] < K), Errc::invalid_argument,
               "token label ", targets.labels[i], " outside [0, ", K, ") and not -100");
    // DistilBertForTokenClassification's dropout is config.dropout, not seq_classif_dropout.
    const float token_dropout = c.family().token_head_uses_hidden_dropout ? dropout.hidden : dropout.classifier;
    TokenClassifierHead head(ctx, model, ws.head_buffers(), targets.labels, token_dropout,
                             dropout_site_seed(seed, uint64_t(head_site)), host_batch.first_sample, host_batch.B,
                             host_batch.T, loss_scale, grads);
    head.smoothing = targets.label_smoothing;
    return forward_backward_hidden(ctx, model, host_batch, dropout, seed, grads, ws, head);
  }
  const SequenceLoss kind = sequence_loss_of(c);
  RC_CHECK(targets.label_smoothing == 0 || kind == SequenceLoss::cross_entropy, Errc::invalid_argument,
           "label smoothing is for cross-entropy (single-label or token classification), not ", c.problem_type);
  if (kind == SequenceLoss::cross_entropy) {
    RC_CHECK(targets.labels, Errc::invalid_argument, "forward_backward: single-label classification needs labels");
    for (int64_t b = 0; b < host_batch.B; ++b)
      RC_CHECK(targets.labels[b] >= 0 && targets.labels[b] < K, Errc::invalid_argument, "label ", targets.labels[b],
               " outside [0, ", K, ")");
  } else {
    RC_CHECK(targets.values, Errc::invalid_argument, "forward_backward: ", c.problem_type, " needs float targets (", K,
             " per row)");
    for (int64_t i = 0; i < host_batch.B * K; ++i)
      RC_CHECK(std::isfinite(targets.values[i]), Errc::invalid_argument, "target ", targets.values[i],
               " is not a finite number");
  }
  ClassifierHead head(ctx, model, ws.head_buffers(), targets.labels, dropout.classifier,
                      dropout_site_seed(seed, uint64_t(head_site)), dropout_site_seed(seed, uint64_t(head_site + 1)),
                      host_batch.first_sample, host_batch.B, host_batch.T, loss_scale, grads, logits_out);
  head.host_values = targets.values;
  head.loss_kind = kind;
  head.smoothing = targets.label_smoothing;
  return forward_backward_hidden(ctx, model, host_batch, dropout, seed, grads, ws, head);
}

}  // namespace rc::model
