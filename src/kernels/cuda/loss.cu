// Softmax and cross-entropy over K classes (loss.h): one warp per row, max-subtracted,
// log-sum-exp form, fp32 (the ref is double; K is a handful of labels).
#include "kernels/cuda/common.cuh"

namespace rc::kernels::cuda {

namespace {

constexpr int kRowsPerBlock = 8;

// Writes softmax(row) to probs; returns log Σ exp(row) on every lane.
__device__ float softmax_row(float* probs, const float* logits, int64_t K, int lane) {
  float mx = -INFINITY;
  for (int64_t k = lane; k < K; k += kWarp) mx = fmaxf(mx, logits[k]);
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int64_t k = lane; k < K; k += kWarp) sum += expf(logits[k] - mx);
  sum = warp_sum(sum);
  const float inv = 1.0f / sum;
  for (int64_t k = lane; k < K; k += kWarp) probs[k] = expf(logits[k] - mx) * inv;
  return mx + logf(sum);
}

__global__ void softmax_forward_kernel(float* probs, const float* logits, int64_t B, int64_t K) {
  const int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
  if (row >= B) return;
  softmax_row(probs + row * K, logits + row * K, K, threadIdx.x % kWarp);
}

__global__ void cross_entropy_forward_kernel(float* losses, float* probs, const float* logits, const int32_t* labels,
                                             int64_t B, int64_t K) {
  const int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
  if (row >= B) return;
  const int lane = threadIdx.x % kWarp;
  const float lse = softmax_row(probs + row * K, logits + row * K, K, lane);
  if (lane == 0) losses[row] = lse - logits[row * K + labels[row]];
}

__global__ void cross_entropy_backward_kernel(float* dlogits, const float* probs, const int32_t* labels, int64_t B,
                                              int64_t K, float scale) {
  const int64_t total = B * K;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / K, k = i % K;
    dlogits[i] = scale * (probs[i] - (k == labels[b] ? 1.0f : 0.0f));
  }
}

}  // namespace

void softmax_forward(float* probs, const float* logits, int64_t B, int64_t K, void* stream) {
  const int64_t grid = grid_rows(B, kRowsPerBlock);
  if (grid == 0 || K == 0) return;
  softmax_forward_kernel<<<unsigned(grid), kRowsPerBlock * kWarp, 0, as_stream(stream)>>>(probs, logits, B, K);
  RC_CUDA_CHECK_LAUNCH();
}

void cross_entropy_forward(float* losses, float* probs, const float* logits, const int32_t* labels, int64_t B,
                           int64_t K, void* stream) {
  const int64_t grid = grid_rows(B, kRowsPerBlock);
  if (grid == 0 || K == 0) return;
  cross_entropy_forward_kernel<<<unsigned(grid), kRowsPerBlock * kWarp, 0, as_stream(stream)>>>(losses, probs, logits,
                                                                                                labels, B, K);
  RC_CUDA_CHECK_LAUNCH();
}

void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int64_t B, int64_t K,
                            float scale, void* stream) {
  const int64_t grid = grid_1d(B * K, 256);
  if (grid == 0) return;
  cross_entropy_backward_kernel<<<unsigned(grid), 256, 0, as_stream(stream)>>>(dlogits, probs, labels, B, K, scale);
  RC_CUDA_CHECK_LAUNCH();
}

}  // namespace rc::kernels::cuda
