// Scalar oracle for the attention core (attention.h): one (b, h, i) query row at a time,
// over the real length L = seq_lens[b] only, in double.  Padding rows are written as 0.
#include <cmath>
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/dropout.h"

namespace rc::kernels::ref {

namespace {
// Kept-and-scaled factor of attention-dropout for probs element (b, h, i, j) (attention.h).
double drop_factor(float p, uint64_t seed, uint64_t row0, int64_t b, int64_t h, int64_t i, int64_t j) {
  if (p <= 0.0f) return 1.0;
  const uint64_t row_seed = rng::dropout_row_seed(seed, row0 + uint64_t(b));
  return dropout_uniform(row_seed, rng::attention_dropout_index(h, i, j)) >= p ? 1.0 / (1.0 - double(p)) : 0.0;
}
}  // namespace

void attention_forward(float* out, float* probs, const float* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                       int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0) {
  const int64_t C = H * D, C3 = 3 * C;
  const double scale = 1.0 / std::sqrt(double(D));
  double* row = new double[T > 0 ? T : 1];
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = seq_lens[b];
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        float* o = out + (b * T + i) * C + h * D;
        float* pr = probs ? probs + ((b * H + h) * T + i) * T : nullptr;
        if (pr)
          for (int64_t j = 0; j < T; ++j) pr[j] = 0.0f;
        if (i >= L) {
          for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
          continue;
        }
        const float* q = qkv + (b * T + i) * C3 + h * D;
        double mx = -INFINITY;
        for (int64_t j = 0; j < L; ++j) {
          const float* k = qkv + (b * T + j) * C3 + C + h * D;
          double s = 0;
          for (int64_t d = 0; d < D; ++d) s += double(q[d]) * double(k[d]);
          row[j] = s * scale;
          mx = row[j] > mx ? row[j] : mx;
        }
        double sum = 0;
        for (int64_t j = 0; j < L; ++j) sum += (row[j] = std::exp(row[j] - mx));
        for (int64_t j = 0; j < L; ++j) {
          row[j] /= sum;
          if (pr) pr[j] = float(row[j]);
        }
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < L; ++j)
            acc += row[j] * drop_factor(dropout_p, seed, row0, b, h, i, j) *
                   double(qkv[(b * T + j) * C3 + 2 * C + h * D + d]);
          o[d] = float(acc);
        }
      }
  }
  delete[] row;
}

// With P = probs, P' = dropout(P): out = P'·V, so dV = P'ᵀ·dout, dP' = dout·Vᵀ,
// dP = dP'·mask/(1-p), dS = P ⊙ (dP - rowsum(P ⊙ dP)), dQ = dS·K/√D, dK = dSᵀ·Q/√D.
void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* probs, const int32_t* seq_lens,
                        int64_t B, int64_t T, int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0) {
  const int64_t C = H * D, C3 = 3 * C;
  const double scale = 1.0 / std::sqrt(double(D));
  for (int64_t i = 0; i < B * T * C3; ++i) dqkv[i] = 0.0f;
  double* dp = new double[T > 0 ? T : 1];
  double* acc = new double[D > 0 ? D : 1];
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = seq_lens[b];
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        const float* pr = probs + ((b * H + h) * T + i) * T;
        const float* dout_i = dout + (b * T + i) * C + h * D;
        const float* q = qkv + (b * T + i) * C3 + h * D;
        double dot = 0;
        for (int64_t j = 0; j < L; ++j) {
          const float* v = qkv + (b * T + j) * C3 + 2 * C + h * D;
          const double f = drop_factor(dropout_p, seed, row0, b, h, i, j);
          double s = 0;
          for (int64_t d = 0; d < D; ++d) s += double(dout_i[d]) * double(v[d]);
          dp[j] = s * f;
          dot += double(pr[j]) * dp[j];
          float* dv = dqkv + (b * T + j) * C3 + 2 * C + h * D;
          for (int64_t d = 0; d < D; ++d) dv[d] = float(dv[d] + double(pr[j]) * f * double(dout_i[d]));
        }
        for (int64_t d = 0; d < D; ++d) acc[d] = 0;
        for (int64_t j = 0; j < L; ++j) {
          const double ds = double(pr[j]) * (dp[j] - dot) * scale;
          const float* k = qkv + (b * T + j) * C3 + C + h * D;
          float* dk = dqkv + (b * T + j) * C3 + C + h * D;
          for (int64_t d = 0; d < D; ++d) {
            acc[d] += ds * double(k[d]);
            dk[d] = float(dk[d] + ds * double(q[d]));
          }
        }
        float* dq = dqkv + (b * T + i) * C3 + h * D;
        for (int64_t d = 0; d < D; ++d) dq[d] = float(acc[d]);
      }
  }
  delete[] dp;
  delete[] acc;
}

}  // namespace rc::kernels::ref
