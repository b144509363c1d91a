// PackedLinear's state (kernels/linear.h), shared by the oneDNN path (onednn_linear.cpp) and
// the portable one (linear_portable.cpp), and the portable path's entry points. Internal to
// kernels/cpu.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kernels/linear.h"

#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace rc::kernels {

struct PackedLinear::Impl {
  int64_t N = 0, K = 0;
  PackedType type = PackedType::f32;
  size_t bytes = 0;
  bool onednn = false;
  std::vector<float> w_scales;  // s8: (N)
  // Fallback storage (onednn == false): (N, K) row-major.
  std::vector<float> wf;                 // f32, or bf16-rounded values
  std::vector<int8_t> wq;                // s8
  std::vector<uint16_t> wmmla;           // bf16 on aarch64 with BF16: BFMMLA panels (cpu/neon/bf16.cpp), else empty
  std::vector<int8_t> wq_mmla;           // s8 on aarch64 with I8MM: SMMLA panels (then wq is empty)
  std::shared_ptr<const void> borrowed;  // set: w_mem reads the caller's fp32 weights in place
#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN
  dnnl::engine eng;         // the process-wide one: per-thread streams are bound to it
  dnnl::memory::desc w_md;  // the packed layout
  // fp32 on oneDNN's gemm-based matmul (no brgemm kernel: CPUs without AVX-512): w_md is W's
  // own (N, K) rows, and GELU runs as our pass after the GEMM, not as a post-op (run_rows).
  bool rows_as_given = false;
  dnnl::memory w_mem;
  struct Prim {
    dnnl::matmul prim;
    dnnl::memory::desc x_md, y_md, bias_md, scratch_md;
    uint64_t id;  // process-unique: keys the per-thread bound memories (addresses get reused)
  };
  std::mutex mutex;
  std::unordered_map<int64_t, Prim> prims;  // key: see prim_key(); nodes never move
#endif
};

namespace cpu::portable {

// Grows v to at least n elements (never shrinks: per-thread scratch) and returns its data.
template <class T>
T* grow(std::vector<T>& v, int64_t n) {
  if (int64_t(v.size()) < n) v.resize(size_t(n));
  return v.data();
}
// Per-output-channel symmetric quantisation of W(N, K): the same rule as quantize_rows_s8, one
// row of W per output channel.
void quantize_weights(std::vector<int8_t>& q, std::vector<float>& scales, const float* w, int64_t N, int64_t K);
// The portable path: same math as the oneDNN one, plain row-major weights.
void fallback_forward(const PackedLinear::Impl& im, void* y, ActType y_type, const void* x, ActType x_type,
                      const float* bias, int64_t M, Epilogue epilogue, const float* x_scale, float* y_scale);
// Fills im's portable storage from w(N, K) (and sets im.onednn = false).
void pack_fallback(PackedLinear::Impl& im, const float* w);

}  // namespace cpu::portable
}  // namespace rc::kernels
