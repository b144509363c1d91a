// CUDA launchers behind the dispatch layer (kernels/<op>.cpp), CUDA-free so that the
// dispatch files and the tests include it without CUDA headers: a stream is the
// cudaStream_t as void* (ExecCtx::stream), bf16 data is passed as its raw bits (Bf16 =
// uint16_t, rounded as rc::f32_to_bf16). Same semantics as the ref twins in kernels/<op>.h,
// including OVERWRITE vs ACCUMULATE, unless a comment says otherwise.
//
// Pointers are device pointers. Launchers are asynchronous on `stream` and NOT noexcept:
// a failed launch or library call throws rc::Error(Errc::device) (RC_CUDA_CHECK after every
// launch, STYLE.md 7.6). The dispatch layer has validated shapes.
//
// Storage precision: every op has an fp32 overload (what the op headers take) and the ones
// on the activation path also a bf16 overload (bf16 activations, fp32 math inside, fp32
// parameters and statistics); see docs/gpu.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/exec_ctx.h"
#include "kernels/loss.h"
#include "kernels/optimizer.h"

namespace rc::kernels::cuda {

using Bf16 = uint16_t;  // bf16 bits

// ---- matmul.h (cuBLASLt, matmul.cu) -----------------------------------------------------
// Element type of a GEMM operand in device memory.
enum class GemmType { f32, bf16 };

// Row-major y(M,N) (+)= op(a) · op(b) as in matmul.h:
//   nt: a = x(M,K), b = w(N,K)       nn: a = x(M,K), b = w(K,N)       tn: a = a(K,M), b = b(K,N)
// a and b share in_type; y has out_type. fp32 inputs use tensor cores too when
// precision == bf16 (CUBLAS_COMPUTE_32F_FAST_16BF); bf16 inputs always accumulate in fp32.
// Fused epilogues (cuBLASLt; a plain kernel pass when the heuristic offers no algorithm):
//   bias (nt only): y = x·wᵀ + bias(N), bias fp32.
//   bias_grad (tn only): OVERWRITES bias_grad(M) = Σ_k a(k, m), i.e. db(N_out) = Σ_rows dy
//     when computing dW = dyᵀ·x (CUBLASLT_EPILOGUE_BGRADB). fp32.
// cuBLASLt's GELU epilogues are the tanh approximation; RoBERTa's "gelu" is erf, so the
// model uses the bias epilogue followed by gelu_erf_forward (docs/gpu.md).
struct Gemm {
  enum class Op { nt, nn, tn } op = Op::nt;
  int64_t M = 0, N = 0, K = 0;
  GemmType in_type = GemmType::f32, out_type = GemmType::f32;
  MatmulPrecision precision = MatmulPrecision::bf16;
  bool accumulate = false;
  const float* bias = nullptr;
  float* bias_grad = nullptr;
};
void matmul(const Gemm& g, void* y, const void* a, const void* b, void* stream);

// The op-header shapes (fp32 storage), for the dispatch layer.
void matmul_nt(float* y, const float* x, const float* w, const float* bias, int64_t M, int64_t N, int64_t K,
               MatmulPrecision prec, void* stream);
void matmul_nn(float* y, const float* x, const float* w, int64_t M, int64_t N, int64_t K, bool accumulate,
               MatmulPrecision prec, void* stream);
void matmul_tn(float* y, const float* a, const float* b, int64_t M, int64_t N, int64_t K, bool accumulate,
               MatmulPrecision prec, void* stream);
// db(N) += Σ_m dy(M,N).  ACCUMULATES, deterministic (two-stage column reduction).
void bias_backward(float* db, const float* dy, int64_t M, int64_t N, void* stream);
void bias_backward(float* db, const Bf16* dy, int64_t M, int64_t N, void* stream);

// ---- layernorm.h (layernorm.cu) ---------------------------------------------------------
// gamma, beta, mean, rstd, dgamma, dbeta are fp32 in both overloads.
void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps, void* stream);
void layernorm_forward(Bf16* y, float* mean, float* rstd, const Bf16* x, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps, void* stream);
void add_layernorm_forward(float* y, float* sum, float* mean, float* rstd, const float* x, const float* residual,
                           const float* gamma, const float* beta, int64_t N, int64_t C, float eps, void* stream);
void add_layernorm_forward(Bf16* y, Bf16* sum, float* mean, float* rstd, const Bf16* x, const Bf16* residual,
                           const float* gamma, const float* beta, int64_t N, int64_t C, float eps, void* stream);
// OVERWRITES dx; ACCUMULATES dgamma, dbeta (deterministic two-stage reduction).
void layernorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x, const float* gamma,
                        const float* mean, const float* rstd, int64_t N, int64_t C, void* stream);
void layernorm_backward(Bf16* dx, float* dgamma, float* dbeta, const Bf16* dy, const Bf16* x, const float* gamma,
                        const float* mean, const float* rstd, int64_t N, int64_t C, void* stream);

