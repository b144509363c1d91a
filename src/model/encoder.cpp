// encoder.h: one encoder layer, forward and backward, on the kernels layer.
#include "model/encoder.h"

#include "core/check.h"
#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/dropout.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/profile.h"
#include "kernels/rows.h"

namespace rc::model {

using kernels::ActType;
using kernels::Epilogue;
using kernels::ExecCtx;
using kernels::profiled;
using F = kernels::OpFamily;

void encoder_layer_forward(const ExecCtx& ctx, const RobertaConfig& c, const LayerWeights& w, const LayerActs& a,
                           const int32_t* seq_lens, int64_t B, int64_t T, const LayerDropout* drop, Rows rows) {
  const int64_t BT = B * T, C = c.hidden_size, H = c.num_attention_heads, D = c.head_dim();
  const float eps = c.layer_norm_eps;
  // A GEMM's input: the LayerNorm's copy in the GEMM's type when it wrote one, else its fp32 rows.
  auto input = [](const kernels::GemmInput& g, const float* f32) {
    return g.none() ? kernels::GemmInput{const_cast<float*>(f32), ActType::f32, nullptr} : g;
  };
  const kernels::GemmInput x_in = input(a.x_in_gemm, a.x_in);
  profiled(ctx, F::gemm_qkv, [&] {
    kernels::linear_forward(ctx, a.qkv, ActType::f32, x_in.data, x_in.type, w.qkv, w.qkv_b, BT, Epilogue::none,
                            x_in.row_scale);
  });
  profiled(ctx, F::attention, [&] {
    kernels::attention_forward(ctx, a.attn, a.probs, a.qkv, seq_lens, B, T, H, D, drop ? drop->attention : 0.0f,
                               drop ? drop->attn_seed : 0, drop ? drop->first_sample : 0);
  });
  // Rows that continue past the attention.
  int64_t M = BT;
  const void* attn = a.attn;
  ActType attn_type = ActType::f32;
  const float* residual = a.x_in;
  if (!a.attn_gemm.none()) {
    // Training at bf16: the context's bf16 copy, read by the GEMM and saved for its dW GEMM.
    RC_ASSERT(rows == Rows::all && a.attn_gemm.type == ActType::bf16);
    profiled(ctx, F::convert,
             [&] { kernels::convert_to_bf16(ctx, static_cast<uint16_t*>(a.attn_gemm.data), a.attn, BT * C); });
    attn = a.attn_gemm.data;
    attn_type = ActType::bf16;
  }
  if ((rows == Rows::first_token && T > 1) || rows == Rows::selected) {
    RC_ASSERT(a.rows_scratch && !drop && attn_type == ActType::f32 && (rows != Rows::selected || a.row_index));
    profiled(ctx, F::other, [&] {
      if (rows == Rows::selected) {
        kernels::gather_rows(ctx, a.rows_scratch, a.attn, a.row_index, B, C);
        kernels::gather_rows(ctx, a.rows_scratch + B * C, a.x_in, a.row_index, B, C);
      } else {
        kernels::gather_first_tokens(ctx, a.rows_scratch, a.attn, B, T, C);
        kernels::gather_first_tokens(ctx, a.rows_scratch + B * C, a.x_in, B, T, C);
      }
    });
    attn = a.rows_scratch;
    residual = a.rows_scratch + B * C;
    M = B;
  }
  profiled(ctx, F::gemm_attn_out, [&] {
    kernels::linear_forward(ctx, a.proj, ActType::f32, attn, attn_type, w.attn_out, w.attn_out_b, M, Epilogue::none);
  });
  if (drop)
    profiled(ctx, F::dropout, [&] {
      kernels::dropout_forward(ctx, a.proj, a.proj, B, T * C, drop->attention_output(), drop->attn_out_seed,
                               drop->first_sample);
    });
  profiled(ctx, F::layernorm, [&] {
    kernels::add_layernorm_forward(ctx, a.ln1, a.attn_sum, a.ln1_mean, a.ln1_rstd, a.proj, residual, w.ln1_gamma,
                                   w.ln1_beta, M, C, eps, a.ln1_gemm);
  });
  const kernels::GemmInput ln1 = input(a.ln1_gemm, a.ln1);
  const Activation act = c.activation();
  if (act != Activation::gelu) {
    // gelu_new / relu: no fused epilogue or bf16 variant; fp32 rows (pre-activation kept for
    // the backward in training).
    // At bf16 (training on the CPU), into fp32 scratch rows first, then their bf16 copy.
    const bool via_scratch = a.ffn_type == ActType::bf16 && a.ffn_pre && a.ffn_act_scratch;
    RC_CHECK(a.ffn_type == ActType::f32 || via_scratch, Errc::unsupported, "hidden_act '", c.hidden_act,
             "' runs with fp32 or (training) bf16 FFN activations only");
    float* pre = a.ffn_pre ? a.ffn_pre : static_cast<float*>(a.ffn_act);
    profiled(ctx, F::gemm_ffn_up, [&] {
      kernels::linear_forward(ctx, pre, ActType::f32, ln1.data, ln1.type, w.ffn_in, w.ffn_in_b, M, Epilogue::none,
                              ln1.row_scale);
    });
    profiled(ctx, F::gelu, [&] {
      float* out = via_scratch ? a.ffn_act_scratch : static_cast<float*>(a.ffn_act);
      if (act == Activation::relu)
        kernels::relu_forward(ctx, out, pre, M * c.intermediate_size);
      else
        kernels::gelu_tanh_forward(ctx, out, pre, M * c.intermediate_size);
      if (via_scratch) kernels::convert_to_bf16(ctx, static_cast<uint16_t*>(a.ffn_act), out, M * c.intermediate_size);
    });
  } else if (a.ffn_pre) {
    // Training: the pre-GELU rows kept in fp32 for the GELU backward; the GELU output in fp32,
    // or in bf16 at bf16 GEMMs (the down projection's input and its saved dW input).
    RC_ASSERT(a.ffn_type == ActType::f32 || a.ffn_type == ActType::bf16);
    profiled(ctx, F::gemm_ffn_up, [&] {
      kernels::linear_forward(ctx, a.ffn_pre, ActType::f32, ln1.data, ln1.type, w.ffn_in, w.ffn_in_b, M,
                              Epilogue::none);
    });
    profiled(ctx, F::gelu, [&] {
      if (a.ffn_type == ActType::bf16)
        kernels::gelu_erf_forward_bf16(ctx, static_cast<uint16_t*>(a.ffn_act), a.ffn_pre, M * c.intermediate_size);
      else
        kernels::gelu_erf_forward(ctx, static_cast<float*>(a.ffn_act), a.ffn_pre, M * c.intermediate_size);
    });
  } else {
    profiled(ctx, F::gemm_ffn_up, [&] {
      kernels::linear_forward(ctx, a.ffn_act, a.ffn_type, ln1.data, ln1.type, w.ffn_in, w.ffn_in_b, M,
                              Epilogue::gelu_erf, ln1.row_scale, a.ffn_act_scale);
    });
  }
  profiled(ctx, F::gemm_ffn_down, [&] {
    kernels::linear_forward(ctx, a.proj, ActType::f32, a.ffn_act, a.ffn_type, w.ffn_out, w.ffn_out_b, M, Epilogue::none,
                            a.ffn_act_scale);
  });
  if (drop)
    profiled(ctx, F::dropout, [&] {
      kernels::dropout_forward(ctx, a.proj, a.proj, B, T * C, drop->hidden, drop->ffn_out_seed, drop->first_sample);
    });
  profiled(ctx, F::layernorm, [&] {
    kernels::add_layernorm_forward(ctx, a.x_out, a.ffn_sum, a.ln2_mean, a.ln2_rstd, a.proj, a.ln1, w.ln2_gamma,
                                   w.ln2_beta, M, C, eps, a.x_out_gemm);
  });
}

void encoder_layer_backward(const ExecCtx& ctx, const RobertaConfig& c, const LayerWeights& w, const LayerGrads& g,
                            const LayerActs& a, const int32_t* seq_lens, int64_t B, int64_t T, const LayerDropout& drop,
                            float* d_x, const LayerBackwardScratch& s) {
  using K = kernels::LinearWeight::Kind;
  RC_ASSERT(w.qkv.kind == K::f32 && w.attn_out.kind == K::f32 && w.ffn_in.kind == K::f32 && w.ffn_out.kind == K::f32);
  RC_ASSERT(a.ffn_pre && a.probs && a.ln1_mean && a.ln2_mean);
  const int64_t BT = B * T, C = c.hidden_size, I = c.intermediate_size, H = c.num_attention_heads, D = c.head_dim();
  float* d_s = s.d_s;  // gradient w.r.t. a LayerNorm's input (residual sum)
  // A dW GEMM's input: the bf16 copy the forward saved (its fp32 rows are gone), else fp32.
  struct SavedInput {
    const float* f32 = nullptr;
    const uint16_t* bf16 = nullptr;
  };
  auto saved = [](const kernels::GemmInput& g, const void* f32) {
    RC_ASSERT(g.type == ActType::f32 || g.type == ActType::bf16);
    return g.none() ? SavedInput{static_cast<const float*>(f32), nullptr}
                    : SavedInput{nullptr, static_cast<const uint16_t*>(g.data)};
  };
  const SavedInput ffn_act = saved(kernels::GemmInput{a.ffn_act, a.ffn_type, nullptr}, a.ffn_act);
  const SavedInput ln1 = saved(a.ln1_gemm, a.ln1), attn = saved(a.attn_gemm, a.attn), x_in = saved(a.x_in_gemm, a.x_in);

  // The two sublayers (FFN, then attention) each end in LayerNorm(dropout(Linear) + residual),
  // so their backward opens alike: kept inline, in the order of the math, on purpose.
  // x_out = LN2(dropout(ffn_act·W2ᵀ + b2) + ln1)
  profiled(ctx, F::layernorm, [&] {
    kernels::layernorm_backward(ctx, d_s, g.ln2_gamma, g.ln2_beta, d_x, a.ffn_sum, w.ln2_gamma, a.ln2_mean, a.ln2_rstd,
                                BT, C);
  });
  // d_x ← dropout'(d_s): the FFN branch's gradient (d_s itself continues as the residual's).
  profiled(ctx, F::dropout, [&] {
    kernels::dropout_backward(ctx, d_x, d_s, B, T * C, drop.hidden, drop.ffn_out_seed, drop.first_sample);
  });
  // Each Linear's dW, db and dX in one call: in bf16 on the CPU dY is converted once for both
  // GEMMs, and W read from its bf16 copy (w16) when there is one.
  profiled(ctx, F::gemm_ffn_down, [&] {
    kernels::linear_backward(ctx, s.d_ffn, g.ffn_out_w, g.ffn_out_b, d_x, ffn_act.f32, w.ffn_out.w, w.ffn_out.w16, BT,
                             C, I, false, ffn_act.bf16);
  });
  profiled(ctx, F::gelu, [&] {
    switch (c.activation()) {
      case Activation::gelu:
        return kernels::gelu_erf_backward(ctx, s.d_ffn, s.d_ffn, a.ffn_pre, BT * I);
      case Activation::gelu_new:
        return kernels::gelu_tanh_backward(ctx, s.d_ffn, s.d_ffn, a.ffn_pre, BT * I);
      case Activation::relu:  // the mask of y > 0 is that of x > 0: the pre-activation serves as y
        return kernels::relu_backward(ctx, s.d_ffn, s.d_ffn, a.ffn_pre, BT * I);
    }
  });
  // d(ln1) = d_ffn·W1 + d_s (residual)
  profiled(ctx, F::gemm_ffn_up, [&] {
    kernels::linear_backward(ctx, d_s, g.ffn_in_w, g.ffn_in_b, s.d_ffn, ln1.f32, w.ffn_in.w, w.ffn_in.w16, BT, I, C,
                             true, ln1.bf16);
  });

  // ln1 = LN1(dropout(attn·Woᵀ + bo) + x_in)
  profiled(ctx, F::layernorm, [&] {
    kernels::layernorm_backward(ctx, d_x, g.ln1_gamma, g.ln1_beta, d_s, a.attn_sum, w.ln1_gamma, a.ln1_mean, a.ln1_rstd,
                                BT, C);
  });
  // d_x now holds d(x_in) through the residual; d_s takes the attention branch.
  profiled(ctx, F::dropout, [&] {
    kernels::dropout_backward(ctx, d_s, d_x, B, T * C, drop.attention_output(), drop.attn_out_seed, drop.first_sample);
  });
  profiled(ctx, F::gemm_attn_out, [&] {
    kernels::linear_backward(ctx, s.d_attn, g.attn_out_w, g.attn_out_b, d_s, attn.f32, w.attn_out.w, w.attn_out.w16, BT,
                             C, C, false, attn.bf16);
  });
  profiled(ctx, F::attention, [&] {
    kernels::attention_backward(ctx, s.d_qkv, s.d_attn, a.qkv, a.probs, seq_lens, B, T, H, D, drop.attention,
                                drop.attn_seed, drop.first_sample);
  });
  // d(x_in) = residual part (already in d_x) + d_qkv·W_qkv
  profiled(ctx, F::gemm_qkv, [&] {
    kernels::linear_backward(ctx, d_x, g.qkv_w, g.qkv_b, s.d_qkv, x_in.f32, w.qkv.w, w.qkv.w16, BT, 3 * C, C, true,
                             x_in.bf16);
  });
}

}  // namespace rc::model
