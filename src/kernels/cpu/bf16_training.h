// The bf16 training step's CPU kernels (issue 15): GEMMs that read a weight's bf16 copy made
// once per optimizer step instead of converting it on every call, the Linear backward that
// converts dY once for both of its GEMMs, and AdamW that writes the bf16 copy of what it
// updates. Every result is bitwise the one of the separate calls (matmul_tn + bias_backward +
// matmul_nn, adamw_step + convert_f32_to_bf16): the same roundings, the same summation order.
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"
#include "kernels/optimizer.h"

namespace rc::kernels::cpu {

// y(M,N) = x(M,K)·w(N,K)ᵀ + bias; at bf16, w16 (convert_f32_to_bf16 of w, or null) is read
// instead of converting w, and x16 (x's bf16 rows, or null) instead of x: x may then be null
// (the training step's saved bf16 activations). Where no bf16 GEMM reads x16 directly it is
// widened back to fp32, exactly: the result is the same either way.
void matmul_nt_w16(float* y, const float* x, const float* w, const uint16_t* w16, const float* bias, int64_t M,
                   int64_t N, int64_t K, MatmulPrecision prec, const uint16_t* x16 = nullptr);

// Backward of y(M,N) = x(M,K)·w(N,K)ᵀ + b: dw += dyᵀ·x, db += Σ_m dy (db may be null),
// dx (+)= dy·w. At bf16 with oneDNN (x86): dy is converted once for both GEMMs and w16 (if
// given) read for w; x16 (x's bf16 rows, or null; x may then be null) is read instead of
// converting x, as in matmul_nt_w16.
void linear_backward(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w,
                     const uint16_t* w16, int64_t M, int64_t N, int64_t K, bool accumulate_dx, MatmulPrecision prec,
                     const uint16_t* x16 = nullptr);

// y = bf16(gelu_erf(x)), bitwise gelu_erf_forward then convert_f32_to_bf16, in cache-sized
// pieces so that the fp32 GELU never goes to memory (the training step's saved FFN activation).
void gelu_erf_forward_bf16(uint16_t* y, const float* x, int64_t n) noexcept;

// adamw_step, and for each segment s with copies[s] non-null, copies[s][i] = bf16(params[off_s + i])
// of the updated value, written chunk by chunk while the chunk is in cache.
void adamw_step_bf16_copy(float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                          uint16_t* const* copies, int64_t num_segments, const AdamWHyper& hyper) noexcept;

}  // namespace rc::kernels::cpu
