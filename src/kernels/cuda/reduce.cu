// Stage 2 of reduce.cuh's column reduction (one copy for every user).
#include "kernels/cuda/reduce.cuh"

namespace rc::kernels::cuda {

namespace {
__global__ void col_reduce_final_kernel(float* out0, float* out1, const float* partials, int64_t P, int64_t C) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  float a = 0.0f, b = 0.0f;
  for (int64_t p = 0; p < P; ++p) {
    a += partials[p * C + c];
    b += partials[(P + p) * C + c];
  }
  out0[c] += a;
  if (out1) out1[c] += b;
}
}  // namespace

void col_reduce_final(float* out0, float* out1, const float* partials, int64_t P, int64_t C, void* stream) {
  col_reduce_final_kernel<<<unsigned(ceil_div(C, 256)), 256, 0, as_stream(stream)>>>(out0, out1, partials, P, C);
  RC_CUDA_CHECK_LAUNCH();
}

}  // namespace rc::kernels::cuda
