// The dropout RNG, callable from host and device. MUST stay bit-identical to
// rc::kernels::dropout_uniform (kernels/dropout.h): the CPU and GPU draw the same masks, so
// a run can move between devices and the GPU tests compare masks exactly.
// tests/unit/test_cuda_host.cpp checks the two agree on many (seed, i).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define RC_HOST_DEVICE __host__ __device__
#else
#define RC_HOST_DEVICE
#endif

namespace rc::kernels::cuda {

// splitmix64 of (seed, i), 24 bits mapped to [0, 1).
RC_HOST_DEVICE inline float dropout_uniform_hd(uint64_t seed, uint64_t i) noexcept {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return float(z >> 40) * (1.0f / 16777216.0f);
}

}  // namespace rc::kernels::cuda
