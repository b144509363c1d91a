// NEON attention core: the body shared with the other vectorised path (kernels/cpu/simd_attention.inc,
// micro-GEMM tiles of 4 × 16 columns) on this TU's vector operations (neon/vec_math.h), and the entry
// points shared with every CPU path (kernels/cpu/attention_entry.inc).
#if defined(__aarch64__)

#include <arm_neon.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/neon/neon_kernels.h"
#include "kernels/cpu/neon/vec_math.h"
#include "kernels/dropout.h"

namespace rc::kernels::cpu::neon {

namespace {

#include "kernels/cpu/simd_attention.inc"

}  // namespace

#include "kernels/cpu/attention_entry.inc"

}  // namespace rc::kernels::cpu::neon

#endif  // __aarch64__
