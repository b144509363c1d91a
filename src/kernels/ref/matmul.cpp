// Scalar fp32 oracles for the dense products (matmul.h): plain loops, double accumulation.
#include <cstdint>

#include "kernels/matmul.h"

namespace rc::kernels::ref {

// The three products are spelled out one by one (alike but for the indexing: a `duplicates`
// shape pair, on purpose): an oracle is read against its formula line by line.
void matmul_nt(float* y, const float* x, const float* w, const float* bias, int64_t M, int64_t N, int64_t K) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = bias ? double(bias[n]) : 0.0;
      for (int64_t k = 0; k < K; ++k) acc += double(x[m * K + k]) * double(w[n * K + k]);
      y[m * N + n] = float(acc);
    }
}

void matmul_nn(float* y, const float* x, const float* w, int64_t M, int64_t N, int64_t K, bool accumulate) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = accumulate ? double(y[m * N + n]) : 0.0;
      for (int64_t k = 0; k < K; ++k) acc += double(x[m * K + k]) * double(w[k * N + n]);
      y[m * N + n] = float(acc);
    }
}

void matmul_tn(float* y, const float* a, const float* b, int64_t M, int64_t N, int64_t K, bool accumulate) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = accumulate ? double(y[m * N + n]) : 0.0;
      for (int64_t k = 0; k < K; ++k) acc += double(a[k * M + m]) * double(b[k * N + n]);
      y[m * N + n] = float(acc);
    }
}

void bias_backward(float* db, const float* dy, int64_t M, int64_t N) {
  for (int64_t n = 0; n < N; ++n) {
    double acc = db[n];
    for (int64_t m = 0; m < M; ++m) acc += dy[m * N + n];
    db[n] = float(acc);
  }
}

}  // namespace rc::kernels::ref
