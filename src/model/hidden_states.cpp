// forward_hidden_states: the layer loop of forward_logits (inference.cpp) with Rows::all in
// every layer and no head; kept beside it in shape so the two read alike.
#include "model/hidden_states.h"

#include "core/check.h"
#include "kernels/profile.h"

namespace rc::model {

using kernels::ActType;
using kernels::ExecCtx;

HiddenStatesWorkspace::HiddenStatesWorkspace(const ExecCtx& ctx, const RobertaConfig& c, int64_t max_B, int64_t max_T)
    : max_B_(max_B), max_T_(max_T), device_(ctx.device) {
  RC_CHECK(max_B > 0 && max_T > 0, Errc::invalid_argument, "workspace needs a positive batch and length");
  const int64_t BT = max_B * max_T, C = c.hidden_size;
  x_ = kernels::alloc_floats_lazy(ctx, BT * C);
  qkv_ = kernels::alloc_floats_lazy(ctx, BT * 3 * C);
  attn_ = kernels::alloc_floats_lazy(ctx, BT * C);
  tmp_ = kernels::alloc_floats_lazy(ctx, BT * C);
  ffn_ = kernels::alloc_floats_lazy(ctx, BT * c.intermediate_size);
  rows_ = kernels::alloc_floats(ctx, 2 * max_B * C);  // Rows::first_token's scratch (unused with Rows::all)
  if (ctx.device == Device::cpu) {                    // packed weights are CPU only
    gemm_in_ = kernels::alloc(ctx, size_t(BT * C) * sizeof(uint16_t));
    gemm_scale_ = kernels::alloc_floats(ctx, BT);
    ffn_scale_ = kernels::alloc_floats(ctx, BT);
  }
  batch_ = DeviceBatch(ctx, max_B, max_T, false);
}

void forward_hidden_states(const ExecCtx& ctx, const RobertaModel& model, const Batch& host_batch,
                           HiddenStatesWorkspace& ws, float* hidden) {
  const RobertaConfig& c = model.config();
  RC_CHECK(host_batch.B <= ws.max_B() && host_batch.T <= ws.max_T(), Errc::invalid_argument, "batch ", host_batch.B,
           "x", host_batch.T, " exceeds the workspace ", ws.max_B(), "x", ws.max_T());
  RC_CHECK(model.device() == ctx.device && ws.device_ == ctx.device, Errc::invalid_argument,
           "forward_hidden_states: the model, the workspace and the context are on different devices");
  kernels::use_device(ctx);
  validate_batch(c, host_batch);
  const Batch batch = ws.batch_.stage(ctx, host_batch, nullptr, nullptr);
  const int64_t B = batch.B, T = batch.T, C = c.hidden_size;
  float* x = ws.x_.f32();
  float* tmp = ws.tmp_.f32();
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
    if (w.ffn_in.gemm_input_type() == ActType::s8 && w.ffn_out.gemm_input_type() == ActType::s8) {
      a.ffn_type = ActType::s8;
      a.ffn_act_scale = ws.ffn_scale_.f32();
    }
    a.ffn_sum = tmp;
    a.rows_scratch = ws.rows_.f32();
    encoder_layer_forward(ctx, c, w, a, batch.seq_lens, B, T, nullptr, Rows::all);
  }
  kernels::download(ctx, hidden, x, size_t(B * T * C) * sizeof(float));
}

}  // namespace rc::model
