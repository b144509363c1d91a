// Dropout with a counter-based RNG (core/counter_rng.h). x is (rows, cols): one row per
// sample (cols = T·C for hidden states, C for a pooled vector). Element (r, k) is kept iff
//   uniform24(dropout_row_seed(seed, row0 + r), k) >= p
// and kept values are scaled by 1/(1-p). `seed` is the site's seed for the step, row0 + r the
// sample's GLOBAL index in the step's batch and k = t·C + c its place in the sample, so a
// sample's mask is the same wherever it sits in whichever micro-batch, on any rank count,
// padded to any length T, on any thread count and device. The mask is never stored: backward
// recomputes it.
#pragma once

#include <cstdint>

#include "core/counter_rng.h"
#include "kernels/exec_ctx.h"

namespace rc::kernels {

// The dropout draw of element i of stream `seed`, in [0, 1) with 24 bits.
inline float dropout_uniform(uint64_t seed, uint64_t i) noexcept { return rng::uniform24(seed, i); }

// y = x · keep / (1-p).  p == 0 copies.  OVERWRITES y (may alias x).
void dropout_forward(const ExecCtx& ctx, float* y, const float* x, int64_t rows, int64_t cols, float p, uint64_t seed,
                     uint64_t row0);
// dx = dy · keep / (1-p), the same mask.  OVERWRITES dx (may alias dy).
void dropout_backward(const ExecCtx& ctx, float* dx, const float* dy, int64_t rows, int64_t cols, float p,
                      uint64_t seed, uint64_t row0);
// A flat tensor of n elements: one row, row 0.
inline void dropout_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n, float p, uint64_t seed) {
  dropout_forward(ctx, y, x, 1, n, p, seed, 0);
}
inline void dropout_backward(const ExecCtx& ctx, float* dx, const float* dy, int64_t n, float p, uint64_t seed) {
  dropout_backward(ctx, dx, dy, 1, n, p, seed, 0);
}

namespace ref {
void dropout_forward(float* y, const float* x, int64_t rows, int64_t cols, float p, uint64_t seed, uint64_t row0);
inline void dropout_forward(float* y, const float* x, int64_t n, float p, uint64_t seed) {
  dropout_forward(y, x, 1, n, p, seed, 0);
}
}  // namespace ref

}  // namespace rc::kernels
