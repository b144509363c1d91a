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

// Returns false when oneDNN has no kernel for this case ("unimplemented": the caller falls back
// to its own loop; warned once, onednn_policy.h); throws Errc::device on any other failure.
// bf16 (not fpmath): a16 / b16, when given, are a / b already rounded by convert_f32_to_bf16
// (dense, same strides), so that operand is not converted again (the training step's weight
// copy, model/bf16_weights.h, and linear_backward's dY converted once for two GEMMs). An
// operand's fp32 data may then be null (the training step's saved bf16 activations).
bool matmul(float* y, Strided a, Strided b, const float* bias, int64_t M, int64_t N, int64_t K, bool accumulate,
            MatmulPrecision prec, const uint16_t* a16 = nullptr, const uint16_t* b16 = nullptr);

// True when bf16 products run as the fp32 GEMM on bf16-rounded operands: x86-64 CPUs where
// oneDNN has no bf16 matmul kernel (or only its reference one), e.g. AMD Zen 2/3. matmul() then
// does that itself, so callers need not ask; PackedLinear asks to round its activations once.
bool bf16_runs_on_fp32_gemm() noexcept;

// Caps oneDNN's JIT at the ISA rc::cpu_isa() chose (RC_CPU_ISA=generic → SSE4.1, avx2 → AVX2,
// avx512 → AVX512-core, avx512_bf16 → AVX512-core-BF16, amx → everything), so that a forced
// path also forces the GEMMs.  Idempotent; must run before the first primitive is made.
void apply_isa_limit() noexcept;

// True when oneDNN's int8 GEMMs may run here: the CPU has VNNI (AVX512-VNNI / AMX) and
// RC_CPU_ISA does not cap oneDNN below it.  Without VNNI, oneDNN multiplies u8·s8 pairs with
// vpmaddubsw, whose int16 sums saturate for full-range 8-bit weights (oneDNN documents 7-bit
// weights for those ISAs), so PackedLinear takes its exact portable loops instead.
bool int8_gemm_ok() noexcept;

}  // namespace rc::kernels::cpu::onednn
