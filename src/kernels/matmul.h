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

namespace ref {
void matmul_nt(float* y, const float* x, const float* w, const float* bias, int64_t M, int64_t N, int64_t K);
void matmul_nn(float* y, const float* x, const float* w, int64_t M, int64_t N, int64_t K, bool accumulate);
void matmul_tn(float* y, const float* a, const float* b, int64_t M, int64_t N, int64_t K, bool accumulate);
void bias_backward(float* db, const float* dy, int64_t M, int64_t N);
}  // namespace ref

}  // namespace rc::kernels
