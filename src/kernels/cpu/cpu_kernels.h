// CPU implementations behind the dispatch layer (kernels/<op>.cpp).  Raw pointers and sizes,
// noexcept, parallel over the one OpenMP pool (never their own threads).  The dispatch layer
// has already checked the arguments.  Each function picks its ISA path once per call from
// rc::cpu_isa() (RC_CPU_ISA=generic forces the portable one).
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"
#include "kernels/linear.h"
#include "kernels/loss.h"
#include "kernels/optimizer.h"

namespace rc::kernels::cpu {

// matmul.h.  Through oneDNN when built with it (onednn_matmul.cpp), else a blocked OpenMP loop.
// The oneDNN path caches one primitive per (shape, transposes, precision, accumulate, bias);
// that cache and oneDNN's scratchpad are the only allocations on this path. A oneDNN failure
// follows onednn_policy.h: "unimplemented" takes the loop (warned once), anything else throws
// Errc::device.
void matmul_nt(float* y, const float* x, const float* w, const float* bias, int64_t M, int64_t N, int64_t K,
               MatmulPrecision prec);
void matmul_nn(float* y, const float* x, const float* w, int64_t M, int64_t N, int64_t K, bool accumulate,
               MatmulPrecision prec);
void matmul_tn(float* y, const float* a, const float* b, int64_t M, int64_t N, int64_t K, bool accumulate,
               MatmulPrecision prec);
void bias_backward(float* db, const float* dy, int64_t M, int64_t N) noexcept;

// layernorm.h (all of it), activation.h (GELU), optimizer.h (AdamW) and attention.h: the
// kernels every ISA path implements too, declared once for all of them.
#include "kernels/cpu/isa_kernels.inc"
// layernorm.h's GemmInput forms (layernorm_gemm_input.cpp): the LayerNorm (residual null: the
// plain one, sum unused) and then the GEMM input of the same rows, block by block.
void layernorm_gemm_input(float* y, float* sum, float* mean, float* rstd, const float* x, const float* residual,
                          const float* gamma, const float* beta, int64_t N, int64_t C, float eps,
                          const GemmInput& out) noexcept;

// activation.h
void tanh_forward(float* y, const float* x, int64_t n) noexcept;
void tanh_backward(float* dx, const float* dy, const float* y, int64_t n) noexcept;
void relu_forward(float* y, const float* x, int64_t n) noexcept;
void gelu_tanh_forward(float* y, const float* x, int64_t n) noexcept;
void gelu_tanh_backward(float* dx, const float* dy, const float* x, int64_t n) noexcept;
void relu_backward(float* dx, const float* dy, const float* y, int64_t n) noexcept;
void add(float* y, const float* a, const float* b, int64_t n) noexcept;

// dropout.h (backward is forward applied to dy)
void dropout_forward(float* y, const float* x, int64_t rows, int64_t cols, float p, uint64_t seed,
                     uint64_t row0) noexcept;

// attention_bf16.h (cpu/attention_bf16.cpp)
bool attention_bf16_native(int64_t D) noexcept;
void attention_forward_bf16(uint16_t* out, const uint16_t* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                            int64_t H, int64_t D) noexcept;

// embedding.h
void embedding_forward(float* out, const int32_t* ids, const int32_t* positions, const int32_t* token_types,
                       const float* wte, const float* wpe, const float* tte, int64_t BT, int64_t C) noexcept;
void embedding_backward(float* dwte, float* dwpe, float* dtte, const float* dout, const int32_t* ids,
                        const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C, int32_t pad_id,
                        int32_t position_pad_id) noexcept;

// loss.h
void softmax_forward(float* probs, const float* logits, int64_t B, int64_t K) noexcept;
void cross_entropy_forward(float* losses, float* probs, const float* logits, const int32_t* labels, int64_t B,
                           int64_t K, float smoothing) noexcept;
void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int64_t B, int64_t K,
                            float scale, float smoothing) noexcept;
