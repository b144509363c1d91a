// LayerNorm that also writes the next GEMM's input (layernorm.h, GemmInput): fused by blocking,
// not by a kernel of its own. Each block of rows runs the ISA LayerNorm and then the ISA
// quantiser / bf16 rounding on the same rows while they are still in the cores' L2, so the
// GEMM's separate pass over the whole fp32 activation (a DRAM round trip at 2048 × 768) goes,
// and no per-ISA copy of LayerNorm + quantisation exists to keep in step: the results are
// those of the two kernels run one after the other, bit for bit.
//
// Both kernels split rows between threads with schedule(static): on a block whose size is a
// multiple of the thread count each thread gets the same rows in both, i.e. rows in its own
// cache. (A single-pass kernel would save re-reading y from L2; the second pass is ~1/3 of
// the LayerNorm's own traffic and stays on-core, so blocking keeps most of the gain.)
#include <algorithm>
#include <cstdint>

#include <omp.h>

#include "kernels/cpu/bf16_convert.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/linear.h"

namespace rc::kernels::cpu {

void layernorm_gemm_input(float* y, float* sum, float* mean, float* rstd, const float* x, const float* residual,
                          const float* gamma, const float* beta, int64_t N, int64_t C, float eps,
                          const GemmInput& out) noexcept {
  // ~256 KB of fp32 rows per thread per block (a 1-2 MB L2 holds them with their int8 / bf16
  // copy), a multiple of the thread count, and at least the quantiser's and the bf16 rounding's
  // parallel thresholds (2^17 / 2^16 elements: below them they run on one thread, and the rows
  // would move between cores).
  const int64_t threads = std::max(1, omp_get_max_threads());
  const int64_t per_thread = std::max<int64_t>(1, (int64_t(256) << 10) / (C * int64_t(sizeof(float))));
  int64_t block = std::max(per_thread * threads, ((int64_t(1) << 17) + C - 1) / C);
  block = (block + threads - 1) / threads * threads;
  for (int64_t r0 = 0; r0 < N; r0 += block) {
    const int64_t n = std::min(block, N - r0);
    float* yb = y + r0 * C;
    float* mb = mean ? mean + r0 : nullptr;
    float* rb = rstd ? rstd + r0 : nullptr;
    if (residual)
      add_layernorm_forward(yb, sum + r0 * C, mb, rb, x + r0 * C, residual + r0 * C, gamma, beta, n, C, eps);
    else
      layernorm_forward(yb, mb, rb, x + r0 * C, gamma, beta, n, C, eps);
    if (out.type == ActType::s8)
      quantize_rows_s8(static_cast<int8_t*>(out.data) + r0 * C, out.row_scale + r0, yb, n, C);
    else
      convert_f32_to_bf16(static_cast<uint16_t*>(out.data) + r0 * C, yb, n * C);
  }
}

}  // namespace rc::kernels::cpu
