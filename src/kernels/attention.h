// Multi-head self-attention core (after the fused QKV projection, before the output one).
//   qkv: (B, T, 3C), C = H·D: q = cols [0, C), k = [C, 2C), v = [2C, 3C); head h uses
//        cols [h·D, (h+1)·D) of each.
//   seq_lens: (B) real tokens per row (right padding). Keys at t >= seq_lens[b] are masked:
//        exactly HF's additive finfo.min mask, whose exp underflows to 0. Query rows at
//        t >= seq_lens[b] are padding: their output rows are set to 0 and no work is spent.
//   probs: (B, H, T, T) softmax(q·kᵀ/√D + mask), saved for backward BEFORE dropout;
//        may be null in inference. Rows and cols beyond seq_lens[b] are 0.
//   out: (B, T, C) = dropout(probs) · v, heads concatenated.
// Attention dropout: probs element (b, h, i, j) is kept iff
//   uniform24(dropout_row_seed(seed, row0 + b), attention_dropout_index(h, i, j)) >= p
// (core/counter_rng.h): row0 + b is the row's global sample index in the step, and the key
// does not depend on the padded length T nor on b's place in the batch (dropout.h).
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

// OVERWRITES out and probs.
void attention_forward(const ExecCtx& ctx, float* out, float* probs, const float* qkv, const int32_t* seq_lens,
                       int64_t B, int64_t T, int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0 = 0);

// OVERWRITES dqkv (B, T, 3C); rows at padding are 0.
void attention_backward(const ExecCtx& ctx, float* dqkv, const float* dout, const float* qkv, const float* probs,
                        const int32_t* seq_lens, int64_t B, int64_t T, int64_t H, int64_t D, float dropout_p,
                        uint64_t seed, uint64_t row0 = 0);

namespace ref {
void attention_forward(float* out, float* probs, const float* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                       int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0 = 0);
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* probs, const int32_t* seq_lens,
                        int64_t B, int64_t T, int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0 = 0);
}  // namespace ref

}  // namespace rc::kernels
