// Dropout (dropout.h) with the shared counter RNG (rng.h): element i is kept iff
// dropout_uniform(seed, i) >= p, exactly the CPU's mask, so the GPU tests compare masks
// bit for bit. p >= 1 drops everything (PyTorch), p <= 0 copies.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/rng.h"

namespace rc::kernels::cuda {

namespace {

constexpr int kBlock = 256;

template <class T>
__global__ void dropout_forward_kernel(T* y, const T* x, int64_t n, float p, float scale, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const bool keep = dropout_uniform_hd(seed, uint64_t(i)) >= p;
    st(y + i, keep ? ld(x + i) * scale : 0.0f);
  }
}

template <class T>
void launch(T* y, const T* x, int64_t n, float p, uint64_t seed, void* stream) {
  const int64_t grid = grid_1d(n, kBlock);
  if (grid == 0) return;
  if (p <= 0.0f) {
    if (y != x)
      RC_CUDA_CHECK(cudaMemcpyAsync(y, x, size_t(n) * sizeof(T), cudaMemcpyDeviceToDevice, as_stream(stream)));
    return;
  }
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  dropout_forward_kernel<T><<<unsigned(grid), kBlock, 0, as_stream(stream)>>>(y, x, n, p, scale, seed);
  RC_CUDA_CHECK_LAUNCH();
}

}  // namespace

void dropout_forward(float* y, const float* x, int64_t n, float p, uint64_t seed, void* stream) {
  launch(y, x, n, p, seed, stream);
}
void dropout_forward(Bf16* y, const Bf16* x, int64_t n, float p, uint64_t seed, void* stream) {
  launch(as_bf16(y), as_bf16(x), n, p, seed, stream);
}

}  // namespace rc::kernels::cuda