// ---- activation.h (activation.cu) -------------------------------------------------------
void gelu_erf_forward(float* y, const float* x, int64_t n, void* stream);
void gelu_erf_forward(Bf16* y, const Bf16* x, int64_t n, void* stream);
void gelu_erf_backward(float* dx, const float* dy, const float* x, int64_t n, void* stream);
void gelu_erf_backward(Bf16* dx, const Bf16* dy, const Bf16* x, int64_t n, void* stream);
void tanh_forward(float* y, const float* x, int64_t n, void* stream);
void tanh_backward(float* dx, const float* dy, const float* y, int64_t n, void* stream);
void relu_forward(float* y, const float* x, int64_t n, void* stream);
void gelu_tanh_forward(float* y, const float* x, int64_t n, void* stream);
void gelu_tanh_backward(float* dx, const float* dy, const float* x, int64_t n, void* stream);
void relu_backward(float* dx, const float* dy, const float* y, int64_t n, void* stream);
void add(float* y, const float* a, const float* b, int64_t n, void* stream);
void add(Bf16* y, const Bf16* a, const Bf16* b, int64_t n, void* stream);
// Storage conversions (bf16 activations from fp32 and back); round to nearest even.
void cast(Bf16* y, const float* x, int64_t n, void* stream);
void cast(float* y, const Bf16* x, int64_t n, void* stream);

// ---- dropout.h (dropout.cu) -------------------------------------------------------------
// The same mask as the CPU (kernels/dropout.h, core/counter_rng.h). Backward = forward applied to dy.
void dropout_forward(float* y, const float* x, int64_t rows, int64_t cols, float p, uint64_t seed, uint64_t row0,
                     void* stream);
void dropout_forward(Bf16* y, const Bf16* x, int64_t rows, int64_t cols, float p, uint64_t seed, uint64_t row0,
                     void* stream);

// ---- attention.h (attention.cu) ---------------------------------------------------------
// Scale + mask + softmax + dropout + ·V over the real lengths only; probs fp32 (B,H,T,T)
// (may be null in forward). seq_lens is a DEVICE array. T up to ~1400 (shared memory).
void attention_forward(float* out, float* probs, const float* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                       int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0, void* stream);
void attention_forward(Bf16* out, float* probs, const Bf16* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                       int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0, void* stream);
// OVERWRITES dqkv. Uses B·H·T floats of the per-device workspace (workspace.h).
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* probs, const int32_t* seq_lens,
                        int64_t B, int64_t T, int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0,
                        void* stream);
void attention_backward(Bf16* dqkv, const Bf16* dout, const Bf16* qkv, const float* probs, const int32_t* seq_lens,
                        int64_t B, int64_t T, int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0,
                        void* stream);

// ---- embedding.h (embedding.cu) ---------------------------------------------------------
// ids, positions, token_types are DEVICE arrays; tables fp32.
void embedding_forward(float* out, const int32_t* ids, const int32_t* positions, const int32_t* token_types,
                       const float* wte, const float* wpe, const float* tte, int64_t BT, int64_t C, void* stream);
void embedding_forward(Bf16* out, const int32_t* ids, const int32_t* positions, const int32_t* token_types,
                       const float* wte, const float* wpe, const float* tte, int64_t BT, int64_t C, void* stream);
// ACCUMULATES with atomicAdd: not bitwise deterministic run to run (fp32 add order).
void embedding_backward(float* dwte, float* dwpe, float* dtte, const float* dout, const int32_t* ids,
                        const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C, int32_t pad_id,
                        void* stream);
void embedding_backward(float* dwte, float* dwpe, float* dtte, const Bf16* dout, const int32_t* ids,
                        const int32_t* positions, const int32_t* token_types, int64_t BT, int64_t C, int32_t pad_id,
                        void* stream);

// ---- loss.h (loss.cu), fp32: logits are (B, K) with K the handful of labels -------------
void softmax_forward(float* probs, const float* logits, int64_t B, int64_t K, void* stream);
void cross_entropy_forward(float* losses, float* probs, const float* logits, const int32_t* labels, int64_t B,
                           int64_t K, float smoothing, void* stream);
void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int64_t B, int64_t K,
                            float scale, float smoothing, void* stream);
void pointwise_loss_forward(PointwiseLoss kind, float* losses, const float* logits, const float* targets, int64_t B,
                            int64_t K, void* stream);
void pointwise_loss_backward(PointwiseLoss kind, float* dlogits, const float* logits, const float* targets, int64_t B,
                             int64_t K, float scale, void* stream);

// ---- rows.h (rows.cu): ids, positions are DEVICE arrays; out of mean_forward one device float
void position_ids(int32_t* positions, const int32_t* ids, int64_t B, int64_t T, int32_t pad, void* stream);
void gather_first_tokens(float* dst, const float* src, int64_t B, int64_t T, int64_t C, void* stream);
void scatter_first_tokens(float* dst, const float* src, int64_t B, int64_t T, int64_t C, void* stream);
// index: M device int64 rows.
void gather_rows(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C, void* stream);
void scatter_rows(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C, void* stream);
// One block, fixed reduction order: deterministic (n is a batch's rows).
void mean_forward(float* out, const float* x, int64_t n, void* stream);

// ---- optimizer.h (optimizer.cu) ---------------------------------------------------------
// One multi-tensor launch per kAdamWMaxSegments segments (host table, passed by value).
// params_bf16 (may be null): also writes bf16(params) for the next forward's GEMMs.
void adamw_step(float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                int64_t num_segments, const AdamWHyper& hyper, Bf16* params_bf16, void* stream);
// Σ x² accumulated in double on the device; synchronises `stream` to return it.
double sum_squares(const float* x, int64_t n, void* stream);
void zero(float* x, int64_t n, void* stream);

}  // namespace rc::kernels::cuda
