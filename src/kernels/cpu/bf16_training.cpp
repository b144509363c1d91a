// bf16_training.h. No SIMD of its own: the conversions go through convert_f32_to_bf16 and the
// update through adamw_step (each already AVX-512 / NEON / generic), called on cache-sized pieces.
#include "kernels/cpu/bf16_training.h"

#include <vector>

#include "kernels/cpu/bf16_convert.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/profile.h"

namespace rc::kernels::cpu {

void matmul_nt_w16(float* y, const float* x, const float* w, const uint16_t* w16, const float* bias, int64_t M,
                   int64_t N, int64_t K, MatmulPrecision prec) {
#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN && defined(__x86_64__)
  if (w16 && prec == MatmulPrecision::bf16 && M > 0 && N > 0 && K > 0 &&
      onednn::matmul(y, {x, K, 1}, {w, 1, K}, bias, M, N, K, false, prec, nullptr, w16))
    return;
#endif
  (void)w16;
  matmul_nt(y, x, w, bias, M, N, K, prec);
}

void linear_backward(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w,
                     const uint16_t* w16, int64_t M, int64_t N, int64_t K, bool accumulate_dx, MatmulPrecision prec) {
#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN && defined(__x86_64__)
  if (prec == MatmulPrecision::bf16 && M > 0 && N > 0 && K > 0) {
    thread_local std::vector<uint16_t> dy16, x16;
    if (int64_t(dy16.size()) < M * N) dy16.resize(size_t(M * N));
    if (int64_t(x16.size()) < M * K) x16.resize(size_t(M * K));
    {
      const ProfileScope conv(current_profiler(), OpFamily::convert);
      convert_f32_to_bf16(dy16.data(), dy, M * N);
      convert_f32_to_bf16(x16.data(), x, M * K);
    }
    // The bias gradient stays a pass of its own: summing the columns inside the conversion
    // (bias_backward's order, so bitwise) measured 1.3-1.7x slower than the two passes
    // (docs/benchmarks.md, issue 15).
    if (db) {
      const ProfileScope bias(current_profiler(), OpFamily::bias_grad);
      bias_backward(db, dy, M, N);
    }
    // dw(N,K) += dy(M,N)ᵀ·x(M,K)  (matmul_tn's strides), then dx(M,K) (+)= dy·w(N,K) (matmul_nn's).
    if (!onednn::matmul(dw, {dy, 1, N}, {x, K, 1}, nullptr, N, K, M, true, prec, dy16.data(), x16.data()))
      matmul_tn(dw, dy, x, N, K, M, true, prec);
    if (!onednn::matmul(dx, {dy, N, 1}, {w, K, 1}, nullptr, M, K, N, accumulate_dx, prec, dy16.data(), w16))
      matmul_nn(dx, dy, w, M, K, N, accumulate_dx, prec);
    return;
  }
#endif
  (void)w16;
  matmul_tn(dw, dy, x, N, K, M, true, prec);
  if (db) {
    const ProfileScope bias(current_profiler(), OpFamily::bias_grad);
    bias_backward(db, dy, M, N);
  }
  matmul_nn(dx, dy, w, M, K, N, accumulate_dx, prec);
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
