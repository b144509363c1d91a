// Pointer-alignment rules of the cuBLASLt GEMMs (matmul.cu), CUDA-free and header-only so
// that they are unit-tested on CPU-only builds (tests/unit/test_cuda_host.cpp).
#pragma once

#include <cstdint>

namespace rc::kernels::cuda {

// Largest power of two (<= 256) dividing the address: cuBLASLt picks kernels assuming the
// alignment it is told, so it is part of a GEMM plan's cache key.
inline uint32_t alignment_of(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && (v % a) != 0) a >>= 1;
  return a;
}

// The bias and bias-gradient epilogues read or write their vector with 16-byte accesses, and
// cuBLASLt's alignment preferences cover A, B, C and D but not that pointer: the heuristic
// can pick a kernel that faults ("misaligned address") on a bias that is a slice of a larger
// buffer at an offset not a multiple of 16 bytes (PyTorch falls back to the unfused GEMM in
// that case too, pytorch/pytorch#194497). Below 16 bytes the plain GEMM runs and a separate
// kernel adds the bias or sums its gradient.
constexpr uint32_t kBiasEpilogueAlignment = 16;
inline bool bias_epilogue_allowed(const void* bias) {
  return bias != nullptr && alignment_of(bias) >= kBiasEpilogueAlignment;
}

}  // namespace rc::kernels::cuda
