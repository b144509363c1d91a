// AVX2 attention core: the body shared with the other vectorised paths (kernels/cpu/simd_attention.inc,
// micro-GEMM tiles of 4 × 16 columns here) on this TU's vector operations (avx2/vec_math.h), and the
// entry points shared with every CPU path (kernels/cpu/attention_entry.inc).
#if defined(__x86_64__)

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/avx2/avx2_kernels.h"
#include "kernels/cpu/avx2/vec_math.h"
#include "kernels/dropout.h"

namespace rc::kernels::cpu::avx2 {

namespace {

#include "kernels/cpu/simd_attention.inc"

}  // namespace

#include "kernels/cpu/attention_entry.inc"

}  // namespace rc::kernels::cpu::avx2

#endif  // __x86_64__
