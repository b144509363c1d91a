// CPU attention core.  One task per (b, h), over the real length L = seq_lens[b] only: padding
// costs nothing but zero-filling.  Every head writes its own columns of out / dqkv, so tasks
// never share memory.  Products are fp32 whatever MatmulPrecision says (they are small,
// ≤ 11% of the FLOPs at T = 512, and keep softmax accurate).
//
// Scratch: one row of T floats per thread (thread_local, grown on first use of a larger T),
// the only allocation here.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/avx2/avx2_kernels.h"
#include "kernels/cpu/avx512/avx512_kernels.h"
#include "kernels/cpu/neon/neon_kernels.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dropout.h"

namespace rc::kernels::cpu {

namespace {

float* scratch_row(int64_t T) noexcept {
  thread_local std::vector<float> buf;
  if (int64_t(buf.size()) < T) buf.resize(size_t(T));
  return buf.data();
}

// The dropout factor of probs element (b, h, i, j): 0 or 1/(1-p).
// row_seed: dropout_row_seed(seed, row0 + b) (attention.h).
inline float drop_factor(float p, float inv_keep, uint64_t row_seed, int64_t h, int64_t i, int64_t j) noexcept {
  return dropout_uniform(row_seed, rng::attention_dropout_index(h, i, j)) >= p ? inv_keep : 0.0f;
}

void forward_head(float* out, float* probs, const float* qkv, int64_t b, int64_t h, int64_t L, int64_t T, int64_t H,
                  int64_t D, float dropout_p, uint64_t row_seed) noexcept {
  const int64_t C = H * D, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(float(D));
  const float inv_keep = dropout_p > 0.0f ? 1.0f / (1.0f - dropout_p) : 1.0f;
  const float* kbase = qkv + b * T * C3 + C + h * D;
  const float* vbase = qkv + b * T * C3 + 2 * C + h * D;
  for (int64_t i = 0; i < T; ++i) {
    float* o = out + (b * T + i) * C + h * D;
    float* pr = probs ? probs + ((b * H + h) * T + i) * T : nullptr;
    if (i >= L) {
      for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
      if (pr)
        for (int64_t j = 0; j < T; ++j) pr[j] = 0.0f;
      continue;
    }
    float* row = pr ? pr : scratch_row(T);
    const float* q = qkv + (b * T + i) * C3 + h * D;
    float mx = -INFINITY;
    for (int64_t j = 0; j < L; ++j) {
      const float* k = kbase + j * C3;
      float s = 0;
      for (int64_t d = 0; d < D; ++d) s += q[d] * k[d];
      row[j] = s * scale;
      mx = row[j] > mx ? row[j] : mx;
    }
    float sum = 0;
    for (int64_t j = 0; j < L; ++j) sum += (row[j] = std::exp(row[j] - mx));
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < L; ++j) row[j] *= inv;
    if (pr)
      for (int64_t j = L; j < T; ++j) pr[j] = 0.0f;
    for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
    for (int64_t j = 0; j < L; ++j) {
      const float pj = dropout_p > 0.0f ? row[j] * drop_factor(dropout_p, inv_keep, row_seed, h, i, j) : row[j];
      const float* v = vbase + j * C3;
      for (int64_t d = 0; d < D; ++d) o[d] += pj * v[d];
    }
  }
}

// The loops of ref::attention_backward in float, per (b, h) task (a `duplicates` shape pair, on
// purpose: the ref twin is the independent oracle the tests compare against).
void backward_head(float* dqkv, const float* dout, const float* qkv, const float* probs, int64_t b, int64_t h,
                   int64_t L, int64_t T, int64_t H, int64_t D, float dropout_p, uint64_t row_seed) noexcept {
  const int64_t C = H * D, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(float(D));
  const float inv_keep = dropout_p > 0.0f ? 1.0f / (1.0f - dropout_p) : 1.0f;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t part = 0; part < 3; ++part) {
      float* z = dqkv + (b * T + t) * C3 + part * C + h * D;
      for (int64_t d = 0; d < D; ++d) z[d] = 0.0f;
    }
  float* dp = scratch_row(T);
  for (int64_t i = 0; i < L; ++i) {
    const float* pr = probs + ((b * H + h) * T + i) * T;
    const float* go = dout + (b * T + i) * C + h * D;
    const float* q = qkv + (b * T + i) * C3 + h * D;
    float dot = 0;
    for (int64_t j = 0; j < L; ++j) {
      const float f = dropout_p > 0.0f ? drop_factor(dropout_p, inv_keep, row_seed, h, i, j) : 1.0f;
      const float* v = qkv + (b * T + j) * C3 + 2 * C + h * D;
      float* dv = dqkv + (b * T + j) * C3 + 2 * C + h * D;
      float s = 0;
      for (int64_t d = 0; d < D; ++d) s += go[d] * v[d];
      dp[j] = s * f;
      dot += pr[j] * dp[j];
      const float pf = pr[j] * f;
      for (int64_t d = 0; d < D; ++d) dv[d] += pf * go[d];
    }
    float* dq = dqkv + (b * T + i) * C3 + h * D;
    for (int64_t j = 0; j < L; ++j) {
      const float ds = pr[j] * (dp[j] - dot) * scale;
      const float* k = qkv + (b * T + j) * C3 + C + h * D;
      float* dk = dqkv + (b * T + j) * C3 + C + h * D;
      for (int64_t d = 0; d < D; ++d) {
        dq[d] += ds * k[d];
        dk[d] += ds * q[d];
      }
    }
  }
}

}  // namespace

namespace generic {

#include "kernels/cpu/attention_entry.inc"

}  // namespace generic

void attention_forward(float* out, float* probs, const float* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                       int64_t H, int64_t D, float dropout_p, uint64_t seed, uint64_t row0) noexcept {
#if defined(__x86_64__)
  if (avx512::enabled()) return avx512::attention_forward(out, probs, qkv, seq_lens, B, T, H, D, dropout_p, seed, row0);
  if (avx2::enabled()) return avx2::attention_forward(out, probs, qkv, seq_lens, B, T, H, D, dropout_p, seed, row0);
#elif defined(__aarch64__)
  if (neon::enabled()) return neon::attention_forward(out, probs, qkv, seq_lens, B, T, H, D, dropout_p, seed, row0);
#endif
  generic::attention_forward(out, probs, qkv, seq_lens, B, T, H, D, dropout_p, seed, row0);
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* probs, const int32_t* seq_lens,
                        int64_t B, int64_t T, int64_t H, int64_t D, float dropout_p, uint64_t seed,
                        uint64_t row0) noexcept {
#if defined(__x86_64__)
  if (avx512::enabled())
    return avx512::attention_backward(dqkv, dout, qkv, probs, seq_lens, B, T, H, D, dropout_p, seed, row0);
  if (avx2::enabled())
    return avx2::attention_backward(dqkv, dout, qkv, probs, seq_lens, B, T, H, D, dropout_p, seed, row0);
#elif defined(__aarch64__)
  if (neon::enabled())
    return neon::attention_backward(dqkv, dout, qkv, probs, seq_lens, B, T, H, D, dropout_p, seed, row0);
#endif
  generic::attention_backward(dqkv, dout, qkv, probs, seq_lens, B, T, H, D, dropout_p, seed, row0);
}

}  // namespace rc::kernels::cpu
