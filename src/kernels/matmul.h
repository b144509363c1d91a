// Dense products. Naming after the math (STYLE.md 7.5): `nt` is x·Wᵀ (PyTorch Linear).
// All row-major fp32; M, N, K as in y(M,N) = op(a)(M,K) · op(b)(K,N).
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

// y(M,N) = x(M,K) · w(N,K)ᵀ + bias(N).  bias may be null.  OVERWRITES y.
void matmul_nt(const ExecCtx& ctx, float* y, const float* x, const float* w, const float* bias, int64_t M, int64_t N,
               int64_t K);

// y(M,N) (+)= x(M,K) · w(K,N).  Backward of matmul_nt for dx (w is the (N_out,K_in) weight
// read as (K,N)).  OVERWRITES y, or ACCUMULATES when accumulate.
void matmul_nn(const ExecCtx& ctx, float* y, const float* x, const float* w, int64_t M, int64_t N, int64_t K,
               bool accumulate);

// y(M,N) (+)= a(K,M)ᵀ · b(K,N).  Backward of matmul_nt for dW: dW(N_out,K_in) += dyᵀ · x.
// OVERWRITES y, or ACCUMULATES when accumulate.
void matmul_tn(const ExecCtx& ctx, float* y, const float* a, const float* b, int64_t M, int64_t N, int64_t K,
               bool accumulate);

// db(N) += Σ_m dy(M,N).  ACCUMULATES.
void bias_backward(const ExecCtx& ctx, float* db, const float* dy, int64_t M, int64_t N);

// matmul_nt with, optionally, w's bf16 copy w16 (rc::f32_to_bf16 of every element as
// cpu::convert_f32_to_bf16 rounds it, same layout; model/bf16_weights.h keeps one per step):
// the CPU's bf16 GEMM reads it instead of converting w on every call. Same result as
// matmul_nt; w16 is ignored elsewhere (fp32, CUDA, no oneDNN). x16 (CPU at bf16 only): x's
// rows already rounded to bf16 (convert_to_bf16), read in place of x, which may then be null.
void matmul_nt_w16(const ExecCtx& ctx, float* y, const float* x, const float* w, const uint16_t* w16, const float* bias,
                   int64_t M, int64_t N, int64_t K, const uint16_t* x16 = nullptr);

// dst = bf16(src): the rounding the CPU's bf16 GEMMs apply to their operands (what w16 must
// hold). CPU only (Errc::unsupported elsewhere). OVERWRITES dst.
void convert_to_bf16(const ExecCtx& ctx, uint16_t* dst, const float* src, int64_t n);

// The backward of y(M,N) = x(M,K)·w(N,K)ᵀ + b, i.e. exactly
//   matmul_tn(dw, dy, x, N, K, M, true); bias_backward(db, dy, M, N); matmul_nn(dx, dy, w, M, K, N, acc_dx)
// (dw, db ACCUMULATE; dx OVERWRITTEN or ACCUMULATED; db may be null), bitwise. On the CPU in
// bf16 it converts dy once for both GEMMs and reads w16 (may be
// null, see matmul_nt_w16) for w, and x16 (may be null; CPU at bf16 only) for x, which may
// then be null: the forward's bf16 input kept for the dW GEMM (model/encoder.h).
void linear_backward(const ExecCtx& ctx, float* dx, float* dw, float* db, const float* dy, const float* x,
                     const float* w, const uint16_t* w16, int64_t M, int64_t N, int64_t K, bool accumulate_dx,
                     const uint16_t* x16 = nullptr);

namespace ref {
void matmul_nt(float* y, const float* x, const float* w, const float* bias, int64_t M, int64_t N, int64_t K);
void matmul_nn(float* y, const float* x, const float* w, int64_t M, int64_t N, int64_t K, bool accumulate);
void matmul_tn(float* y, const float* a, const float* b, int64_t M, int64_t N, int64_t K, bool accumulate);
void bias_backward(float* db, const float* dy, int64_t M, int64_t N);
}  // namespace ref

}  // namespace rc::kernels
