// rows.h on CUDA: position ids (one thread per sequence: a running count), first-token
// gather / scatter (a thread per element), and a one-block deterministic mean.
#include "kernels/cuda/common.cuh"

namespace rc::kernels::cuda {

namespace {

__global__ void position_ids_kernel(int32_t* positions, const int32_t* ids, int64_t B, int64_t T, int32_t pad) {
  const int64_t b = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (b >= B) return;
  int32_t count = 0;
  for (int64_t t = 0; t < T; ++t) {
    const int32_t id = ids[b * T + t];
    positions[b * T + t] = id != pad ? pad + ++count : pad;
  }
}

__global__ void gather_first_tokens_kernel(float* dst, const float* src, int64_t B, int64_t T, int64_t C) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < B * C; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / C, c = i % C;
    dst[i] = src[b * T * C + c];
  }
}

__global__ void scatter_first_tokens_kernel(float* dst, const float* src, int64_t B, int64_t T, int64_t C) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < B * T * C;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / C, c = i % C;
    dst[i] = row % T == 0 ? src[(row / T) * C + c] : 0.0f;
  }
}

__global__ void gather_rows_kernel(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < M * C; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = src[index[i / C] * C + i % C];
}

__global__ void scatter_rows_kernel(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < M * C; i += int64_t(gridDim.x) * blockDim.x)
    dst[index[i / C] * C + i % C] = src[i];
}

constexpr int kMeanThreads = 256;

__global__ void mean_kernel(float* out, const float* x, int64_t n) {
  __shared__ double part[kMeanThreads];
  double s = 0;
  for (int64_t i = threadIdx.x; i < n; i += kMeanThreads) s += double(x[i]);
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = kMeanThreads / 2; w > 0; w >>= 1) {
    if (int(threadIdx.x) < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = float(part[0] / double(n));
}

}  // namespace

void position_ids(int32_t* positions, const int32_t* ids, int64_t B, int64_t T, int32_t pad, void* stream) {
  if (B * T == 0) return;
  position_ids_kernel<<<unsigned(ceil_div(B, 128)), 128, 0, as_stream(stream)>>>(positions, ids, B, T, pad);
  RC_CUDA_CHECK_LAUNCH();
}

void gather_first_tokens(float* dst, const float* src, int64_t B, int64_t T, int64_t C, void* stream) {
  const int64_t blocks = grid_1d(B * C, 256);
  if (blocks == 0) return;
  gather_first_tokens_kernel<<<unsigned(blocks), 256, 0, as_stream(stream)>>>(dst, src, B, T, C);
  RC_CUDA_CHECK_LAUNCH();
}

void scatter_first_tokens(float* dst, const float* src, int64_t B, int64_t T, int64_t C, void* stream) {
  const int64_t blocks = grid_1d(B * T * C, 256);
  if (blocks == 0) return;
  scatter_first_tokens_kernel<<<unsigned(blocks), 256, 0, as_stream(stream)>>>(dst, src, B, T, C);
  RC_CUDA_CHECK_LAUNCH();
}

void gather_rows(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C, void* stream) {
  const int64_t blocks = grid_1d(M * C, 256);
  if (blocks == 0) return;
  gather_rows_kernel<<<unsigned(blocks), 256, 0, as_stream(stream)>>>(dst, src, index, M, C);
  RC_CUDA_CHECK_LAUNCH();
}

void scatter_rows(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C, void* stream) {
  const int64_t blocks = grid_1d(M * C, 256);
  if (blocks == 0) return;
  scatter_rows_kernel<<<unsigned(blocks), 256, 0, as_stream(stream)>>>(dst, src, index, M, C);
  RC_CUDA_CHECK_LAUNCH();
}

void mean_forward(float* out, const float* x, int64_t n, void* stream) {
  mean_kernel<<<1, kMeanThreads, 0, as_stream(stream)>>>(out, x, n);
  RC_CUDA_CHECK_LAUNCH();
}

}  // namespace rc::kernels::cuda
