// Dropout (dropout.h) with the shared counter RNG (core/counter_rng.h): element (r, k) of a
// (rows, cols) tensor is kept iff uniform24(dropout_row_seed(seed, row0 + r), k) >= p, exactly
// the CPU's mask, so the GPU tests compare masks bit for bit. p >= 1 drops everything
// (PyTorch), p <= 0 copies.
#include "core/counter_rng.h"
#include "kernels/cuda/common.cuh"

namespace rc::kernels::cuda {

namespace {

constexpr int kBlock = 256;

template <class T>
__global__ void dropout_forward_kernel(T* y, const T* x, int64_t n, int64_t cols, float p, float scale, uint64_t seed,
                                       uint64_t row0) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, k = i - r * cols;
    const bool keep = rng::uniform24(rng::dropout_row_seed(seed, row0 + uint64_t(r)), uint64_t(k)) >= p;
    st(y + i, keep ? ld(x + i) * scale : 0.0f);
  }
}

template <class T>
void launch(T* y, const T* x, int64_t rows, int64_t cols, float p, uint64_t seed, uint64_t row0, void* stream) {
  const int64_t n = rows * cols;
  const int64_t grid = grid_1d(n, kBlock);
  if (grid == 0) return;
  if (p <= 0.0f) {
    if (y != x)
      RC_CUDA_CHECK(cudaMemcpyAsync(y, x, size_t(n) * sizeof(T), cudaMemcpyDeviceToDevice, as_stream(stream)));
    return;
  }
  const float scale = p < 1.0f ? 1.0f / (1.0f - p) : 0.0f;
  dropout_forward_kernel<T><<<unsigned(grid), kBlock, 0, as_stream(stream)>>>(y, x, n, cols, p, scale, seed, row0);
  RC_CUDA_CHECK_LAUNCH();
}

}  // namespace

void dropout_forward(float* y, const float* x, int64_t rows, int64_t cols, float p, uint64_t seed, uint64_t row0,
                     void* stream) {
  launch(y, x, rows, cols, p, seed, row0, stream);
}
void dropout_forward(Bf16* y, const Bf16* x, int64_t rows, int64_t cols, float p, uint64_t seed, uint64_t row0,
                     void* stream) {
  launch(as_bf16(y), as_bf16(x), rows, cols, p, seed, row0, stream);
}

}  // namespace rc::kernels::cuda
