// RobertaForSequenceClassification forward (inference) and forward + backward (training)
// on the kernels layer. Reads like the math; every op is a kernel call.
#include "model/roberta_model.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/check.h"
#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/dropout.h"
#include "kernels/embedding.h"
#include "kernels/layernorm.h"
#include "kernels/loss.h"
#include "kernels/matmul.h"
#include "kernels/optimizer.h"

namespace rc::model {

using kernels::ExecCtx;

// ---------------------------------------------------------------------------------------
// Storage

void FloatBuffer::Free::operator()(float* p) const noexcept { std::free(p); }

FloatBuffer::FloatBuffer(int64_t n) : size_(n) {
  if (n <= 0) return;
  const size_t bytes = (size_t(n) * sizeof(float) + 63) / 64 * 64;
  float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  data_.reset(p);
}

// Refuse configs whose parameters alone would not fit in memory, before allocating:
// config.json is user input.
static void check_model_size(const RobertaConfig& c, const ParamLayout& layout) {
  constexpr int64_t max_params = int64_t(4) << 30;  // 16 GiB of fp32
  RC_CHECK(layout.total() > 0 && layout.total() <= max_params, Errc::resource_exhausted, "config.json describes ",
           layout.total(), " parameters, more than this build supports (", max_params, ")");
}

RobertaModel::RobertaModel(RobertaConfig config, HeadKind head)
    : config_(std::move(config)),
      head_(head),
      layout_(ParamLayout::build(config_, head)),
      offsets_(model_offsets(layout_, config_)) {
  check_model_size(config_, layout_);
  params_ = FloatBuffer(layout_.total());
}

std::span<float> RobertaModel::param(std::string_view name) {
  const ParamEntry* e = layout_.find(name);
  RC_CHECK(e, Errc::not_found, "no parameter named '", name, "'");
  return {params_.data() + e->offset, size_t(e->numel)};
}

std::span<const float> RobertaModel::param(std::string_view name) const {
  const ParamEntry* e = layout_.find(name);
  RC_CHECK(e, Errc::not_found, "no parameter named '", name, "'");
  return {params_.data() + e->offset, size_t(e->numel)};
}

namespace {

// Deterministic normal samples from a counter (splitmix64 + Box-Muller): the same seed
// gives the same weights on every machine and standard library.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fill_normal(float* x, int64_t n, float stddev, uint64_t& state) {
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = (double(splitmix64(state) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    const double u2 = double(splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
    const double r = std::sqrt(-2.0 * std::log(u1));
    x[i] = float(stddev * r * std::cos(2.0 * M_PI * u2));
    if (i + 1 < n) x[i + 1] = float(stddev * r * std::sin(2.0 * M_PI * u2));
  }
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

void RobertaModel::init_weights(uint64_t seed, bool head_only) {
  uint64_t state = seed ^ 0x5DEECE66Dull;
  for (const ParamEntry& e : layout_.entries()) {
    if (head_only && !e.is_head) continue;
    float* p = params_.data() + e.offset;
    // lm_head.layer_norm is the one LayerNorm HF names in snake case; lm_head.bias starts at 0.
    if (e.name.find("LayerNorm.weight") != std::string::npos || e.name == "lm_head.layer_norm.weight") {
      std::fill(p, p + e.numel, 1.0f);
    } else if (ends_with(e.name, ".bias") || e.name.find("LayerNorm") != std::string::npos) {
      std::fill(p, p + e.numel, 0.0f);
    } else {
      fill_normal(p, e.numel, config_.initializer_range, state);
    }
  }
  if (!head_only) {
    // nn.Embedding(padding_idx=pad) rows start at zero (word and position tables).
    const int64_t C = config_.hidden_size, pad = config_.pad_token_id;
    std::fill_n(params_.data() + offsets_.wte + pad * C, C, 0.0f);
    if (pad < config_.max_position_embeddings) std::fill_n(params_.data() + offsets_.wpe + pad * C, C, 0.0f);
  }
}

// ---------------------------------------------------------------------------------------
// Batches

void validate_batch(const RobertaConfig& c, const Batch& batch) {
  RC_CHECK(batch.B > 0 && batch.T > 0, Errc::invalid_argument, "empty batch");
  RC_CHECK(batch.T <= c.max_tokens(), Errc::invalid_argument, "sequence length ", batch.T,
           " exceeds the model's limit of ", c.max_tokens(), " tokens\nHINT: truncate with --max-length");
  for (int64_t b = 0; b < batch.B; ++b) {
    const int32_t len = batch.seq_lens[b];
    RC_CHECK(len >= 1 && len <= batch.T, Errc::invalid_argument, "row ", b, ": length ", len, " not in [1, ",
             batch.T, "]");
    for (int64_t t = 0; t < batch.T; ++t) {
      const int32_t id = batch.ids[b * batch.T + t];
      RC_CHECK(id >= 0 && id < c.vocab_size, Errc::invalid_argument, "token id ", id, " outside the vocabulary (",
               c.vocab_size, ")\nHINT: the tokenizer files do not belong to this model");
      if (batch.token_types) {
        const int32_t tt = batch.token_types[b * batch.T + t];
        RC_CHECK(tt >= 0 && tt < c.type_vocab_size, Errc::invalid_argument, "token type ", tt, " outside [0, ",
                 c.type_vocab_size, ")");
      }
    }
  }
}

void make_positions(int32_t* positions, const Batch& batch, int32_t pad) {
  for (int64_t b = 0; b < batch.B; ++b) {
    int32_t count = 0;
    for (int64_t t = 0; t < batch.T; ++t) {
      const int32_t id = batch.ids[b * batch.T + t];
      positions[b * batch.T + t] = id != pad ? pad + ++count : pad;
    }
  }
}

namespace {

// Distinct dropout streams per site and step: site k of a step seeded s.
uint64_t site_seed(uint64_t seed, uint64_t site) {
  uint64_t state = seed ^ (site * 0xD1B54A32D192ED03ull);
  return splitmix64(state);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Inference

void embed_for_inference(const ExecCtx& ctx, const RobertaModel& model, const Batch& batch, int32_t* positions,
                         float* scratch, float* x) {
  const RobertaConfig& c = model.config();
  const ModelOffsets& o = model.offsets();
  const float* P = model.params();
  const int64_t BT = batch.B * batch.T, C = c.hidden_size;
  make_positions(positions, batch, c.pad_token_id);
  kernels::embedding_forward(ctx, scratch, batch.ids, positions, batch.token_types, P + o.wte, P + o.wpe, P + o.tte,
                             BT, C);
  kernels::layernorm_forward(ctx, x, nullptr, nullptr, scratch, P + o.ln_emb_gamma, P + o.ln_emb_beta, BT, C,
                             c.layer_norm_eps);
}

InferenceWorkspace::InferenceWorkspace(const RobertaConfig& c, int64_t max_B, int64_t max_T)
    : max_B_(max_B), max_T_(max_T) {
  RC_CHECK(max_B > 0 && max_T > 0, Errc::invalid_argument, "workspace needs a positive batch and length");
  const int64_t BT = max_B * max_T, C = c.hidden_size;
  x_ = FloatBuffer(BT * C);
  qkv_ = FloatBuffer(BT * 3 * C);
  attn_ = FloatBuffer(BT * C);
  tmp_ = FloatBuffer(BT * C);
  ffn_ = FloatBuffer(BT * c.intermediate_size);
  head_ = FloatBuffer(2 * max_B * C);
  positions_.resize(BT);
}

void forward_logits(const ExecCtx& ctx, const RobertaModel& model, const Batch& batch, InferenceWorkspace& ws,
                    float* logits) {
  const RobertaConfig& c = model.config();
  RC_CHECK(batch.B <= ws.max_B() && batch.T <= ws.max_T(), Errc::invalid_argument, "batch ", batch.B, "x", batch.T,
           " exceeds the workspace ", ws.max_B(), "x", ws.max_T());
  validate_batch(c, batch);
  const ModelOffsets& o = model.offsets();
  const float* P = model.params();
  const int64_t B = batch.B, T = batch.T, BT = B * T, C = c.hidden_size, I = c.intermediate_size;
  const int64_t H = c.num_attention_heads, D = c.head_dim(), K = c.num_labels();
  const float eps = c.layer_norm_eps;
  float *x = ws.x_.data(), *qkv = ws.qkv_.data(), *attn = ws.attn_.data(), *tmp = ws.tmp_.data();
  float* ffn = ws.ffn_.data();

  embed_for_inference(ctx, model, batch, ws.positions_.data(), tmp, x);

  for (const LayerOffsets& L : o.layers) {
    kernels::matmul_nt(ctx, qkv, x, P + L.qkv_w, P + L.qkv_b, BT, 3 * C, C);
    kernels::attention_forward(ctx, attn, nullptr, qkv, batch.seq_lens, B, T, H, D, 0.0f, 0);
    kernels::matmul_nt(ctx, tmp, attn, P + L.attn_out_w, P + L.attn_out_b, BT, C, C);
    kernels::add_layernorm_forward(ctx, x, tmp, nullptr, nullptr, tmp, x, P + L.ln_attn_gamma, P + L.ln_attn_beta,
                                   BT, C, eps);
    kernels::matmul_nt(ctx, ffn, x, P + L.ffn_in_w, P + L.ffn_in_b, BT, I, C);
    kernels::gelu_erf_forward(ctx, ffn, ffn, BT * I);
    kernels::matmul_nt(ctx, tmp, ffn, P + L.ffn_out_w, P + L.ffn_out_b, BT, C, I);
    kernels::add_layernorm_forward(ctx, x, tmp, nullptr, nullptr, tmp, x, P + L.ln_ffn_gamma, P + L.ln_ffn_beta, BT,
                                   C, eps);
  }

  // Head on the first token only: dense → tanh → out_proj.
  float* cls = ws.head_.data();
  float* hidden = cls + B * C;
  for (int64_t b = 0; b < B; ++b) std::memcpy(cls + b * C, x + b * T * C, C * sizeof(float));
  kernels::matmul_nt(ctx, hidden, cls, P + o.head_dense_w, P + o.head_dense_b, B, C, C);
  kernels::tanh_forward(ctx, hidden, hidden, B * C);
  kernels::matmul_nt(ctx, logits, hidden, P + o.head_out_w, P + o.head_out_b, B, K, C);
}

// ---------------------------------------------------------------------------------------
// Training

DropoutConfig DropoutConfig::from(const RobertaConfig& c) {
  return {c.hidden_dropout_prob, c.attention_probs_dropout_prob, c.classifier_dropout_prob()};
}

TrainWorkspace::TrainWorkspace(const RobertaConfig& c, int64_t max_B, int64_t max_T) : max_B_(max_B), max_T_(max_T) {
  RC_CHECK(max_B > 0 && max_T > 0, Errc::invalid_argument, "workspace needs a positive batch and length");
  const int64_t L = c.num_hidden_layers, BT = max_B * max_T, C = c.hidden_size, I = c.intermediate_size;
  const int64_t H = c.num_attention_heads, K = c.num_labels();
  emb_sum_ = FloatBuffer(BT * C);
  emb_mean_ = FloatBuffer(BT);
  emb_rstd_ = FloatBuffer(BT);
  layer_in_ = FloatBuffer((L + 1) * BT * C);
  qkv_ = FloatBuffer(L * BT * 3 * C);
  probs_ = FloatBuffer(L * max_B * H * max_T * max_T);
  attn_ctx_ = FloatBuffer(L * BT * C);
  attn_proj_ = FloatBuffer(BT * C);
  attn_sum_ = FloatBuffer(L * BT * C);
  ln1_out_ = FloatBuffer(L * BT * C);
  ln1_mean_ = FloatBuffer(L * BT);
  ln1_rstd_ = FloatBuffer(L * BT);
  ffn_pre_ = FloatBuffer(L * BT * I);
  ffn_act_ = FloatBuffer(L * BT * I);
  ffn_proj_ = FloatBuffer(BT * C);
  ffn_sum_ = FloatBuffer(L * BT * C);
  ln2_mean_ = FloatBuffer(L * BT);
  ln2_rstd_ = FloatBuffer(L * BT);
  head_in_ = FloatBuffer(max_B * C);
  head_pre_ = FloatBuffer(max_B * C);
  head_act_ = FloatBuffer(max_B * C);
  head_drop_ = FloatBuffer(max_B * C);
  logits_ = FloatBuffer(max_B * K);
  probs_out_ = FloatBuffer(max_B * K);
  losses_ = FloatBuffer(max_B);
  d_x_ = FloatBuffer(BT * C);
  d_x2_ = FloatBuffer(BT * C);
  d_qkv_ = FloatBuffer(BT * 3 * C);
  d_ctx_ = FloatBuffer(BT * C);
  d_ffn_ = FloatBuffer(BT * I);
  d_head_ = FloatBuffer(max_B * (K + 3 * C));
  positions_.resize(BT);
}

float forward_backward_hidden(const ExecCtx& ctx, const RobertaModel& model, const Batch& batch,
                              const DropoutConfig& dropout, uint64_t seed, float* grads, TrainWorkspace& ws,
                              HiddenHead& head) {
  const RobertaConfig& c = model.config();
  RC_CHECK(batch.B <= ws.max_B() && batch.T <= ws.max_T(), Errc::invalid_argument, "batch ", batch.B, "x", batch.T,
           " exceeds the workspace ", ws.max_B(), "x", ws.max_T());
  validate_batch(c, batch);

  const ModelOffsets& o = model.offsets();
  const float* P = model.params();
  float* G = grads;
  const int64_t B = batch.B, T = batch.T, BT = B * T, C = c.hidden_size, I = c.intermediate_size;
  const int64_t H = c.num_attention_heads, D = c.head_dim(), NL = c.num_hidden_layers;
  const float eps = c.layer_norm_eps;
  const int64_t probs_stride = B * H * T * T;
  // Dropout sites: 0 embeddings, then 3 per layer (attention probs, attention output,
  // FFN output), then the head's (from 1 + 3·NL). Each gets its own stream from the step seed.
  auto seed_of = [&](int64_t site) { return site_seed(seed, uint64_t(site)); };
  // ---- forward, saving what backward needs
  make_positions(ws.positions_.data(), batch, c.pad_token_id);
  kernels::embedding_forward(ctx, ws.emb_sum_.data(), batch.ids, ws.positions_.data(), batch.token_types, P + o.wte,
                             P + o.wpe, P + o.tte, BT, C);
  float* x0 = ws.layer_in_.data();
  kernels::layernorm_forward(ctx, x0, ws.emb_mean_.data(), ws.emb_rstd_.data(), ws.emb_sum_.data(),
                             P + o.ln_emb_gamma, P + o.ln_emb_beta, BT, C, eps);
  kernels::dropout_forward(ctx, x0, x0, BT * C, dropout.hidden, seed_of(0));

  for (int64_t l = 0; l < NL; ++l) {
    const LayerOffsets& L = o.layers[l];
    const float* x_in = ws.layer_in_.data() + l * BT * C;
    float* x_out = ws.layer_in_.data() + (l + 1) * BT * C;
    float* qkv = ws.qkv_.data() + l * BT * 3 * C;
    float* probs = ws.probs_.data() + l * probs_stride;
    float* ctx_out = ws.attn_ctx_.data() + l * BT * C;
    float* attn_sum = ws.attn_sum_.data() + l * BT * C;
    float* ln1 = ws.ln1_out_.data() + l * BT * C;
    float* ffn_pre = ws.ffn_pre_.data() + l * BT * I;
    float* ffn_act = ws.ffn_act_.data() + l * BT * I;
    float* ffn_sum = ws.ffn_sum_.data() + l * BT * C;

    kernels::matmul_nt(ctx, qkv, x_in, P + L.qkv_w, P + L.qkv_b, BT, 3 * C, C);
    kernels::attention_forward(ctx, ctx_out, probs, qkv, batch.seq_lens, B, T, H, D, dropout.attention,
                               seed_of(1 + 3 * l));
    kernels::matmul_nt(ctx, ws.attn_proj_.data(), ctx_out, P + L.attn_out_w, P + L.attn_out_b, BT, C, C);
    kernels::dropout_forward(ctx, ws.attn_proj_.data(), ws.attn_proj_.data(), BT * C, dropout.hidden,
                             seed_of(2 + 3 * l));
    kernels::add_layernorm_forward(ctx, ln1, attn_sum, ws.ln1_mean_.data() + l * BT, ws.ln1_rstd_.data() + l * BT,
                                   ws.attn_proj_.data(), x_in, P + L.ln_attn_gamma, P + L.ln_attn_beta, BT, C, eps);
    kernels::matmul_nt(ctx, ffn_pre, ln1, P + L.ffn_in_w, P + L.ffn_in_b, BT, I, C);
    kernels::gelu_erf_forward(ctx, ffn_act, ffn_pre, BT * I);
    kernels::matmul_nt(ctx, ws.ffn_proj_.data(), ffn_act, P + L.ffn_out_w, P + L.ffn_out_b, BT, C, I);
    kernels::dropout_forward(ctx, ws.ffn_proj_.data(), ws.ffn_proj_.data(), BT * C, dropout.hidden,
                             seed_of(3 + 3 * l));
    kernels::add_layernorm_forward(ctx, x_out, ffn_sum, ws.ln2_mean_.data() + l * BT, ws.ln2_rstd_.data() + l * BT,
                                   ws.ffn_proj_.data(), ln1, P + L.ln_ffn_gamma, P + L.ln_ffn_beta, BT, C, eps);
  }

  // The head, then (if it asks) the backward through the layers from its d_x.
  const float* x_last = ws.layer_in_.data() + NL * BT * C;
  float* d_x = ws.d_x_.data();    // gradient w.r.t. the current layer's output
  float* d_s = ws.d_x2_.data();   // gradient w.r.t. a LayerNorm's input (residual sum)
  kernels::zero(ctx, d_x, BT * C);
  const HiddenHead::Result hr = head.run(x_last, d_x);
  if (!hr.backward) return hr.loss;

  for (int64_t l = NL - 1; l >= 0; --l) {
    const LayerOffsets& L = o.layers[l];
    const float* x_in = ws.layer_in_.data() + l * BT * C;
    const float* qkv = ws.qkv_.data() + l * BT * 3 * C;
    const float* probs = ws.probs_.data() + l * probs_stride;
    const float* ctx_out = ws.attn_ctx_.data() + l * BT * C;
    const float* attn_sum = ws.attn_sum_.data() + l * BT * C;
    const float* ln1 = ws.ln1_out_.data() + l * BT * C;
    const float* ffn_pre = ws.ffn_pre_.data() + l * BT * I;
    const float* ffn_act = ws.ffn_act_.data() + l * BT * I;
    const float* ffn_sum = ws.ffn_sum_.data() + l * BT * C;
    float* d_ffn = ws.d_ffn_.data();

    // x_out = LN2(dropout(ffn_act·W2ᵀ + b2) + ln1)
    kernels::layernorm_backward(ctx, d_s, G + L.ln_ffn_gamma, G + L.ln_ffn_beta, d_x, ffn_sum, P + L.ln_ffn_gamma,
                                ws.ln2_mean_.data() + l * BT, ws.ln2_rstd_.data() + l * BT, BT, C);
    // d_x ← dropout'(d_s): the FFN branch's gradient (d_s itself continues as the residual's).
    kernels::dropout_backward(ctx, d_x, d_s, BT * C, dropout.hidden, seed_of(3 + 3 * l));
    kernels::matmul_tn(ctx, G + L.ffn_out_w, d_x, ffn_act, C, I, BT, true);
    kernels::bias_backward(ctx, G + L.ffn_out_b, d_x, BT, C);
    kernels::matmul_nn(ctx, d_ffn, d_x, P + L.ffn_out_w, BT, I, C, false);
    kernels::gelu_erf_backward(ctx, d_ffn, d_ffn, ffn_pre, BT * I);
    kernels::matmul_tn(ctx, G + L.ffn_in_w, d_ffn, ln1, I, C, BT, true);
    kernels::bias_backward(ctx, G + L.ffn_in_b, d_ffn, BT, I);
    // d(ln1) = d_ffn·W1 + d_s (residual)
    kernels::matmul_nn(ctx, d_s, d_ffn, P + L.ffn_in_w, BT, C, I, true);

    // ln1 = LN1(dropout(ctx·Woᵀ + bo) + x_in)
    kernels::layernorm_backward(ctx, d_x, G + L.ln_attn_gamma, G + L.ln_attn_beta, d_s, attn_sum,
                                P + L.ln_attn_gamma, ws.ln1_mean_.data() + l * BT, ws.ln1_rstd_.data() + l * BT, BT,
                                C);
    // d_x now holds d(x_in) through the residual; d_s takes the attention branch.
    kernels::dropout_backward(ctx, d_s, d_x, BT * C, dropout.hidden, seed_of(2 + 3 * l));
    kernels::matmul_tn(ctx, G + L.attn_out_w, d_s, ctx_out, C, C, BT, true);
    kernels::bias_backward(ctx, G + L.attn_out_b, d_s, BT, C);
    kernels::matmul_nn(ctx, ws.d_ctx_.data(), d_s, P + L.attn_out_w, BT, C, C, false);
    kernels::attention_backward(ctx, ws.d_qkv_.data(), ws.d_ctx_.data(), qkv, probs, batch.seq_lens, B, T, H, D,
                                dropout.attention, seed_of(1 + 3 * l));
    kernels::matmul_tn(ctx, G + L.qkv_w, ws.d_qkv_.data(), x_in, 3 * C, C, BT, true);
    kernels::bias_backward(ctx, G + L.qkv_b, ws.d_qkv_.data(), BT, 3 * C);
    // d(x_in) = residual part (already in d_x) + d_qkv·W_qkv
    kernels::matmul_nn(ctx, d_x, ws.d_qkv_.data(), P + L.qkv_w, BT, C, 3 * C, true);
  }

  // Embeddings: x0 = dropout(LN(emb_sum))
  kernels::dropout_backward(ctx, d_x, d_x, BT * C, dropout.hidden, seed_of(0));
  kernels::layernorm_backward(ctx, d_s, G + o.ln_emb_gamma, G + o.ln_emb_beta, d_x, ws.emb_sum_.data(),
                              P + o.ln_emb_gamma, ws.emb_mean_.data(), ws.emb_rstd_.data(), BT, C);
  kernels::embedding_backward(ctx, G + o.wte, G + o.wpe, G + o.tte, d_s, batch.ids, ws.positions_.data(),
                              batch.token_types, BT, C, c.pad_token_id);
  return hr.loss;
}

float forward_backward(const ExecCtx& ctx, const RobertaModel& model, const Batch& batch, const int32_t* labels,
                       const DropoutConfig& dropout, uint64_t seed, float loss_scale, float* grads,
                       TrainWorkspace& ws, float* logits_out) {
  const RobertaConfig& c = model.config();
  RC_CHECK(model.head_kind() == HeadKind::classifier, Errc::invalid_argument,
           "forward_backward needs a sequence classifier; this model has a masked-LM head");
  const int64_t K = c.num_labels();
  for (int64_t b = 0; b < batch.B; ++b)
    RC_CHECK(labels[b] >= 0 && labels[b] < K, Errc::invalid_argument, "label ", labels[b], " outside [0, ", K, ")");
  const ModelOffsets& o = model.offsets();
  const float* P = model.params();
  float* G = grads;
  const int64_t B = batch.B, T = batch.T, C = c.hidden_size;
  auto seed_of = [&](int64_t site) { return site_seed(seed, uint64_t(site)); };
  const int64_t head_site = 1 + 3 * c.num_hidden_layers;

  // RobertaClassificationHead on token 0 of each row, forward and backward.
  struct Head final : HiddenHead {
    const ExecCtx& ctx;
    TrainWorkspace& ws;
    const float* P;
    float* G;
    const ModelOffsets& o;
    const int32_t* labels;
    const DropoutConfig& dropout;
    uint64_t s0, s1;
    int64_t B, T, C, K;
    float loss_scale;
    float* logits_out;
    Head(const ExecCtx& ctx_, TrainWorkspace& ws_, const float* P_, float* G_, const ModelOffsets& o_,
         const int32_t* labels_, const DropoutConfig& dropout_, uint64_t s0_, uint64_t s1_, int64_t B_, int64_t T_,
         int64_t C_, int64_t K_, float loss_scale_, float* logits_out_)
        : ctx(ctx_), ws(ws_), P(P_), G(G_), o(o_), labels(labels_), dropout(dropout_), s0(s0_), s1(s1_), B(B_),
          T(T_), C(C_), K(K_), loss_scale(loss_scale_), logits_out(logits_out_) {}
    Result run(const float* x_last, float* d_x) override {
      // Head: dropout → dense → tanh → dropout → out_proj, on token 0 of each row.
      float *head_in = ws.head_in_.data(), *head_act = ws.head_act_.data(), *head_drop = ws.head_drop_.data();
      for (int64_t b = 0; b < B; ++b) std::memcpy(head_in + b * C, x_last + b * T * C, C * sizeof(float));
      kernels::dropout_forward(ctx, head_in, head_in, B * C, dropout.classifier, s0);
      kernels::matmul_nt(ctx, ws.head_pre_.data(), head_in, P + o.head_dense_w, P + o.head_dense_b, B, C, C);
      kernels::tanh_forward(ctx, head_act, ws.head_pre_.data(), B * C);
      kernels::dropout_forward(ctx, head_drop, head_act, B * C, dropout.classifier, s1);
      float* logits = ws.logits_.data();
      kernels::matmul_nt(ctx, logits, head_drop, P + o.head_out_w, P + o.head_out_b, B, K, C);
      kernels::cross_entropy_forward(ctx, ws.losses_.data(), ws.probs_out_.data(), logits, labels, B, K);
      double loss_sum = 0;
      for (int64_t b = 0; b < B; ++b) loss_sum += ws.losses_.data()[b];
      if (logits_out) std::memcpy(logits_out, logits, B * K * sizeof(float));

      // ---- backward: parameter grads ACCUMULATE into G; activation grads overwrite.
      // (The encoder's continue in forward_backward_hidden from d_x.)
      float* d_logits = ws.d_head_.data();
      float* d_head_drop = d_logits + B * K;  // d_head_ holds B·K + 3·B·C
      float* d_head_pre = d_head_drop + B * C;
      float* d_head_in = d_head_pre + B * C;
      kernels::cross_entropy_backward(ctx, d_logits, ws.probs_out_.data(), labels, B, K, loss_scale / float(B));
      kernels::matmul_tn(ctx, G + o.head_out_w, d_logits, head_drop, K, C, B, true);
      kernels::bias_backward(ctx, G + o.head_out_b, d_logits, B, K);
      kernels::matmul_nn(ctx, d_head_drop, d_logits, P + o.head_out_w, B, C, K, false);
      kernels::dropout_backward(ctx, d_head_drop, d_head_drop, B * C, dropout.classifier, s1);
      kernels::tanh_backward(ctx, d_head_pre, d_head_drop, head_act, B * C);
      kernels::matmul_tn(ctx, G + o.head_dense_w, d_head_pre, head_in, C, C, B, true);
      kernels::bias_backward(ctx, G + o.head_dense_b, d_head_pre, B, C);
      kernels::matmul_nn(ctx, d_head_in, d_head_pre, P + o.head_dense_w, B, C, C, false);
      kernels::dropout_backward(ctx, d_head_in, d_head_in, B * C, dropout.classifier, s0);

      for (int64_t b = 0; b < B; ++b) std::memcpy(d_x + b * T * C, d_head_in + b * C, C * sizeof(float));
      return {float(loss_sum / double(B)), true};
    }
  } head(ctx, ws, P, G, o, labels, dropout, seed_of(head_site), seed_of(head_site + 1), B, T, C, K, loss_scale,
         logits_out);
  return forward_backward_hidden(ctx, model, batch, dropout, seed, grads, ws, head);
}

}  // namespace rc::model
