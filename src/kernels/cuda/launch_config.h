// Launch-configuration arithmetic shared by the .cu files, kept CUDA-free and header-only
// so it is unit-tested on CPU-only builds (tests/unit/test_cuda_host.cpp): grid sizes that
// never exceed the hardware limit, work splits that cover every element exactly once.
#pragma once

#include <algorithm>
#include <cstdint>

namespace rc::kernels::cuda {

constexpr int kWarp = 32;
constexpr int64_t kMaxGridX = 2147483647;  // gridDim.x limit (2^31 - 1)
constexpr int64_t kMaxGridY = 65535;

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// 1-D elementwise launch: `block` threads, one element per thread per grid-stride step,
// capped at `max_blocks` (enough to fill every SM several times; kernels grid-stride).
// Returns 0 blocks for n == 0: callers skip the launch (a 0-block launch is an error).
constexpr int64_t grid_1d(int64_t n, int block, int64_t max_blocks = 65536) {
  return n <= 0 ? 0 : std::min(ceil_div(n, block), std::min(max_blocks, kMaxGridX));
}

// Row kernels (LayerNorm, softmax, cross-entropy): one warp per row, `warps_per_block` rows
// per block.
constexpr int64_t grid_rows(int64_t rows, int warps_per_block) {
  return rows <= 0 ? 0 : ceil_div(rows, warps_per_block);
}

// Column reductions (bias and LayerNorm parameter gradients), deterministic in two stages:
// stage 1 sums row slabs of (N, C) into partial[P][C], stage 2 sums the P partials in fixed
// order into the output (+=). Chooses P so that stage 1 has roughly `target_blocks` blocks
// of 32 columns, each slab at least `min_rows` rows; P <= max_partials.
struct ColReducePlan {
  int64_t col_blocks = 0;  // ceil(C / 32)
  int64_t partials = 0;    // P: row slabs, gridDim.y of stage 1
  int64_t rows_per_partial = 0;
};
constexpr ColReducePlan plan_col_reduce(int64_t N, int64_t C, int64_t target_blocks = 528, int64_t min_rows = 32,
                                        int64_t max_partials = 256) {
  ColReducePlan p;
  if (N <= 0 || C <= 0) return p;
  p.col_blocks = ceil_div(C, kWarp);
  const int64_t want = std::max<int64_t>(1, target_blocks / p.col_blocks);
  const int64_t by_rows = std::max<int64_t>(1, N / min_rows);
  p.partials = std::min({want, by_rows, max_partials, kMaxGridY});
  p.rows_per_partial = ceil_div(N, p.partials);
  p.partials = ceil_div(N, p.rows_per_partial);  // no empty slab
  return p;
}

// Attention: one block per (b, h, tile of query rows), one warp per query row; scores of a
// warp's row live in shared memory (T floats per warp).
constexpr int kAttnWarps = 4;  // query rows per block
constexpr int64_t attention_smem_bytes(int64_t T, int64_t D) {
  return int64_t(kAttnWarps) * (T + D) * int64_t(sizeof(float));
}
constexpr int64_t kMaxSmemDefault = 48 * 1024;  // without opting into larger dynamic smem

// Multi-tensor AdamW: segments are passed by value in kernel parameters, at most this many
// per launch (parameter space is 4 KiB on the oldest supported path); longer tables are
// split into several launches.
constexpr int kAdamWMaxSegments = 96;

}  // namespace rc::kernels::cuda
