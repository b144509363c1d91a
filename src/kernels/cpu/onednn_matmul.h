// The oneDNN GEMM behind cpu::matmul_* (no oneDNN types here: only onednn_matmul.cpp includes
// dnnl.hpp).  y(M,N) (+)= A(M,K)·B(K,N) (+ bias(N)), A and B given by strides, so the three
// transposition cases are one primitive kind.
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels::cpu::onednn {

struct Strided {
  const float* data;
  int64_t stride_row, stride_col;  // element (r, c) is data[r·stride_row + c·stride_col]
};

// Returns false when oneDNN could not make a primitive for this case (the caller falls back
// to its own loop); never throws.
bool matmul(float* y, Strided a, Strided b, const float* bias, int64_t M, int64_t N, int64_t K, bool accumulate,
            MatmulPrecision prec) noexcept;

}  // namespace rc::kernels::cpu::onednn
