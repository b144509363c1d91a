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
                                             int64_t B, int64_t K, float smoothing) {
  const int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
  if (row >= B) return;
  const int lane = threadIdx.x % kWarp;
  const float lse = softmax_row(probs + row * K, logits + row * K, K, lane);
  float sum = 0.0f;  // of the row's logits, for the smoothed term lse - mean
  if (smoothing > 0.0f) {
    for (int64_t k = lane; k < K; k += kWarp) sum += logits[row * K + k];
    sum = warp_sum(sum);
  }
  if (lane == 0 && labels[row] < 0) losses[row] = 0.0f;
  if (lane == 0 && labels[row] >= 0)
    losses[row] = (1.0f - smoothing) * (lse - logits[row * K + labels[row]]) + smoothing * (lse - sum / float(K));
}

__global__ void cross_entropy_backward_kernel(float* dlogits, const float* probs, const int32_t* labels, int64_t B,
                                              int64_t K, float scale, float smoothing) {
  const int64_t total = B * K;
  const float hit = 1.0f - smoothing, floor = smoothing / float(K);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / K, k = i % K;
    dlogits[i] = labels[b] < 0 ? 0.0f : scale * (probs[i] - (k == labels[b] ? hit : 0.0f) - floor);
  }
}

__device__ float pointwise_loss(PointwiseLoss kind, float x, float y) {
  if (kind == PointwiseLoss::squared_error) return (x - y) * (x - y);
  return fmaxf(x, 0.0f) - x * y + log1pf(expf(-fabsf(x)));
}

__device__ float pointwise_grad(PointwiseLoss kind, float x, float y) {
  if (kind == PointwiseLoss::squared_error) return 2.0f * (x - y);
  const float e = expf(-fabsf(x));
  return (x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e)) - y;
}

// One warp per row: the row's sum in a fixed order (deterministic).
__global__ void pointwise_loss_forward_kernel(PointwiseLoss kind, float* losses, const float* logits,
                                              const float* targets, int64_t B, int64_t K) {
  const int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
  if (row >= B) return;
  const int lane = threadIdx.x % kWarp;
  float s = 0.0f;
  for (int64_t k = lane; k < K; k += kWarp) s += pointwise_loss(kind, logits[row * K + k], targets[row * K + k]);
  s = warp_sum(s);
  if (lane == 0) losses[row] = s;
}

__global__ void pointwise_loss_backward_kernel(PointwiseLoss kind, float* dlogits, const float* logits,
                                               const float* targets, int64_t n, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dlogits[i] = scale * pointwise_grad(kind, logits[i], targets[i]);
}

}  // namespace

void softmax_forward(float* probs, const float* logits, int64_t B, int64_t K, void* stream) {
  const int64_t grid = grid_rows(B, kRowsPerBlock);
  if (grid == 0 || K == 0) return;
  softmax_forward_kernel<<<unsigned(grid), kRowsPerBlock * kWarp, 0, as_stream(stream)>>>(probs, logits, B, K);
  RC_CUDA_CHECK_LAUNCH();
}

void cross_entropy_forward(float* losses, float* probs, const float* logits, const int32_t* labels, int64_t B,
                           int64_t K, float smoothing, void* stream) {
  const int64_t grid = grid_rows(B, kRowsPerBlock);
  if (grid == 0 || K == 0) return;
  cross_entropy_forward_kernel<<<unsigned(grid), kRowsPerBlock * kWarp, 0, as_stream(stream)>>>(
      losses, probs, logits, labels, B, K, smoothing);
  RC_CUDA_CHECK_LAUNCH();
}

void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int64_t B, int64_t K,
                            float scale, float smoothing, void* stream) {
  const int64_t grid = grid_1d(B * K, 256);
  if (grid == 0) return;
  cross_entropy_backward_kernel<<<unsigned(grid), 256, 0, as_stream(stream)>>>(dlogits, probs, labels, B, K, scale,
                                                                               smoothing);
  RC_CUDA_CHECK_LAUNCH();
}

void pointwise_loss_forward(PointwiseLoss kind, float* losses, const float* logits, const float* targets, int64_t B,
                            int64_t K, void* stream) {
  const int64_t grid = grid_rows(B, kRowsPerBlock);
  if (grid == 0 || K == 0) return;
  pointwise_loss_forward_kernel<<<unsigned(grid), kRowsPerBlock * kWarp, 0, as_stream(stream)>>>(kind, losses, logits,
                                                                                                 targets, B, K);
  RC_CUDA_CHECK_LAUNCH();
}

void pointwise_loss_backward(PointwiseLoss kind, float* dlogits, const float* logits, const float* targets, int64_t B,
                             int64_t K, float scale, void* stream) {
  const int64_t grid = grid_1d(B * K, 256);
  if (grid == 0) return;
  pointwise_loss_backward_kernel<<<unsigned(grid), 256, 0, as_stream(stream)>>>(kind, dlogits, logits, targets, B * K,
                                                                                scale);
  RC_CUDA_CHECK_LAUNCH();
}

}  // namespace rc::kernels::cuda
