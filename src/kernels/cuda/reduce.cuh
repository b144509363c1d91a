// Deterministic column sums of an (N, C) expression, ACCUMULATED into one or two fp32
// vectors of C: bias gradients (Σ_rows dy) and LayerNorm parameter gradients (Σ dy·x̂, Σ dy).
// Two stages (plan_col_reduce): row slabs → partials[P][C] in the scratch workspace, then a
// fixed-order sum of the P partials. No atomics, so the result is bitwise reproducible.
#pragma once

#include "kernels/cuda/common.cuh"

namespace rc::kernels::cuda {

constexpr int kColReduceRows = 8;  // blockDim.y of stage 1; blockDim.x = 32 columns

// f(r, c) -> float2 (first, second). partials: 2·P·C floats.
template <class F>
__global__ void col_reduce_partial_kernel(float* partials, F f, int64_t N, int64_t C, int64_t rows_per_partial) {
  __shared__ float s0[kColReduceRows][kWarp + 1], s1[kColReduceRows][kWarp + 1];
  const int64_t c = blockIdx.x * int64_t(kWarp) + threadIdx.x;
  const int64_t r0 = blockIdx.y * rows_per_partial;
  const int64_t r1 = min(N, r0 + rows_per_partial);
  float a = 0.0f, b = 0.0f;
  if (c < C)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kColReduceRows) {
      const float2 v = f(r, c);
      a += v.x;
      b += v.y;
    }
  s0[threadIdx.y][threadIdx.x] = a;
  s1[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int k = 1; k < kColReduceRows; ++k) {
      a += s0[k][threadIdx.x];
      b += s1[k][threadIdx.x];
    }
    partials[blockIdx.y * C + c] = a;
    partials[(gridDim.y + blockIdx.y) * C + c] = b;
  }
}

// Stage 2, defined once in reduce.cu (a host launcher, so no cross-TU kernel launch).
void col_reduce_final(float* out0, float* out1, const float* partials, int64_t P, int64_t C, void* stream);

// out0[c] += Σ_r f(r,c).x ; out1[c] += Σ_r f(r,c).y (out1 may be null).
template <class F>
void col_reduce(float* out0, float* out1, F f, int64_t N, int64_t C, void* stream) {
  const ColReducePlan plan = plan_col_reduce(N, C);
  if (plan.partials == 0) return;
  float* partials = static_cast<float*>(workspace(Scratch::partials, size_t(2 * plan.partials * C) * sizeof(float)));
  const dim3 grid1(unsigned(plan.col_blocks), unsigned(plan.partials)), block1(kWarp, kColReduceRows);
  col_reduce_partial_kernel<F><<<grid1, block1, 0, as_stream(stream)>>>(partials, f, N, C, plan.rows_per_partial);
  RC_CUDA_CHECK_LAUNCH();
  col_reduce_final(out0, out1, partials, plan.partials, C, stream);
}

}  // namespace rc::kernels::cuda
