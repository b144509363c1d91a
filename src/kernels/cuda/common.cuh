// Device helpers shared by the .cu files: bf16/fp32 load-store, warp reductions, the
// per-device scratch workspace. Included only by kernels/cuda/*.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "device/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch_config.h"
#include "kernels/cuda/workspace.h"

namespace rc::kernels::cuda {

using bf16 = __nv_bfloat16;

// Math is fp32 whatever the storage: ld widens, st rounds to nearest even.
__device__ __forceinline__ float ld(const float* p) { return *p; }
__device__ __forceinline__ float ld(const bf16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ void st(float* p, float v) { *p = v; }
__device__ __forceinline__ void st(bf16* p, float v) { *p = __float2bfloat16_rn(v); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
inline const bf16* as_bf16(const Bf16* p) { return reinterpret_cast<const bf16*>(p); }
inline bf16* as_bf16(Bf16* p) { return reinterpret_cast<bf16*>(p); }

}  // namespace rc::kernels::cuda
