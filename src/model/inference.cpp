// The inference forwards (roberta_model.h, hidden_states.h): embeddings, the encoder layers
// (encoder.h; for a sequence classifier the last one on the first token only), the head.
// Every weight format, every device.
#include <algorithm>

#include "core/check.h"
#include "kernels/activation.h"
#include "kernels/embedding.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/profile.h"
#include "kernels/rows.h"
#include "model/hidden_states.h"
#include "model/mlm_head.h"
#include "model/roberta_model.h"

namespace rc::model {

using kernels::ActType;
using kernels::Epilogue;
using kernels::ExecCtx;
using kernels::profiled;
using F = kernels::OpFamily;

InferenceWorkspace::InferenceWorkspace(const RobertaConfig& c, int64_t max_B, int64_t max_T)
    : InferenceWorkspace(ExecCtx{}, c, max_B, max_T) {}

InferenceWorkspace::InferenceWorkspace(const ExecCtx& ctx, const RobertaConfig& c, int64_t max_B, int64_t max_T)
    : max_B_(max_B), max_T_(max_T), device_(ctx.device) {
  RC_CHECK(max_B > 0 && max_T > 0, Errc::invalid_argument, "workspace needs a positive batch and length");
  const int64_t BT = max_B * max_T, C = c.hidden_size;
  // Lazy: a first short request (a server's, predict's) touches a corner of these, not ~125 MB.
  x_ = kernels::alloc_floats_lazy(ctx, BT * C);
  qkv_ = kernels::alloc_floats_lazy(ctx, BT * 3 * C);
  attn_ = kernels::alloc_floats_lazy(ctx, BT * C);
  tmp_ = kernels::alloc_floats_lazy(ctx, BT * C);
  ffn_ = kernels::alloc_floats_lazy(ctx, BT * c.intermediate_size);  // fp32, or bf16 in its first half
  rows_ = kernels::alloc_floats(ctx, 4 * max_B * C);                 // gathered first tokens (2·B·C), head (2·B·C)
  // A token classifier's logits are per token (B·T·K); a sequence classifier's per row.
  logits_ = kernels::alloc_floats_lazy(ctx, BT * std::max<int64_t>(1, c.num_labels()));
  if (ctx.device == Device::cpu) {                                      // packed weights are CPU only
    gemm_in_ = kernels::alloc(ctx, size_t(BT * C) * sizeof(uint16_t));  // bf16 or int8 rows
    gemm_scale_ = kernels::alloc_floats(ctx, BT);
    ffn_scale_ = kernels::alloc_floats(ctx, BT);
  }
  batch_ = DeviceBatch(ctx, max_B, max_T, false);
  batch_.token_types_used = c.family().has_token_types();
}

void embed_for_inference(const ExecCtx& ctx, const RobertaModel& model, const Batch& batch, int32_t* positions,
                         float* scratch, float* x, const kernels::GemmInput& gemm_in) {
  const RobertaConfig& c = model.config();
  const ModelOffsets& o = model.offsets();
  const float* P = model.params();
  const int64_t BT = batch.B * batch.T, C = c.hidden_size;
  profiled(ctx, F::other, [&] { family_position_ids(ctx, c, positions, batch); });
  profiled(ctx, F::embedding, [&] {
    kernels::embedding_forward(ctx, scratch, batch.ids, positions, batch.token_types, model.word_embeddings(),
                               P + o.wpe, o.tte >= 0 ? P + o.tte : nullptr, BT, C);
  });
  profiled(ctx, F::layernorm, [&] {
    kernels::layernorm_forward(ctx, x, nullptr, nullptr, scratch, P + o.ln_emb_gamma, P + o.ln_emb_beta, BT, C,
                               c.layer_norm_eps, gemm_in);
  });
}

// The stack both inference forwards share (forward_logits, forward_hidden_states): the
// checks, the batch staged on the device, embeddings and every encoder layer, the last one on
// `last_rows`. Leaves the hidden states in ws.x_ and returns the staged batch.
struct InferenceAccess {
  static Batch encode(const ExecCtx& ctx, const RobertaModel& model, const Batch& host_batch, InferenceWorkspace& ws,
                      const char* caller, Rows last_rows, const int64_t* row_index = nullptr) {
    const RobertaConfig& c = model.config();
    RC_CHECK(host_batch.B <= ws.max_B() && host_batch.T <= ws.max_T(), Errc::invalid_argument, "batch ", host_batch.B,
             "x", host_batch.T, " exceeds the workspace ", ws.max_B(), "x", ws.max_T());
    RC_CHECK(model.device() == ctx.device && ws.device_ == ctx.device, Errc::invalid_argument, caller,
             ": the model, the workspace and the context are on different devices");
    kernels::use_device(ctx);  // a serving worker thread starts on device 0
    if (ctx.profiler) ctx.profiler->set_phase(kernels::Phase::forward);
    Batch batch;
    profiled(ctx, F::other, [&] {
      validate_batch(c, host_batch);
      batch = ws.batch_.stage(ctx, host_batch, nullptr, nullptr);
    });
    const int64_t B = batch.B, T = batch.T;
    float* x = ws.x_.f32();
    float* tmp = ws.tmp_.f32();

    // The LayerNorm before a GEMM writes that GEMM's input type itself (packed bf16 / int8
    // weights: no conversion pass in the GEMM); every copy lives in ws.gemm_in_ (see there).
    const size_t NL = model.offsets().layers.size();
    auto gemm_input = [&](const kernels::LinearWeight& next) {
      kernels::GemmInput g;
      g.type = next.gemm_input_type();
      if (!g.none()) {
        g.data = ws.gemm_in_.data();
        if (g.type == ActType::s8) g.row_scale = ws.gemm_scale_.f32();
      }
      return g;
    };
    const kernels::GemmInput emb_out = NL > 0 ? gemm_input(model.layer_weights(0).qkv) : kernels::GemmInput{};
    embed_for_inference(ctx, model, batch, ws.batch_.positions.as<int32_t>(), tmp, x, emb_out);

    kernels::GemmInput x_in = emb_out;
    for (size_t l = 0; l < NL; ++l) {
      const LayerWeights w = model.layer_weights(l);
      LayerActs a;
      a.x_in_gemm = x_in;
      a.ln1_gemm = gemm_input(w.ffn_in);
      // The last layer's output goes to the head (or the caller) on fp32 rows.
      a.x_out_gemm = l + 1 < NL ? gemm_input(model.layer_weights(l + 1).qkv) : kernels::GemmInput{};
      x_in = a.x_out_gemm;
      a.x_in = x;
      a.x_out = x;
      a.qkv = ws.qkv_.f32();
      a.attn = ws.attn_.f32();
      a.proj = tmp;
      a.attn_sum = tmp;
      a.ln1 = x;
      a.ffn_act = ws.ffn_.data();
      a.ffn_type = w.ffn_in.preferred_hidden_type();
      // int8 → int8: the up projection's epilogue quantises the GELU rows for the down projection.
      if (c.activation() != Activation::gelu) {
        a.ffn_type = ActType::f32;  // no fused epilogue but the erf GELU: fp32 rows, activation after
      } else if (w.ffn_in.gemm_input_type() == ActType::s8 && w.ffn_out.gemm_input_type() == ActType::s8) {
        a.ffn_type = ActType::s8;
        a.ffn_act_scale = ws.ffn_scale_.f32();
      }
      a.ffn_sum = tmp;
      a.rows_scratch = ws.rows_.f32();
      a.row_index = row_index;
      encoder_layer_forward(ctx, c, w, a, batch.seq_lens, B, T, nullptr, l + 1 == NL ? last_rows : Rows::all);
    }
    return batch;
  }
  static const float* hidden(const InferenceWorkspace& ws) { return ws.x_.f32(); }
};

void forward_hidden_states(const ExecCtx& ctx, const RobertaModel& model, const Batch& host_batch,
                           InferenceWorkspace& ws, float* hidden) {
  const Batch batch = InferenceAccess::encode(ctx, model, host_batch, ws, "forward_hidden_states", Rows::all);
  kernels::download(ctx, hidden, ws.x_.f32(), size_t(batch.B * batch.T * model.config().hidden_size) * sizeof(float));
}

void forward_selected_states(const ExecCtx& ctx, const RobertaModel& model, const Batch& host_batch,
                             InferenceWorkspace& ws, std::span<const int32_t> positions, float* out) {
  const int64_t B = host_batch.B, T = host_batch.T, C = model.config().hidden_size;
  RC_CHECK(int64_t(positions.size()) == B, Errc::invalid_argument, "forward_selected_states: ", positions.size(),
           " positions for ", B, " sequences");
  bool first_only = true;
  std::vector<int64_t> index(static_cast<size_t>(B));  // row b·T + position of (B·T)
  for (int64_t b = 0; b < B; ++b) {
    const int32_t len = host_batch.seq_lens ? host_batch.seq_lens[b] : int32_t(T);
    RC_CHECK(positions[b] >= 0 && positions[b] < len, Errc::invalid_argument, "forward_selected_states: position ",
             positions[b], " of sequence ", b, " is outside its ", len, " tokens");
    first_only = first_only && positions[b] == 0;
    index[size_t(b)] = b * T + positions[b];
  }
  if (model.offsets().layers.empty()) {  // no layer to shorten: every row, then the ones asked for
    std::vector<float> hidden(size_t(B * T * C));
    forward_hidden_states(ctx, model, host_batch, ws, hidden.data());
    for (int64_t b = 0; b < B; ++b) std::copy_n(hidden.data() + index[size_t(b)] * C, C, out + b * C);
    return;
  }
  // The index lives where the gather runs: host memory on the CPU, a small buffer on a device.
  Buffer device_index;
  const int64_t* row_index = index.data();
  if (!first_only && ctx.device != Device::cpu) {
    device_index = kernels::alloc(ctx, index.size() * sizeof(int64_t));
    kernels::upload(ctx, device_index.data(), index.data(), index.size() * sizeof(int64_t));
    row_index = static_cast<const int64_t*>(device_index.data());
  }
  InferenceAccess::encode(ctx, model, host_batch, ws, "forward_selected_states",
                          first_only ? Rows::first_token : Rows::selected, first_only ? nullptr : row_index);
  // The last layer left one row per sequence at the top of x.
  kernels::download(ctx, out, InferenceAccess::hidden(ws), size_t(B * C) * sizeof(float));
}

void forward_mlm_logits(const ExecCtx& ctx, const RobertaModel& model, const Batch& host_batch, InferenceWorkspace& ws,
                        const std::vector<int64_t>& positions, float* logits, MlmWorkspace& mlm) {
  RC_CHECK(model.head_kind() == HeadKind::masked_lm, Errc::invalid_argument,
           "forward_mlm_logits: this model has no masked-LM head (lm_head.*)");
  RC_CHECK(int64_t(positions.size()) <= mlm.max_rows(), Errc::invalid_argument, "more than ", mlm.max_rows(),
           " positions to predict");
  for (int64_t p : positions)
    RC_CHECK(p >= 0 && p < host_batch.B * host_batch.T, Errc::invalid_argument, "position ", p, " outside the batch");
  if (positions.empty()) return;
  // Every row through the last layer: a text's several <mask> rows are more than the one row per
  // sequence that Rows::selected keeps.
  InferenceAccess::encode(ctx, model, host_batch, ws, "forward_mlm_logits", Rows::all);
  profiled(ctx, F::gemm_head,
           [&] { mlm_head_logits(ctx, model, InferenceAccess::hidden(ws), positions, logits, mlm); });
}

void forward_logits(const ExecCtx& ctx, const RobertaModel& model, const Batch& host_batch, InferenceWorkspace& ws,
                    float* logits) {
  const RobertaConfig& c = model.config();
  const bool per_token = model.head_kind() == HeadKind::token_classifier;
  RC_CHECK(model.head_kind() != HeadKind::masked_lm, Errc::invalid_argument,
           "forward_logits: a masked-LM model has no classifier (use forward_mlm_logits)");
  const Batch batch =
      InferenceAccess::encode(ctx, model, host_batch, ws, "forward_logits", per_token ? Rows::all : Rows::first_token);
  const ModelOffsets& o = model.offsets();
  const float* P = model.params();
  const int64_t B = batch.B, T = batch.T, C = c.hidden_size, K = c.num_labels();
  const size_t NL = o.layers.size();
  float* x = ws.x_.f32();

  if (per_token) {  // RobertaForTokenClassification: classifier(x) on every token, padding included
    float* out = ctx.device == Device::cpu ? logits : ws.logits_.f32();
    profiled(ctx, F::gemm_head,
             [&] { kernels::matmul_nt(ctx, out, x, P + o.head_out_w, P + o.head_out_b, B * T, K, C); });
    if (out != logits) kernels::download(ctx, logits, out, size_t(B * T * K) * sizeof(float));
    return;
  }

  // Head: dense → tanh (RoBERTa's head, BERT's pooler) or ReLU (DistilBERT's pre_classifier)
  // → out_proj on the first token (x holds one row per sequence after the last layer, or every
  // token when there are no layers). Eval mode: no dropout.
  float* cls = x;
  float* hidden = ws.rows_.f32() + 2 * B * C;
  if (NL == 0 && T > 1) {
    cls = ws.rows_.f32();
    profiled(ctx, F::head, [&] { kernels::gather_first_tokens(ctx, cls, x, B, T, C); });
  }
  profiled(ctx, F::gemm_head, [&] {
    kernels::linear_forward(ctx, hidden, ActType::f32, cls, ActType::f32, model.head_dense_weight(), P + o.head_dense_b,
                            B, Epilogue::none);
  });
  profiled(ctx, F::head, [&] {
    if (c.family().sequence_head == SequenceHead::pre_relu)
      kernels::relu_forward(ctx, hidden, hidden, B * C);
    else
      kernels::tanh_forward(ctx, hidden, hidden, B * C);
  });
  if (ctx.device == Device::cpu) {
    profiled(ctx, F::gemm_head,
             [&] { kernels::matmul_nt(ctx, logits, hidden, P + o.head_out_w, P + o.head_out_b, B, K, C); });
    return;
  }
  kernels::matmul_nt(ctx, ws.logits_.f32(), hidden, P + o.head_out_w, P + o.head_out_b, B, K, C);
  kernels::download(ctx, logits, ws.logits_.data(), size_t(B * K) * sizeof(float));
}

}  // namespace rc::model