void pointwise_loss_forward(PointwiseLoss kind, float* losses, const float* logits, const float* targets, int64_t B,
                            int64_t K) noexcept;
void pointwise_loss_backward(PointwiseLoss kind, float* dlogits, const float* logits, const float* targets, int64_t B,
                             int64_t K, float scale) noexcept;

// linear.h: the packed-weight GEMM (onednn_linear.cpp; portable loops without oneDNN).
// Throws rc::Error(device) when oneDNN fails (not noexcept).
void packed_linear_forward(void* y, ActType y_type, const void* x, ActType x_type, const PackedLinear& w,
                           const float* bias, int64_t M, Epilogue epilogue, const float* x_scale, float* y_scale);
// Row buckets of the oneDNN path: M rows run as chunks of at most 512 (int8: 256) rows, each
// with the primitive of its bucket (powers of two up to 64, then multiples of 64), a short
// chunk padded in scratch. So any batch × length uses at most 14 primitive shapes per weight.
int64_t linear_row_bucket(int64_t rows) noexcept;
// Tests: the number of oneDNN primitives `w` has created, and exact-M primitives instead of
// buckets (to compare the two; process-wide, default on).
size_t linear_primitive_count(const PackedLinear& w);
void set_linear_row_buckets(bool on) noexcept;
// The int8 GEMM of PackedLinear where oneDNN may not run int8 (no VNNI: AMD Zen 2/3, older
// Intel): acc(M, N) = xq(M, K)·wq(N, K)ᵀ exactly (xq, wq in [-127, 127]) on oneDNN's fp32 GEMM,
// in K chunks small enough to stay exact (linear_portable.cpp). False without oneDNN or when it
// refuses the fp32 GEMM too (the caller's loops run instead).
namespace portable {
bool gemm_s8_on_fp32(int32_t* acc, const int8_t* xq, const int8_t* wq, int64_t M, int64_t N, int64_t K);
}

// rows.h
void position_ids(int32_t* positions, const int32_t* ids, int64_t B, int64_t T, int32_t pad) noexcept;
void gather_first_tokens(float* dst, const float* src, int64_t B, int64_t T, int64_t C) noexcept;
void scatter_first_tokens(float* dst, const float* src, int64_t B, int64_t T, int64_t C) noexcept;
void gather_rows(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C) noexcept;
void scatter_rows(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C) noexcept;
void mean_forward(float* out, const float* x, int64_t n) noexcept;

// optimizer.h
double sum_squares(const float* x, int64_t n) noexcept;
void zero(float* x, int64_t n) noexcept;

// The portable versions behind the ISA choice, callable directly so that one test binary can
// check both paths (the AVX-512 ones are in avx512/avx512_kernels.h).
namespace generic {
#include "kernels/cpu/isa_kernels.inc"

void attention_forward_bf16(uint16_t* out, const uint16_t* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                            int64_t H, int64_t D) noexcept;
void quantize_rows_s8(int8_t* q, float* scale, const float* x, int64_t M, int64_t K) noexcept;
void quantize_rows_s8_bf16(int8_t* q, float* scale, const uint16_t* x, int64_t M, int64_t K) noexcept;
void dequantize_rows(float* yf, uint16_t* yb, const int32_t* acc, const float* xs, const float* ws, const float* bias,
                     int64_t M, int64_t N, bool gelu) noexcept;
}  // namespace generic

// The int8 GEMM's epilogue: y[m,n] = act(xs[m]·ws[n]·acc[m,n] + bias[n]) (bias may be null),
// written to yf (fp32) or, when yf is null, to yb (bf16, round to nearest even).
void dequantize_rows(float* yf, uint16_t* yb, const int32_t* acc, const float* xs, const float* ws, const float* bias,
                     int64_t M, int64_t N, bool gelu) noexcept;

}  // namespace rc::kernels::cpu
