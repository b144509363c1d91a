// Fused multi-tensor AdamW over the flat fp32 buffers (optimizer.h), torch.optim.AdamW's
// formula in fp32 (as torch's fused CUDA AdamW): one launch covers up to kAdamWMaxSegments
// segments, passed by value in the kernel parameters; each thread grid-strides over the
// concatenation of the segments and finds its segment by binary search over their starts.
// Optionally writes the bf16 copy of the updated parameters the next forward's GEMMs read,
// so there is no separate cast pass. sum_squares is a deterministic two-stage reduction in
// double (global-norm clipping).
#include <cmath>
#include <vector>

#include "kernels/cuda/common.cuh"

namespace rc::kernels::cuda {

namespace {

struct SegTable {
  int64_t start[kAdamWMaxSegments + 1];  // prefix sums of n: start[count] = total
  int64_t offset[kAdamWMaxSegments];
  uint8_t decay[kAdamWMaxSegments];
  int count;
};

struct AdamWConsts {
  float lr_wd, beta1, beta2, eps, step_size, bc2_sqrt, grad_scale;
};

__global__ void adamw_step_kernel(float* params, const float* grads, float* m, float* v, bf16* params_bf16,
                                  const SegTable tab, const AdamWConsts k) {
  const int64_t total = tab.start[tab.count];
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    int lo = 0, hi = tab.count - 1;  // last segment with start <= t
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (tab.start[mid] <= t)
        lo = mid;
      else
        hi = mid - 1;
    }
    const int64_t i = tab.offset[lo] + (t - tab.start[lo]);
    const float g = grads[i] * k.grad_scale;
    float p = params[i];
    if (tab.decay[lo]) p *= 1.0f - k.lr_wd;
    const float mi = k.beta1 * m[i] + (1.0f - k.beta1) * g;
    const float vi = k.beta2 * v[i] + (1.0f - k.beta2) * g * g;
    p -= k.step_size * mi / (sqrtf(vi) / k.bc2_sqrt + k.eps);
    params[i] = p;
    m[i] = mi;
    v[i] = vi;
    if (params_bf16) params_bf16[i] = __float2bfloat16_rn(p);
  }
}

constexpr int kReduceBlock = 256;
constexpr int64_t kReduceBlocks = 1024;

__global__ void sum_squares_partial_kernel(double* partials, const float* x, int64_t n) {
  __shared__ double s[kReduceBlock / kWarp];
  double acc = 0.0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    acc += double(x[i]) * double(x[i]);
  acc = warp_sum(acc);
  if (threadIdx.x % kWarp == 0) s[threadIdx.x / kWarp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    double t = 0.0;
    for (int w = 0; w < kReduceBlock / kWarp; ++w) t += s[w];
    partials[blockIdx.x] = t;
  }
}

__global__ void sum_squares_final_kernel(double* out, const double* partials, int64_t P) {
  if (threadIdx.x != 0) return;
  double t = 0.0;
  for (int64_t p = 0; p < P; ++p) t += partials[p];  // fixed order: reproducible
  *out = t;
}

}  // namespace

void adamw_step(float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                int64_t num_segments, const AdamWHyper& h, Bf16* params_bf16, void* stream) {
  // Bias corrections in double on the host, as torch computes them in Python.
  const double bc1 = 1.0 - std::pow(double(h.beta1), double(h.step));
  const double bc2 = 1.0 - std::pow(double(h.beta2), double(h.step));
  const AdamWConsts k{float(double(h.lr) * double(h.weight_decay)),
                      h.beta1,
                      h.beta2,
                      h.eps,
                      float(double(h.lr) / bc1),
                      float(std::sqrt(bc2)),
                      h.grad_scale};
  for (int64_t s = 0; s < num_segments;) {  // one launch per table of <= kAdamWMaxSegments
    SegTable tab{};
    int64_t total = 0;
    for (; s < num_segments && tab.count < kAdamWMaxSegments; ++s) {
      if (segments[s].n <= 0) continue;
      tab.start[tab.count] = total;
      tab.offset[tab.count] = segments[s].offset;
      tab.decay[tab.count] = segments[s].decay ? 1 : 0;
      total += segments[s].n;
      ++tab.count;
    }
    tab.start[tab.count] = total;
    const int64_t grid = grid_1d(total, 256, 2048);
    if (grid == 0) continue;
    adamw_step_kernel<<<unsigned(grid), 256, 0, as_stream(stream)>>>(params, grads, m, v, as_bf16(params_bf16), tab, k);
    RC_CUDA_CHECK_LAUNCH();
  }
}

double sum_squares(const float* x, int64_t n, void* stream) {
  if (n <= 0) return 0.0;
  const int64_t grid = grid_1d(n, kReduceBlock, kReduceBlocks);
  auto* partials = static_cast<double*>(workspace(Scratch::partials, size_t(grid + 1) * sizeof(double)));
  sum_squares_partial_kernel<<<unsigned(grid), kReduceBlock, 0, as_stream(stream)>>>(partials + 1, x, n);
  RC_CUDA_CHECK_LAUNCH();
  sum_squares_final_kernel<<<1, kWarp, 0, as_stream(stream)>>>(partials, partials + 1, grid);
  RC_CUDA_CHECK_LAUNCH();
  double out = 0.0;
  RC_CUDA_CHECK(cudaMemcpyAsync(&out, partials, sizeof(double), cudaMemcpyDeviceToHost, as_stream(stream)));
  RC_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
  return out;
}

void zero(float* x, int64_t n, void* stream) {
  if (n <= 0) return;
  RC_CUDA_CHECK(cudaMemsetAsync(x, 0, size_t(n) * sizeof(float), as_stream(stream)));
}

}  // namespace rc::kernels::cuda
