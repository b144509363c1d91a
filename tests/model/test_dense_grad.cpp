// dense_backward (model/dense_grad.h) against central finite differences of DenseLayer::forward
// (the forward the engine serves, sentence-transformers' Dense; transcribed in double here)
// for each activation, with and without a bias: L = Σ dy ⊙ forward(x) differentiated in W, b, x.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "model/dense_grad.h"

using namespace rc;
using model::DenseLayer;

namespace {

// Dense.py's forward in double, activation(x·Wᵀ + b), as DenseLayer::forward computes it
// before its float rounding (checked below): the finite differences need no float noise.
double act(DenseLayer::Activation a, double s) {
  switch (a) {
    case DenseLayer::Activation::identity:
      return s;
    case DenseLayer::Activation::tanh:
      return std::tanh(s);
    case DenseLayer::Activation::relu:
      return s > 0 ? s : 0.0;
    case DenseLayer::Activation::sigmoid:
      return 1.0 / (1.0 + std::exp(-s));
    case DenseLayer::Activation::gelu:
      return 0.5 * s * (1.0 + std::erf(s / std::sqrt(2.0)));
  }
  return s;
}
std::vector<double> forward64(const DenseLayer& d, const std::vector<double>& W, const std::vector<double>& b,
                              const std::vector<double>& x, int64_t rows) {
  std::vector<double> y(size_t(rows * d.out_features));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < d.out_features; ++o) {
      double s = b.empty() ? 0.0 : b[size_t(o)];
      for (int64_t i = 0; i < d.in_features; ++i)
        s += W[size_t(o * d.in_features + i)] * x[size_t(r * d.in_features + i)];
      y[size_t(r * d.out_features + o)] = act(d.activation, s);
    }
  return y;
}

TEST(DenseGrad, BackwardMatchesFiniteDifferencesForEveryActivation) {
  const int64_t rows = 3, I = 5, O = 4;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.7f);
  for (auto act : {DenseLayer::Activation::identity, DenseLayer::Activation::tanh, DenseLayer::Activation::relu,
                   DenseLayer::Activation::sigmoid, DenseLayer::Activation::gelu}) {
    for (bool bias : {true, false}) {
      DenseLayer d;
      d.in_features = I;
      d.out_features = O;
      d.activation = act;
      d.weight.resize(size_t(O * I));
      for (float& w : d.weight) w = normal(rng);
      if (bias) {
        d.bias.resize(size_t(O));
        for (float& b : d.bias) b = normal(rng);
      }
      std::vector<float> x(size_t(rows * I)), dy(size_t(rows * O));
      for (float& v : x) v = normal(rng);
      for (float& v : dy) v = normal(rng);
      std::vector<float> dx(x.size()), dW(d.weight.size(), 0.0f), db(size_t(O), 0.0f);
      model::dense_backward(d, x.data(), rows, dy.data(), dx.data(), dW.data(), bias ? db.data() : nullptr);
      // The reference forward is the engine's (to its float rounding).
      std::vector<double> W(d.weight.begin(), d.weight.end()), b(d.bias.begin(), d.bias.end()), x64(x.begin(), x.end());
      std::vector<float> y(size_t(rows * O));
      d.forward(x.data(), rows, y.data());
      const auto y64 = forward64(d, W, b, x64, rows);
      for (size_t i = 0; i < y.size(); ++i) ASSERT_FLOAT_EQ(y[i], float(y64[i]));
      auto loss = [&] {
        const auto out = forward64(d, W, b, x64, rows);
        double s = 0;
        for (size_t i = 0; i < out.size(); ++i) s += out[i] * double(dy[i]);
        return s;
      };
      // Central differences in double: O(h²) truncation, ~1e-16 / h rounding.
      const double h = 1e-5;
      double worst = 0;
      auto check = [&](double& param, float analytic) {
        const double keep = param;
        param = keep + h;
        const double up = loss();
        param = keep - h;
        const double down = loss();
        param = keep;
        const double numeric = (up - down) / (2.0 * h);
        worst = std::max(worst, std::abs(numeric - double(analytic)) / (1e-6 + std::abs(numeric)));
      };
      for (size_t i = 0; i < W.size(); ++i) check(W[i], dW[i]);
      for (size_t i = 0; i < b.size(); ++i) check(b[i], db[i]);
      for (size_t i = 0; i < x64.size(); ++i) check(x64[i], dx[i]);
      std::printf("[ measured ] activation %d bias %d: worst |fd - analytic| / (1e-6 + |fd|) = %.2g\n", int(act),
                  int(bias), worst);
      EXPECT_LT(worst, 1e-5) << int(act) << " " << bias;  // measured at most 1.6e-6: float gradients
    }
  }
}

TEST(DenseGrad, WeightGradientsAccumulate) {
  DenseLayer d;
  d.in_features = 2;
  d.out_features = 1;
  d.activation = DenseLayer::Activation::identity;
  d.weight = {0.5f, -1.0f};
  d.bias = {0.25f};
  const std::vector<float> x{2.0f, 3.0f}, dy{1.5f};
  std::vector<float> dW{1.0f, 1.0f}, db{1.0f}, dx(2);
  model::dense_backward(d, x.data(), 1, dy.data(), dx.data(), dW.data(), db.data());
  // Identity: dW = dy·x added to what was there, db = dy, dx = dy·W (overwritten).
  EXPECT_FLOAT_EQ(dW[0], 1.0f + 3.0f);
  EXPECT_FLOAT_EQ(dW[1], 1.0f + 4.5f);
  EXPECT_FLOAT_EQ(db[0], 2.5f);
  EXPECT_FLOAT_EQ(dx[0], 0.75f);
  EXPECT_FLOAT_EQ(dx[1], -1.5f);
}

}  // namespace
