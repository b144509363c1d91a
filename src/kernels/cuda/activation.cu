// Elementwise activations (activation.h) plus storage casts: grid-stride loops, fp32 math,
// fp32 or bf16 storage. erff/expf are CUDA's fp32 functions (≤ 2 ulp), against the ref's
// double: measured error is in the test tolerances (tests/kernels/test_activation_gpu.cpp).
#include "kernels/cuda/common.cuh"

namespace rc::kernels::cuda {

namespace {

constexpr int kBlock = 256;
constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

template <class T>
__global__ void gelu_erf_forward_kernel(T* y, const T* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = ld(x + i);
    st(y + i, 0.5f * v * (1.0f + erff(v * kInvSqrt2)));
  }
}

template <class T>
__global__ void gelu_erf_backward_kernel(T* dx, const T* dy, const T* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = ld(x + i);
    const float cdf = 0.5f * (1.0f + erff(v * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * v * v);
    st(dx + i, ld(dy + i) * (cdf + v * pdf));
  }
}

__global__ void tanh_forward_kernel(float* y, const float* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = tanhf(x[i]);
}

__global__ void tanh_backward_kernel(float* dx, const float* dy, const float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

__global__ void gelu_tanh_forward_kernel(float* y, const float* x, int64_t n) {
  constexpr float k = 0.79788456080286535588f, c = 0.044715f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];  // 0.5·(1 + tanh(u)) = σ(2u): no cancellation in the negative tail
    y[i] = v / (1.0f + expf(-2.0f * k * (v + c * v * v * v)));
  }
}

__global__ void gelu_tanh_backward_kernel(float* dx, const float* dy, const float* x, int64_t n) {
  constexpr float k = 0.79788456080286535588f, c = 0.044715f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i], u2 = 2.0f * k * (v + c * v * v * v);
    const float s = 1.0f / (1.0f + expf(-u2)), s_neg = 1.0f / (1.0f + expf(u2));
    dx[i] = dy[i] * (s + v * 2.0f * s * s_neg * k * (1.0f + 3.0f * c * v * v));
  }
}

__global__ void relu_forward_kernel(float* y, const float* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void relu_backward_kernel(float* dx, const float* dy, const float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

template <class T>
__global__ void add_kernel(T* y, const T* a, const T* b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    st(y + i, ld(a + i) + ld(b + i));
}

template <class To, class From>
__global__ void cast_kernel(To* y, const From* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    st(y + i, ld(x + i));
}

// Launches kernel over n elements (nothing for n == 0) and checks the launch.
template <class Kernel, class... Args>
void launch_1d(Kernel kernel, int64_t n, void* stream, Args... args) {
  const int64_t grid = grid_1d(n, kBlock);
  if (grid == 0) return;
  kernel<<<unsigned(grid), kBlock, 0, as_stream(stream)>>>(args..., n);
  RC_CUDA_CHECK_LAUNCH();
}

}  // namespace

void gelu_erf_forward(float* y, const float* x, int64_t n, void* s) {
  launch_1d(gelu_erf_forward_kernel<float>, n, s, y, x);
}
void gelu_erf_forward(Bf16* y, const Bf16* x, int64_t n, void* s) {
  launch_1d(gelu_erf_forward_kernel<bf16>, n, s, as_bf16(y), as_bf16(x));
}
void gelu_erf_backward(float* dx, const float* dy, const float* x, int64_t n, void* s) {
  launch_1d(gelu_erf_backward_kernel<float>, n, s, dx, dy, x);
}
void gelu_erf_backward(Bf16* dx, const Bf16* dy, const Bf16* x, int64_t n, void* s) {
  launch_1d(gelu_erf_backward_kernel<bf16>, n, s, as_bf16(dx), as_bf16(dy), as_bf16(x));
}
void tanh_forward(float* y, const float* x, int64_t n, void* s) { launch_1d(tanh_forward_kernel, n, s, y, x); }
void tanh_backward(float* dx, const float* dy, const float* y, int64_t n, void* s) {
  launch_1d(tanh_backward_kernel, n, s, dx, dy, y);
}
void gelu_tanh_forward(float* y, const float* x, int64_t n, void* s) {
  launch_1d(gelu_tanh_forward_kernel, n, s, y, x);
}
void gelu_tanh_backward(float* dx, const float* dy, const float* x, int64_t n, void* s) {
  launch_1d(gelu_tanh_backward_kernel, n, s, dx, dy, x);
}
void relu_forward(float* y, const float* x, int64_t n, void* s) { launch_1d(relu_forward_kernel, n, s, y, x); }
void relu_backward(float* dx, const float* dy, const float* y, int64_t n, void* s) {
  launch_1d(relu_backward_kernel, n, s, dx, dy, y);
}
void add(float* y, const float* a, const float* b, int64_t n, void* s) { launch_1d(add_kernel<float>, n, s, y, a, b); }
void add(Bf16* y, const Bf16* a, const Bf16* b, int64_t n, void* s) {
  launch_1d(add_kernel<bf16>, n, s, as_bf16(y), as_bf16(a), as_bf16(b));
}
void cast(Bf16* y, const float* x, int64_t n, void* s) { launch_1d(cast_kernel<bf16, float>, n, s, as_bf16(y), x); }
void cast(float* y, const Bf16* x, int64_t n, void* s) { launch_1d(cast_kernel<float, bf16>, n, s, y, as_bf16(x)); }

}  // namespace rc::kernels::cuda
