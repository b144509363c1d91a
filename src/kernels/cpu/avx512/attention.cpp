// AVX-512 attention core: the body shared with the other vectorised path (kernels/cpu/simd_attention.inc,
// micro-GEMM tiles of 4 × 64 columns) on this TU's vector operations (avx512/vec_math.h), and the entry
// points shared with every CPU path (kernels/cpu/attention_entry.inc).
#if defined(__x86_64__)

// GCC 12 flags the _mm512_undefined_ps() inside its own masked intrinsics (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/avx512/avx512_kernels.h"
#include "kernels/cpu/avx512/vec_math.h"
#include "kernels/dropout.h"

namespace rc::kernels::cpu::avx512 {

namespace {

#include "kernels/cpu/simd_attention.inc"

}  // namespace

#include "kernels/cpu/attention_entry.inc"

}  // namespace rc::kernels::cpu::avx512

#endif  // __x86_64__
