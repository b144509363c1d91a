// Linear layers: y = epilogue(x·Wᵀ + bias), the single GEMM entry point of the model.
// A LinearWeight is what the GEMM reads, in one of the weight formats:
//   f32    - a view of (N, K) fp32 weights in the model's parameter buffer, on any device
//            (cpu or cuda matmul_nt at ExecCtx::matmul_precision; GELU as a second pass);
//   packed - a PackedLinear: CPU weights converted and reordered once (bf16 / int8 / fp32).
// Adding a weight format touches LinearWeight, kernels/linear.cpp and a packer, not the model.
//
// Packed-weight Linear for inference: weights converted (fp32, bf16 or int8) and reordered ONCE
// into the GEMM library's preferred blocked layout, then y = epilogue(x·Wᵀ + bias) per call with
// no weight traffic beyond the packed read.  No oneDNN types here (pimpl): only
// kernels/cpu/onednn_linear.cpp knows them.
//
// int8 (PackedType::s8): W is quantised symmetrically per output channel at pack time,
//   w_scale[n] = max_k |W[n,k]| / 127, Wq = round(W / w_scale[n]);
// x is quantised symmetrically per row (token) on every call,
//   x_scale[m] = max_k |x[m,k]| / 127, xq = round(x · (127 / max_k |x[m,k]|));
// and the int32 product is dequantised in the GEMM's epilogue:
//   y[m,n] = x_scale[m]·w_scale[n]·Σ_k xq·Wq + bias[n], then GELU.
// Rounding is to nearest even everywhere (ref::quantize_rows_s8 is the oracle).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "kernels/exec_ctx.h"
#include "kernels/gemm_input.h"
#include "tensor/dtype.h"

namespace rc::kernels {

enum class PackedType { f32, bf16, s8 };
enum class Epilogue { none, gelu_erf };

class PackedLinear {
 public:
  struct Impl;

  PackedLinear();
  ~PackedLinear();
  PackedLinear(PackedLinear&&) noexcept;
  PackedLinear& operator=(PackedLinear&&) noexcept;

  // Packs w(N, K) row-major (PyTorch Linear layout).  bf16 rounds to nearest even; s8 quantises
  // per output channel (see the file comment).  Allocates the packed copy; the caller may free w
  // afterwards.  When the GEMM library cannot run this type on this CPU (or RC_CPU_ISA forbids
  // it), the packed copy is plain row-major and the portable loops compute the same math.
  static PackedLinear pack(const float* w, int64_t N, int64_t K, PackedType type);

  // One block of rows of a weight as a checkpoint stores it (e.g. a memory-mapped safetensors
  // tensor): `rows` × K elements of `dtype` (f32, bf16 or f16), row-major, any alignment.
  struct SourceRows {
    const void* data = nullptr;
    DType dtype = DType::f32;
    int64_t rows = 0;
  };
  // Packs the parts stacked as one (Σ rows, K) weight, straight from their storage: bit for
  // bit what pack() gives for their fp32 values (bf16 and f16 widen exactly), without an
  // fp32 copy of the whole model. bf16 parts packed as bf16 are reordered as they are.
  // borrow (optional): where the GEMM reads fp32 weights in the layout the part already has
  // (one aligned fp32 part, on oneDNN's gemm-based matmul: CPUs without AVX-512), the weight
  // is read in place and `borrow` (what keeps the part's memory valid, e.g. the mapped file)
  // is kept alive instead of making a copy; see borrows().
  static PackedLinear pack(std::span<const SourceRows> parts, int64_t K, PackedType type,
                           std::shared_ptr<const void> borrow = {});

  int64_t n() const noexcept;
  int64_t k() const noexcept;
  PackedType type() const noexcept;
  size_t packed_bytes() const noexcept;
  bool empty() const noexcept { return !impl_; }
  // True when the calls go to oneDNN (false: the portable fallback loops).
  bool uses_onednn() const noexcept;
  // s8 only: the per-output-channel scales (N), else null.
  const float* weight_scales() const noexcept;
  // True when the weights are read in place from the borrowed storage (pack with borrow).
  bool borrows() const noexcept;

  Impl* impl() const noexcept { return impl_.get(); }

