// One RoBERTa encoder layer (post-LN), the only code that computes one — for every weight
// format (fp32 view, packed bf16 / int8) and every device:
//   ln1 = LN(dropout(attn(x·Wqkvᵀ)·Woᵀ + bo) + x);  out = LN(dropout(gelu(ln1·W1ᵀ + b1)·W2ᵀ + b2) + ln1)
// Inference (fp32 and packed), training and the benchmarks loop over layers calling
// encoder_layer_forward; training's backward calls encoder_layer_backward.
// Pointers are on the context's device; shapes come from the config and the batch.
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"
#include "kernels/linear.h"
#include "model/roberta_config.h"

namespace rc::model {

// The four GEMM weights (any format) and the fp32 biases / LayerNorm parameters of a layer.
struct LayerWeights {
  kernels::LinearWeight qkv, attn_out, ffn_in, ffn_out;
  const float *qkv_b, *attn_out_b, *ln1_gamma, *ln1_beta, *ffn_in_b, *ffn_out_b, *ln2_gamma, *ln2_beta;
};

// Gradient slices of a layer in the flat gradient buffer (ACCUMULATED into).
struct LayerGrads {
  float *qkv_w, *qkv_b, *attn_out_w, *attn_out_b, *ln1_gamma, *ln1_beta;
  float *ffn_in_w, *ffn_in_b, *ffn_out_w, *ffn_out_b, *ln2_gamma, *ln2_beta;
};

// Where a layer reads and writes. Inference aliases buffers (x_in == x_out == ln1, sums
// into proj, no statistics); training gives every saved tensor its own slot.
struct LayerActs {
  const float* x_in = nullptr;                     // (B·T, C)
  float* x_out = nullptr;                          // (rows, C); may alias x_in
  float* qkv = nullptr;                            // (B·T, 3C)
  float* probs = nullptr;                          // (B, H, T, T) saved for backward, or null
  float* attn = nullptr;                           // (B·T, C) attention context
  float* proj = nullptr;                           // (B·T, C) scratch: a branch before its residual join
  float* attn_sum = nullptr;                       // (B·T, C) LN1 input saved (may alias proj)
  float* ln1 = nullptr;                            // (B·T, C) LN1 output (may alias x_out)
  float *ln1_mean = nullptr, *ln1_rstd = nullptr;  // (B·T) or null
  float* ffn_pre = nullptr;  // (B·T, I) pre-GELU saved for backward, or null: GELU fused into the GEMM
  void* ffn_act = nullptr;   // (B·T, I) GELU output, of type ffn_type
  // s8 (int8 FFN weights): ffn_act is the down projection's int8 input, written by the up
  // projection's epilogue, with its per-row scales in ffn_act_scale (B·T).
  kernels::ActType ffn_type = kernels::ActType::f32;
  float* ffn_act_scale = nullptr;
  // bf16 training with an activation other than the erf GELU (which has a fused bf16 kernel):
  // (B·T, I) fp32 rows for the activation before its bf16 copy. Training only; may be the
  // backward's d_ffn scratch (the forward is done with it before the backward starts).
  float* ffn_act_scratch = nullptr;
  float* ffn_sum = nullptr;                        // (B·T, C) LN2 input saved (may alias proj)
  float *ln2_mean = nullptr, *ln2_rstd = nullptr;  // (B·T) or null
  float* rows_scratch = nullptr;                   // (2·B, C): Rows::first_token's / selected's gathered rows
  const int64_t* row_index = nullptr;  // (B) on the context's device: Rows::selected's row of each sequence in (B·T)
  // The GEMM inputs in the GEMM's input type (kernels/gemm_input.h), written by the op before
  // each GEMM, so that the GEMM runs no conversion pass. none(): the GEMM reads the fp32 rows.
  // Inference with packed weights: the LayerNorms write them; they may share storage (each is
  // read before the next one is written). Training with bf16 GEMMs on the CPU: bf16, each in
  // its own per-layer slot, and they are also what the backward's dW GEMMs read (the saved
  // activations in bf16): x_in, ln1 and attn are then scratch the next layer overwrites, and
  // ffn_act is bf16 (ffn_type).
  kernels::GemmInput x_in_gemm;   // x_in for the qkv GEMM (written by the layer before)
  kernels::GemmInput ln1_gemm;    // ln1 for the ffn_in GEMM (LN1 writes it)
  kernels::GemmInput x_out_gemm;  // x_out for the next layer's qkv GEMM (LN2 writes it)
  kernels::GemmInput attn_gemm;   // attn for the attention output GEMM (training only)
};

// Dropout of one layer's three sites (training); null = eval mode.
struct LayerDropout {
  float hidden = 0, attention = 0;
  uint64_t attn_seed = 0, attn_out_seed = 0, ffn_out_seed = 0;
  uint64_t first_sample = 0;  // the batch's row key base (Batch::first_sample)
  // DistilBERT's TransformerBlock has no dropout after the attention output (out_lin).
  bool no_attention_output_dropout = false;
  float attention_output() const { return no_attention_output_dropout ? 0.0f : hidden; }
};

// The rows a layer carries past its attention: every token, or token 0 of each sequence
// only (the last layer at inference: the head reads nothing else; its attention still reads
// every token's keys and values). With first_token the output has B rows; with selected
// too, sequence b's row being LayerActs::row_index[b] (an embedding's last-token pooling).
enum class Rows { all, first_token, selected };

// seq_lens: (B) on the context's device.
void encoder_layer_forward(const kernels::ExecCtx& ctx, const RobertaConfig& config, const LayerWeights& w,
                           const LayerActs& a, const int32_t* seq_lens, int64_t B, int64_t T,
                           const LayerDropout* dropout, Rows rows);

// Backward of a training forward (Rows::all, fp32 weights, every saved slot filled; the dW
// GEMMs read the bf16 GEMM inputs where the forward kept them, else the fp32 rows).
// d_x: in, the gradient of the layer's output; out, of its input. Scratch: d_s (B·T, C),
// d_qkv (B·T, 3C), d_attn (B·T, C), d_ffn (B·T, I).
struct LayerBackwardScratch {
  float *d_s, *d_qkv, *d_attn, *d_ffn;
};
void encoder_layer_backward(const kernels::ExecCtx& ctx, const RobertaConfig& config, const LayerWeights& w,
                            const LayerGrads& g, const LayerActs& a, const int32_t* seq_lens, int64_t B, int64_t T,
                            const LayerDropout& dropout, float* d_x, const LayerBackwardScratch& s);

}  // namespace rc::model
