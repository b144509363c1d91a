// Attention on bf16 Q/K/V for inference with packed bf16 / int8 weights (issue 15): the qkv
// GEMM writes bf16, attention reads it and writes the bf16 input of the output projection, so
// neither side runs a conversion pass and the activations between them are half the bytes.
// Same layout and masking as attention.h (qkv (B, T, 3C), out (B, T, C), keys at
// t >= seq_lens[b] masked, padding query rows 0); no probs, no dropout (inference only).
// Precision: q·k and the softmax statistics in fp32; the probabilities are rounded to bf16
// for P·V (accumulated in fp32); out rounded to bf16. AVX512-BF16 dot products (vdpbf16ps)
// where the CPU has them, else portable loops with the same rounding. CPU only.
//
// Not wired into the model yet (issue 15): on the AVX512-BF16 Xeon without AMX it measured no
// faster than the fp32 AVX-512 attention (perf samples in the int8 bench: 10.7% vs 9.8%), as
// one vdpbf16ps does the multiply-adds of two FMAs at half their rate. The gain needs AMX
// tiles for Q·Kᵀ and P·V; this kernel is the bf16-input interface, its oracle and its tests.
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

// True when this CPU runs attention_forward_bf16 for head size D with bf16 dot products (the
// portable loops widen every element: slower than the fp32 attention they would replace).
bool attention_bf16_native(int64_t D) noexcept;

// OVERWRITES out.
void attention_forward_bf16(const ExecCtx& ctx, uint16_t* out, const uint16_t* qkv, const int32_t* seq_lens, int64_t B,
                            int64_t T, int64_t H, int64_t D);

namespace ref {
// The oracle: ref::attention_forward on the widened qkv, out rounded to bf16 (probabilities
// kept in fp32, so it also bounds the cost of their bf16 rounding).
void attention_forward_bf16(uint16_t* out, const uint16_t* qkv, const int32_t* seq_lens, int64_t B, int64_t T,
                            int64_t H, int64_t D);
}  // namespace ref

}  // namespace rc::kernels
