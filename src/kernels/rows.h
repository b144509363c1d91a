// Small ops over a batch's rows that the model would otherwise do with host loops (so a
// device pointer never reaches host code): RoBERTa's position ids, the first-token (<s>)
// row gather for the classifier head and its backward, and the mean of per-row losses.
// Every op has a ref twin (kernels/ref/rows.cpp), a CPU one and a CUDA one.
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

// HF create_position_ids_from_input_ids: pad + running count of non-pad tokens; pad tokens
// get position pad. positions, ids: (B, T). OVERWRITES positions.
void position_ids(const ExecCtx& ctx, int32_t* positions, const int32_t* ids, int64_t B, int64_t T, int32_t pad);

// dst(B, C) = src(B·T, C) rows 0, T, 2T, …: token 0 of each sequence. OVERWRITES dst;
// dst must not overlap src.
void gather_first_tokens(const ExecCtx& ctx, float* dst, const float* src, int64_t B, int64_t T, int64_t C);

// The backward of gather_first_tokens: dst(B·T, C) = 0 except rows b·T = src(b). OVERWRITES.
void scatter_first_tokens(const ExecCtx& ctx, float* dst, const float* src, int64_t B, int64_t T, int64_t C);

// dst(M, C) row m = src row index[m]: the masked-LM head's masked positions. index is M
// int64 row numbers on the context's device, each in [0, rows of src) (the caller checks them
// on the host). OVERWRITES dst; dst must not overlap src.
void gather_rows(const ExecCtx& ctx, float* dst, const float* src, const int64_t* index, int64_t M, int64_t C);

// The backward of gather_rows into a zeroed gradient: dst row index[m] = src row m; other rows
// of dst are left as they are. index holds distinct rows (a repeat would race on a device).
void scatter_rows(const ExecCtx& ctx, float* dst, const float* src, const int64_t* index, int64_t M, int64_t C);

// out[0] = Σ x / n, accumulated in double in a fixed order (deterministic). n ≥ 1.
// out is one float on the context's device. Its gradient is 1/n per element (the
// cross_entropy_backward scale).
void mean_forward(const ExecCtx& ctx, float* out, const float* x, int64_t n);

namespace ref {
void position_ids(int32_t* positions, const int32_t* ids, int64_t B, int64_t T, int32_t pad);
void gather_first_tokens(float* dst, const float* src, int64_t B, int64_t T, int64_t C);
void scatter_first_tokens(float* dst, const float* src, int64_t B, int64_t T, int64_t C);
void gather_rows(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C);
void scatter_rows(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C);
void mean_forward(float* out, const float* x, int64_t n);
}  // namespace ref

}  // namespace rc::kernels
