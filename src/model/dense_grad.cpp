// dense_grad.h: the derivative of each of Dense's activations (torch.nn's Identity, Tanh,
// ReLU, Sigmoid and the erf GELU) at the pre-activation, recomputed from x.
#include "model/dense_grad.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace rc::model {

namespace {

double activation_derivative(DenseLayer::Activation a, double s) {
  switch (a) {
    case DenseLayer::Activation::identity:
      return 1.0;
    case DenseLayer::Activation::tanh: {
      const double t = std::tanh(s);
      return 1.0 - t * t;
    }
    case DenseLayer::Activation::relu:
      return s > 0 ? 1.0 : 0.0;  // torch's relu backward: 0 at 0
    case DenseLayer::Activation::sigmoid: {
      const double g = 1.0 / (1.0 + std::exp(-s));
      return g * (1.0 - g);
    }
    case DenseLayer::Activation::gelu:  // d/ds s·Φ(s) = Φ(s) + s·φ(s)
      return 0.5 * (1.0 + std::erf(s / std::numbers::sqrt2)) +
             s * std::exp(-0.5 * s * s) / std::sqrt(2.0 * std::numbers::pi);
  }
  return 1.0;
}

}  // namespace

void dense_backward(const DenseLayer& d, const float* x, int64_t rows, const float* dy, float* dx, float* dW,
                    float* db) {
  const int64_t I = d.in_features, O = d.out_features;
  std::vector<double> ds(static_cast<size_t>(O)), dxr(static_cast<size_t>(I));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * I;
    for (int64_t o = 0; o < O; ++o) {
      const float* w = d.weight.data() + o * I;
      double s = d.bias.empty() ? 0.0 : double(d.bias[size_t(o)]);
      for (int64_t i = 0; i < I; ++i) s += double(w[i]) * double(xr[i]);
      ds[size_t(o)] = double(dy[r * O + o]) * activation_derivative(d.activation, s);
    }
    std::fill(dxr.begin(), dxr.end(), 0.0);
    for (int64_t o = 0; o < O; ++o) {
      const double g = ds[size_t(o)];
      const float* w = d.weight.data() + o * I;
      float* gw = dW + o * I;
      for (int64_t i = 0; i < I; ++i) {
        gw[i] += float(g * double(xr[i]));
        dxr[size_t(i)] += g * double(w[i]);
      }
      if (db && !d.bias.empty()) db[o] += float(g);
    }
    if (dx)
      for (int64_t i = 0; i < I; ++i) dx[r * I + i] = float(dxr[size_t(i)]);
  }
}

}  // namespace rc::model
