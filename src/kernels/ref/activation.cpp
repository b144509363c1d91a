// Scalar fp32 oracles for the activations (activation.h), computed in double.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/activation.h"
#include "tensor/bf16.h"

namespace rc::kernels::ref {

namespace {
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
}  // namespace

void gelu_erf_forward(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    y[i] = float(0.5 * v * (1.0 + std::erf(v * kInvSqrt2)));
  }
}

void gelu_erf_forward_bf16(uint16_t* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float g;
    gelu_erf_forward(&g, x + i, 1);
    y[i] = f32_to_bf16(g);
  }
}

void gelu_erf_backward(float* dx, const float* dy, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double cdf = 0.5 * (1.0 + std::erf(v * kInvSqrt2));
    const double pdf = kInvSqrt2Pi * std::exp(-0.5 * v * v);
    dx[i] = float(double(dy[i]) * (cdf + v * pdf));
  }
}

void tanh_forward(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = float(std::tanh(double(x[i])));
}

void tanh_backward(float* dx, const float* dy, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double t = y[i];
    dx[i] = float(double(dy[i]) * (1.0 - t * t));
  }
}

// Written as max(x, 0) and the mask of y > 0, the definitions, not the CPU kernel's loop.
void relu_forward(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::max(x[i], 0.0f);
}

void relu_backward(float* dx, const float* dy, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = float(y[i] > 0.0f) * dy[i];
}

// transformers' NewGELUActivation, in double.
void gelu_tanh_forward(float* y, const float* x, int64_t n) {
  const double k = std::sqrt(2.0 / M_PI);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    y[i] = float(0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * std::pow(v, 3.0)))));
  }
}

void gelu_tanh_backward(float* dx, const float* dy, const float* x, int64_t n) {
  const double k = std::sqrt(2.0 / M_PI);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i], t = std::tanh(k * (v + 0.044715 * v * v * v));
    const double dt = (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * v * v);
    dx[i] = float(double(dy[i]) * (0.5 * (1.0 + t) + 0.5 * v * dt));
  }
}

}  // namespace rc::kernels::ref
