// LayerNorm (layernorm.h): one warp per row, fp32 statistics (two passes over the row, the
// second from L1), fp32 or bf16 storage. add_layernorm fuses the post-LN residual join:
// sum = x + residual is stored (backward's input) and normalised as stored (after rounding,
// for bf16), so forward and backward see the same x. Parameter gradients use the
// deterministic column reduction (reduce.cuh).
#include "kernels/cuda/reduce.cuh"

namespace rc::kernels::cuda {

namespace {

constexpr int kRowsPerBlock = 8;  // warps per block

// residual == nullptr: plain LayerNorm of x. Otherwise sum = x + residual first.
template <class T>
__global__ void layernorm_forward_kernel(T* y, T* sum, float* mean, float* rstd, const T* x, const T* residual,
                                         const float* gamma, const float* beta, int64_t N, int64_t C, float eps) {
  const int lane = threadIdx.x % kWarp;
  const int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
  if (row >= N) return;
  const T* xr = x + row * C;
  T* yr = y + row * C;
  const T* src = xr;
  if (residual) {
    const T* rr = residual + row * C;
    T* sr = sum + row * C;
    for (int64_t c = lane; c < C; c += kWarp) st(sr + c, ld(xr + c) + ld(rr + c));
    src = sr;  // each lane re-reads only what it wrote: no synchronisation needed
  }
  float s = 0.0f;
  for (int64_t c = lane; c < C; c += kWarp) s += ld(src + c);
  const float mu = warp_sum(s) / float(C);
  float q = 0.0f;
  for (int64_t c = lane; c < C; c += kWarp) {
    const float d = ld(src + c) - mu;
    q += d * d;
  }
  const float rs = rsqrtf(warp_sum(q) / float(C) + eps);
  for (int64_t c = lane; c < C; c += kWarp) st(yr + c, (ld(src + c) - mu) * rs * gamma[c] + beta[c]);
  if (mean && lane == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
}

// dx = rstd · (g - mean(g) - x̂·mean(g·x̂)),  g = dy·γ.
template <class T>
__global__ void layernorm_backward_kernel(T* dx, const T* dy, const T* x, const float* gamma, const float* mean,
                                          const float* rstd, int64_t N, int64_t C) {
  const int lane = threadIdx.x % kWarp;
  const int64_t row = blockIdx.x * int64_t(kRowsPerBlock) + threadIdx.x / kWarp;
  if (row >= N) return;
  const T* xr = x + row * C;
  const T* dyr = dy + row * C;
  const float mu = mean[row], rs = rstd[row];
  float g_sum = 0.0f, gx_sum = 0.0f;
  for (int64_t c = lane; c < C; c += kWarp) {
    const float g = ld(dyr + c) * gamma[c];
    g_sum += g;
    gx_sum += g * (ld(xr + c) - mu) * rs;
  }
  const float g_mean = warp_sum(g_sum) / float(C), gx_mean = warp_sum(gx_sum) / float(C);
  T* dxr = dx + row * C;
  for (int64_t c = lane; c < C; c += kWarp) {
    const float xhat = (ld(xr + c) - mu) * rs;
    st(dxr + c, rs * (ld(dyr + c) * gamma[c] - g_mean - xhat * gx_mean));
  }
}

// (dy·x̂, dy) for the column reduction into (dgamma, dbeta).
template <class T>
struct LnParamGrad {
  const T* dy;
  const T* x;
  const float* mean;
  const float* rstd;
  int64_t C;
  __device__ float2 operator()(int64_t r, int64_t c) const {
    const float d = ld(dy + r * C + c);
    return make_float2(d * (ld(x + r * C + c) - mean[r]) * rstd[r], d);
  }
};

template <class T>
void forward(T* y, T* sum, float* mean, float* rstd, const T* x, const T* residual, const float* gamma,
             const float* beta, int64_t N, int64_t C, float eps, void* stream) {
  const int64_t grid = grid_rows(N, kRowsPerBlock);
  if (grid == 0) return;
  layernorm_forward_kernel<T><<<unsigned(grid), kRowsPerBlock * kWarp, 0, as_stream(stream)>>>(
      y, sum, mean, rstd, x, residual, gamma, beta, N, C, eps);
  RC_CUDA_CHECK_LAUNCH();
}

template <class T>
void backward(T* dx, float* dgamma, float* dbeta, const T* dy, const T* x, const float* gamma, const float* mean,
              const float* rstd, int64_t N, int64_t C, void* stream) {
  const int64_t grid = grid_rows(N, kRowsPerBlock);
  if (grid == 0) return;
  // Parameter gradients first: they read dy, which a caller may let dx overwrite.
  col_reduce(dgamma, dbeta, LnParamGrad<T>{dy, x, mean, rstd, C}, N, C, stream);
  layernorm_backward_kernel<T>
      <<<unsigned(grid), kRowsPerBlock * kWarp, 0, as_stream(stream)>>>(dx, dy, x, gamma, mean, rstd, N, C);
  RC_CUDA_CHECK_LAUNCH();
}

}  // namespace

void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps, void* s) {
  forward<float>(y, nullptr, mean, rstd, x, nullptr, gamma, beta, N, C, eps, s);
}
void layernorm_forward(Bf16* y, float* mean, float* rstd, const Bf16* x, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps, void* s) {
  forward<bf16>(as_bf16(y), nullptr, mean, rstd, as_bf16(x), nullptr, gamma, beta, N, C, eps, s);
}
void add_layernorm_forward(float* y, float* sum, float* mean, float* rstd, const float* x, const float* residual,
                           const float* gamma, const float* beta, int64_t N, int64_t C, float eps, void* s) {
  forward<float>(y, sum, mean, rstd, x, residual, gamma, beta, N, C, eps, s);
}
void add_layernorm_forward(Bf16* y, Bf16* sum, float* mean, float* rstd, const Bf16* x, const Bf16* residual,
                           const float* gamma, const float* beta, int64_t N, int64_t C, float eps, void* s) {
  forward<bf16>(as_bf16(y), as_bf16(sum), mean, rstd, as_bf16(x), as_bf16(residual), gamma, beta, N, C, eps, s);
}
void layernorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x, const float* gamma,
                        const float* mean, const float* rstd, int64_t N, int64_t C, void* s) {
  backward<float>(dx, dgamma, dbeta, dy, x, gamma, mean, rstd, N, C, s);
}
void layernorm_backward(Bf16* dx, float* dgamma, float* dbeta, const Bf16* dy, const Bf16* x, const float* gamma,
                        const float* mean, const float* rstd, int64_t N, int64_t C, void* s) {
  backward<bf16>(as_bf16(dx), dgamma, dbeta, as_bf16(dy), as_bf16(x), gamma, mean, rstd, N, C, s);
}

}  // namespace rc::kernels::cuda
