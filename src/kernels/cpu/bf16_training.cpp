// bf16_training.h. No SIMD of its own: the conversions go through convert_f32_to_bf16 and the
// update through adamw_step (each already AVX-512 / NEON / generic), called on cache-sized pieces.
#include "kernels/cpu/bf16_training.h"

#include <vector>

#include "kernels/cpu/bf16_convert.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/profile.h"

namespace rc::kernels::cpu {

namespace {
// x when given, else x16 widened to fp32 (exact) in per-thread scratch: for the GEMMs that
// read fp32 (fp32 precision, no oneDNN, or oneDNN refusing the case).
const float* f32_rows(const float* x, const uint16_t* x16, int64_t n) {
  if (x) return x;
  thread_local std::vector<float> wide;
  if (int64_t(wide.size()) < n) wide.resize(size_t(n));
  const ProfileScope conv(current_profiler(), OpFamily::convert);
  convert_bf16_to_f32(wide.data(), x16, n);
  return wide.data();
}
}  // namespace

void matmul_nt_w16(float* y, const float* x, const float* w, const uint16_t* w16, const float* bias, int64_t M,
                   int64_t N, int64_t K, MatmulPrecision prec, const uint16_t* x16) {
#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN && defined(__x86_64__)
  if ((w16 || x16) && prec == MatmulPrecision::bf16 && M > 0 && N > 0 && K > 0 &&
      onednn::matmul(y, {x, K, 1}, {w, 1, K}, bias, M, N, K, false, prec, x16, w16))
    return;
#endif
  (void)w16;
  matmul_nt(y, f32_rows(x, x16, M * K), w, bias, M, N, K, prec);
}

void linear_backward(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w,
                     const uint16_t* w16, int64_t M, int64_t N, int64_t K, bool accumulate_dx, MatmulPrecision prec,
                     const uint16_t* x16) {
#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN && defined(__x86_64__)
  if (prec == MatmulPrecision::bf16 && M > 0 && N > 0 && K > 0) {
    thread_local std::vector<uint16_t> dy16, x16_own;
    if (int64_t(dy16.size()) < M * N) dy16.resize(size_t(M * N));
    {
      const ProfileScope conv(current_profiler(), OpFamily::convert);
      convert_f32_to_bf16(dy16.data(), dy, M * N);
      if (!x16) {
        if (int64_t(x16_own.size()) < M * K) x16_own.resize(size_t(M * K));
        convert_f32_to_bf16(x16_own.data(), x, M * K);
        x16 = x16_own.data();
      }
    }
    // The bias gradient stays a pass of its own: summing the columns inside the conversion
    // (bias_backward's order, so bitwise) measured 1.3-1.7x slower than the two passes
    // (docs/benchmarks.md, issue 15).
    if (db) {
      const ProfileScope bias(current_profiler(), OpFamily::bias_grad);
      bias_backward(db, dy, M, N);
    }
    // dw(N,K) += dy(M,N)ᵀ·x(M,K)  (matmul_tn's strides), then dx(M,K) (+)= dy·w(N,K) (matmul_nn's).
    if (!onednn::matmul(dw, {dy, 1, N}, {x, K, 1}, nullptr, N, K, M, true, prec, dy16.data(), x16))
      matmul_tn(dw, dy, f32_rows(x, x16, M * K), N, K, M, true, prec);
    if (!onednn::matmul(dx, {dy, N, 1}, {w, K, 1}, nullptr, M, K, N, accumulate_dx, prec, dy16.data(), w16))
      matmul_nn(dx, dy, w, M, K, N, accumulate_dx, prec);
    return;
  }
#endif
  (void)w16;
  matmul_tn(dw, dy, f32_rows(x, x16, M * K), N, K, M, true, prec);
  if (db) {
    const ProfileScope bias(current_profiler(), OpFamily::bias_grad);
    bias_backward(db, dy, M, N);
  }
  matmul_nn(dx, dy, w, M, K, N, accumulate_dx, prec);
}

void gelu_erf_forward_bf16(uint16_t* y, const float* x, int64_t n) noexcept {
  // Pieces of 4 Ki elements: the fp32 GELU (16 KiB) is converted while in L1. The piece calls
  // run serially inside this one parallel region (both parallelise only from 16 Ki elements).
  constexpr int64_t kPiece = 1 << 12;
  const int64_t pieces = (n + kPiece - 1) / kPiece;
#pragma omp parallel for schedule(static) if (n >= (1 << 14))
  for (int64_t p = 0; p < pieces; ++p) {
    alignas(64) float buf[kPiece];
    const int64_t i0 = p * kPiece, len = n - i0 < kPiece ? n - i0 : kPiece;
    gelu_erf_forward(buf, x + i0, len);
    convert_f32_to_bf16(y + i0, buf, len);
  }
}

void adamw_step_bf16_copy(float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                          uint16_t* const* copies, int64_t num_segments, const AdamWHyper& hyper) noexcept {
  // Pieces of 256 Ki parameters: p of a piece (1 MiB) is still in cache for the conversion
  // that follows. Each call is one parallel region over the piece (adamw_step and the
  // converter parallelise from 2^15 / 2^16 elements): no nested regions.
  constexpr int64_t kPiece = 1 << 18;
  for (int64_t s = 0; s < num_segments; ++s) {
    const AdamWSegment seg = segments[s];
    if (!copies[s]) {
      adamw_step(params, grads, m, v, &seg, 1, hyper);
      continue;
    }
    for (int64_t i0 = 0; i0 < seg.n; i0 += kPiece) {
      const int64_t len = i0 + kPiece < seg.n ? kPiece : seg.n - i0;
      const AdamWSegment piece{seg.offset + i0, len, seg.decay};
      adamw_step(params, grads, m, v, &piece, 1, hyper);
      convert_f32_to_bf16(copies[s] + i0, params + seg.offset + i0, len);
    }
  }
}

}  // namespace rc::kernels::cpu
