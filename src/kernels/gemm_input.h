// Activation element types at a GEMM's edges, and the GEMM input an op before the GEMM may write
// (so that no separate conversion or quantisation pass runs between the two).
#pragma once

#include <cstdint>

namespace rc::kernels {

// Element type of an activation buffer handed to linear_forward (x or y).
//   f32, bf16 - plain (M, K) rows (bf16: round to nearest even);
//   s8        - input only: (M, K) int8 rows quantised per row as quantize_rows_s8 writes them,
//               with their per-row fp32 scales beside them (the int8 GEMM's own input format).
enum class ActType { f32, bf16, s8 };

// Where an op that produces a GEMM's input (the LayerNorm) writes the copy the GEMM reads, in
// the GEMM's input type: f32 = none (the GEMM reads the op's fp32 output); bf16 = data is
// (N, C) bf16; s8 = data is (N, C) int8 and row_scale (N) its per-row scales.
struct GemmInput {
  void* data = nullptr;
  ActType type = ActType::f32;
  float* row_scale = nullptr;  // s8 only

  bool none() const noexcept { return type == ActType::f32; }
};

}  // namespace rc::kernels