 private:
  // Exactly one of w (fp32) and w16 (bf16 values, type bf16 only) is given. borrow: see pack.
  static PackedLinear pack_converted(const float* w, const uint16_t* w16, int64_t N, int64_t K, PackedType type,
                                     std::shared_ptr<const void> borrow = {});
  std::unique_ptr<Impl> impl_;
};

// What a Linear's GEMM reads (see the file comment). Non-owning: the model owns the storage.
struct LinearWeight {
  enum class Kind { f32, packed };
  Kind kind = Kind::f32;
  const float* w = nullptr;              // f32: (N, K) row-major, on the context's device
  const PackedLinear* packed = nullptr;  // packed (CPU only)
  int64_t n = 0, k = 0;
  // f32 only, optional: w's bf16 copy, read by bf16 GEMMs instead of converting w per call
  // (the training step's, model/bf16_weights.h; see matmul_nt_w16).
  const uint16_t* w16 = nullptr;

  static LinearWeight f32(const float* w, int64_t N, int64_t K) { return {Kind::f32, w, nullptr, N, K, nullptr}; }
  static LinearWeight of(const PackedLinear& p) { return {Kind::packed, nullptr, &p, p.n(), p.k(), nullptr}; }
  // The activation type a GELU output feeding the next GEMM is best kept in: bf16 for packed
  // bf16 / int8 weights (their GEMMs read bf16 or quantise anyway), fp32 otherwise.
  ActType preferred_hidden_type() const noexcept {
    return kind == Kind::packed && packed->type() != PackedType::f32 ? ActType::bf16 : ActType::f32;
  }
  // The input type this GEMM reads without a conversion pass of its own: what the LayerNorm
  // before it should write (GemmInput). s8 weights: int8 rows + scales; bf16: bf16; else fp32.
  ActType gemm_input_type() const noexcept {
    if (kind != Kind::packed) return ActType::f32;
    return packed->type() == PackedType::s8     ? ActType::s8
           : packed->type() == PackedType::bf16 ? ActType::bf16
                                                : ActType::f32;
  }
};

// y(M, N) = epilogue(x(M, K) · Wᵀ + bias(N)) for any weight kind on the context's device.
// bias may be null. OVERWRITES y. f32 weights take fp32 activations (x_type = y_type = f32),
// or bf16 x on the CPU at bf16 GEMM precision (the training step's saved activations);
// packed weights run on the CPU only (Errc::unsupported elsewhere). x_type s8 (already
// quantised rows, x_scale their (M) per-row scales; s8 weights only) skips the GEMM's own
// quantisation pass; x_scale is null for every other x_type. y_type s8 (s8 weights only): y
// is written as the next int8 GEMM's input, each chunk of rows rounded to bf16 and quantised
// per row (quantize_rows_s8_bf16) while in cache, y_scale its (M) scales: bit for bit a bf16 y
// then that GEMM's own quantisation, without the bf16 rows' round trip through memory.
void linear_forward(const ExecCtx& ctx, void* y, ActType y_type, const void* x, ActType x_type, const LinearWeight& w,
                    const float* bias, int64_t M, Epilogue epilogue, const float* x_scale = nullptr,
                    float* y_scale = nullptr);

// y(M, N) = epilogue(x(M, K) · Wᵀ + bias(N)) with packed weights.  bias may be null.  OVERWRITES y.
// Thread-safe: one PackedLinear may serve several threads at once.  The first call for each
// distinct (row bucket, types, epilogue) creates (and caches inside `w`) one GEMM primitive:
// rows run in chunks of at most 512 on a handful of bucket sizes (cpu_kernels.h), so any
// batch × length reuses them; later calls allocate nothing but per-thread scratch on growth.  x is rounded to bf16
// (bf16 weights) or quantised per row (s8 weights) into per-thread scratch unless it already has the GEMM's type.
void linear_forward(const ExecCtx& ctx, void* y, ActType y_type, const void* x, ActType x_type, const PackedLinear& w,
                    const float* bias, int64_t M, Epilogue epilogue, const float* x_scale = nullptr,
                    float* y_scale = nullptr);

// fp32 in, fp32 out.
inline void linear_forward(const ExecCtx& ctx, float* y, const float* x, const PackedLinear& w, const float* bias,
                           int64_t M, Epilogue epilogue) {
  linear_forward(ctx, y, ActType::f32, x, ActType::f32, w, bias, M, epilogue);
}

// Symmetric per-row int8 quantisation: scale[m] = max_k |x[m,k]| / 127 (1 for an all-zero row),
// q[m,k] = round_half_even(x[m,k] · (127 / max_k |x[m,k]|)) (in [-127, 127]).  OVERWRITES q, scale.
void quantize_rows_s8(int8_t* q, float* scale, const float* x, int64_t M, int64_t K);
void quantize_rows_s8_bf16(int8_t* q, float* scale, const uint16_t* x, int64_t M, int64_t K);

namespace ref {
void quantize_rows_s8(int8_t* q, float* scale, const float* x, int64_t M, int64_t K);
}  // namespace ref

}  // namespace rc::kernels
