// encoder.h: one encoder layer, forward and backward, on the kernels layer.
#include "model/encoder.h"

#include "core/check.h"
#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/dropout.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/rows.h"

namespace rc::model {

using kernels::ActType;
using kernels::Epilogue;
using kernels::ExecCtx;

void encoder_layer_forward(const ExecCtx& ctx, const RobertaConfig& c, const LayerWeights& w, const LayerActs& a,
                           const int32_t* seq_lens, int64_t B, int64_t T, const LayerDropout* drop, Rows rows) {
  const int64_t BT = B * T, C = c.hidden_size, H = c.num_attention_heads, D = c.head_dim();
  const float eps = c.layer_norm_eps;
  kernels::linear_forward(ctx, a.qkv, ActType::f32, a.x_in, ActType::f32, w.qkv, w.qkv_b, BT, Epilogue::none);
  kernels::attention_forward(ctx, a.attn, a.probs, a.qkv, seq_lens, B, T, H, D, drop ? drop->attention : 0.0f,
                             drop ? drop->attn_seed : 0, drop ? drop->first_sample : 0);
  // Rows that continue past the attention.
  int64_t M = BT;
  const float* attn = a.attn;
  const float* residual = a.x_in;
  if (rows == Rows::first_token && T > 1) {
    RC_ASSERT(a.rows_scratch && !drop);
    kernels::gather_first_tokens(ctx, a.rows_scratch, a.attn, B, T, C);
    kernels::gather_first_tokens(ctx, a.rows_scratch + B * C, a.x_in, B, T, C);
    attn = a.rows_scratch;
    residual = a.rows_scratch + B * C;
    M = B;
  }
  kernels::linear_forward(ctx, a.proj, ActType::f32, attn, ActType::f32, w.attn_out, w.attn_out_b, M, Epilogue::none);
  if (drop)
    kernels::dropout_forward(ctx, a.proj, a.proj, B, T * C, drop->hidden, drop->attn_out_seed, drop->first_sample);
  kernels::add_layernorm_forward(ctx, a.ln1, a.attn_sum, a.ln1_mean, a.ln1_rstd, a.proj, residual, w.ln1_gamma,
                                 w.ln1_beta, M, C, eps);
  if (a.ffn_pre) {
    RC_ASSERT(a.ffn_type == ActType::f32);
    kernels::linear_forward(ctx, a.ffn_pre, ActType::f32, a.ln1, ActType::f32, w.ffn_in, w.ffn_in_b, M, Epilogue::none);
    kernels::gelu_erf_forward(ctx, static_cast<float*>(a.ffn_act), a.ffn_pre, M * c.intermediate_size);
  } else {
    kernels::linear_forward(ctx, a.ffn_act, a.ffn_type, a.ln1, ActType::f32, w.ffn_in, w.ffn_in_b, M,
                            Epilogue::gelu_erf);
  }
  kernels::linear_forward(ctx, a.proj, ActType::f32, a.ffn_act, a.ffn_type, w.ffn_out, w.ffn_out_b, M, Epilogue::none);
  if (drop)
    kernels::dropout_forward(ctx, a.proj, a.proj, B, T * C, drop->hidden, drop->ffn_out_seed, drop->first_sample);
  kernels::add_layernorm_forward(ctx, a.x_out, a.ffn_sum, a.ln2_mean, a.ln2_rstd, a.proj, a.ln1, w.ln2_gamma,
                                 w.ln2_beta, M, C, eps);
}

void encoder_layer_backward(const ExecCtx& ctx, const RobertaConfig& c, const LayerWeights& w, const LayerGrads& g,
                            const LayerActs& a, const int32_t* seq_lens, int64_t B, int64_t T, const LayerDropout& drop,
                            float* d_x, const LayerBackwardScratch& s) {
  using K = kernels::LinearWeight::Kind;
  RC_ASSERT(w.qkv.kind == K::f32 && w.attn_out.kind == K::f32 && w.ffn_in.kind == K::f32 && w.ffn_out.kind == K::f32);
  RC_ASSERT(a.ffn_pre && a.probs && a.ln1_mean && a.ln2_mean && a.ffn_type == ActType::f32);
  const int64_t BT = B * T, C = c.hidden_size, I = c.intermediate_size, H = c.num_attention_heads, D = c.head_dim();
  const float* ffn_act = static_cast<const float*>(a.ffn_act);
  float* d_s = s.d_s;  // gradient w.r.t. a LayerNorm's input (residual sum)

  // x_out = LN2(dropout(ffn_act·W2ᵀ + b2) + ln1)
  kernels::layernorm_backward(ctx, d_s, g.ln2_gamma, g.ln2_beta, d_x, a.ffn_sum, w.ln2_gamma, a.ln2_mean, a.ln2_rstd,
                              BT, C);
  // d_x ← dropout'(d_s): the FFN branch's gradient (d_s itself continues as the residual's).
  kernels::dropout_backward(ctx, d_x, d_s, B, T * C, drop.hidden, drop.ffn_out_seed, drop.first_sample);
  kernels::matmul_tn(ctx, g.ffn_out_w, d_x, ffn_act, C, I, BT, true);
  kernels::bias_backward(ctx, g.ffn_out_b, d_x, BT, C);
  kernels::matmul_nn(ctx, s.d_ffn, d_x, w.ffn_out.w, BT, I, C, false);
  kernels::gelu_erf_backward(ctx, s.d_ffn, s.d_ffn, a.ffn_pre, BT * I);
  kernels::matmul_tn(ctx, g.ffn_in_w, s.d_ffn, a.ln1, I, C, BT, true);
  kernels::bias_backward(ctx, g.ffn_in_b, s.d_ffn, BT, I);
  // d(ln1) = d_ffn·W1 + d_s (residual)
  kernels::matmul_nn(ctx, d_s, s.d_ffn, w.ffn_in.w, BT, C, I, true);

  // ln1 = LN1(dropout(attn·Woᵀ + bo) + x_in)
  kernels::layernorm_backward(ctx, d_x, g.ln1_gamma, g.ln1_beta, d_s, a.attn_sum, w.ln1_gamma, a.ln1_mean, a.ln1_rstd,
                              BT, C);
  // d_x now holds d(x_in) through the residual; d_s takes the attention branch.
  kernels::dropout_backward(ctx, d_s, d_x, B, T * C, drop.hidden, drop.attn_out_seed, drop.first_sample);
  kernels::matmul_tn(ctx, g.attn_out_w, d_s, a.attn, C, C, BT, true);
  kernels::bias_backward(ctx, g.attn_out_b, d_s, BT, C);
  kernels::matmul_nn(ctx, s.d_attn, d_s, w.attn_out.w, BT, C, C, false);
  kernels::attention_backward(ctx, s.d_qkv, s.d_attn, a.qkv, a.probs, seq_lens, B, T, H, D, drop.attention,
                              drop.attn_seed, drop.first_sample);
  kernels::matmul_tn(ctx, g.qkv_w, s.d_qkv, a.x_in, 3 * C, C, BT, true);
  kernels::bias_backward(ctx, g.qkv_b, s.d_qkv, BT, 3 * C);
  // d(x_in) = residual part (already in d_x) + d_qkv·W_qkv
  kernels::matmul_nn(ctx, d_x, s.d_qkv, w.qkv.w, BT, C, 3 * C, true);
}

}  // namespace rc::model
