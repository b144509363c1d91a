// CPU dense products.  With oneDNN (RC_WITH_ONEDNN) every product goes to onednn_matmul.cpp;
// the loops here are the fallback without it (or when oneDNN has no kernel for a case, the
// "unimplemented" status of onednn_policy.h; any other oneDNN failure throws Errc::device): blocked only by
// rows, OpenMP over rows, bf16 by rounding each operand as it is read.
#include <cstdint>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/onednn_matmul.h"
#include "tensor/bf16.h"

namespace rc::kernels::cpu {

namespace {

inline float round_bf16(float v) noexcept { return bf16_to_f32(f32_to_bf16(v)); }

template <bool kBf16>
inline float rd(float v) noexcept {
  if constexpr (kBf16) return round_bf16(v);
  return v;
}

template <bool kBf16>
void fallback_nt(float* y, const float* x, const float* w, const float* bias, int64_t M, int64_t N,
                 int64_t K) noexcept {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += rd<kBf16>(x[m * K + k]) * rd<kBf16>(w[n * K + k]);
      y[m * N + n] = acc + (bias ? bias[n] : 0.0f);
    }
}

// y(M,N) (+)= A·B with A(m,k) = a[m·sam + k·sak] and B(k, :) a contiguous row of b.
template <bool kBf16>
void fallback_rows(float* y, const float* a, int64_t sam, int64_t sak, const float* b, int64_t M, int64_t N, int64_t K,
                   bool accumulate) noexcept {
#pragma omp parallel for schedule(static)
  for (int64_t m = 0; m < M; ++m) {
    float* ym = y + m * N;
    if (!accumulate)
      for (int64_t n = 0; n < N; ++n) ym[n] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const float av = rd<kBf16>(a[m * sam + k * sak]);
      const float* bk = b + k * N;
      for (int64_t n = 0; n < N; ++n) ym[n] += av * rd<kBf16>(bk[n]);
    }
  }
}

}  // namespace

void matmul_nt(float* y, const float* x, const float* w, const float* bias, int64_t M, int64_t N, int64_t K,
               MatmulPrecision prec) {
  if (M == 0 || N == 0) return;
#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN
  if (K > 0 && onednn::matmul(y, {x, K, 1}, {w, 1, K}, bias, M, N, K, false, prec)) return;
#endif
  if (prec == MatmulPrecision::bf16)
    fallback_nt<true>(y, x, w, bias, M, N, K);
  else
    fallback_nt<false>(y, x, w, bias, M, N, K);
}

void matmul_nn(float* y, const float* x, const float* w, int64_t M, int64_t N, int64_t K, bool accumulate,
               MatmulPrecision prec) {
  if (M == 0 || N == 0) return;
#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN
  if (K > 0 && onednn::matmul(y, {x, K, 1}, {w, N, 1}, nullptr, M, N, K, accumulate, prec)) return;
#endif
  if (prec == MatmulPrecision::bf16)
    fallback_rows<true>(y, x, K, 1, w, M, N, K, accumulate);
  else
    fallback_rows<false>(y, x, K, 1, w, M, N, K, accumulate);
}

void matmul_tn(float* y, const float* a, const float* b, int64_t M, int64_t N, int64_t K, bool accumulate,
               MatmulPrecision prec) {
  if (M == 0 || N == 0) return;
#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN
  if (K > 0 && onednn::matmul(y, {a, 1, M}, {b, N, 1}, nullptr, M, N, K, accumulate, prec)) return;
#endif
  if (prec == MatmulPrecision::bf16)
    fallback_rows<true>(y, a, 1, M, b, M, N, K, accumulate);
  else
    fallback_rows<false>(y, a, 1, M, b, M, N, K, accumulate);
}

void bias_backward(float* db, const float* dy, int64_t M, int64_t N) noexcept {
  // Columns split between threads: no shared accumulators, fixed summation order.
  constexpr int64_t kCols = 64;
#pragma omp parallel for schedule(static)
  for (int64_t n0 = 0; n0 < N; n0 += kCols) {
    const int64_t w = n0 + kCols < N ? kCols : N - n0;
    float acc[kCols] = {};  // summed locally, added once: db = old + this call's sum
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < w; ++n) acc[n] += dy[m * N + n0 + n];
    for (int64_t n = 0; n < w; ++n) db[n0 + n] += acc[n];
  }
}

}  // namespace rc::kernels::cpu
