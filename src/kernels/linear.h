// Packed-weight Linear for inference: weights converted (fp32 or bf16) and reordered ONCE into
// the GEMM library's preferred blocked layout, then y = epilogue(x·Wᵀ + bias) per call with no
// weight traffic beyond the packed read.  No oneDNN types here (pimpl): only
// kernels/cpu/onednn_linear.cpp knows them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

enum class PackedType { f32, bf16 };  // int8 per-output-channel: not yet
enum class Epilogue { none, gelu_erf };

class PackedLinear {
 public:
  struct Impl;

  PackedLinear();
  ~PackedLinear();
  PackedLinear(PackedLinear&&) noexcept;
  PackedLinear& operator=(PackedLinear&&) noexcept;

  // Packs w(N, K) row-major (PyTorch Linear layout).  bf16 rounds to nearest even.  Allocates
  // the packed copy; the caller may free w afterwards.  Throws rc::Error (Errc::device) if the
  // GEMM library refuses the shape.
  static PackedLinear pack(const float* w, int64_t N, int64_t K, PackedType type);

  int64_t n() const noexcept;
  int64_t k() const noexcept;
  PackedType type() const noexcept;
  size_t packed_bytes() const noexcept;
  bool empty() const noexcept { return !impl_; }

  Impl* impl() const noexcept { return impl_.get(); }

 private:
  std::unique_ptr<Impl> impl_;
};

// y(M, N) = epilogue(x(M, K) · Wᵀ + bias(N)).  bias may be null.  OVERWRITES y.
// Thread-safe: one PackedLinear may serve several threads at once.  The first call for each
// distinct M creates (and caches inside `w`) one GEMM primitive; later calls allocate nothing
// but the library's per-thread scratch on growth.  x is rounded to bf16 into per-thread scratch
// when w is bf16.
void linear_forward(const ExecCtx& ctx, float* y, const float* x, const PackedLinear& w, const float* bias, int64_t M,
                    Epilogue epilogue);

}  // namespace rc::kernels
