// Every hand-vectorised path this build has, as a table of what the dispatch calls when that
// path is chosen (rc::cpu_isa()), so that one test binary can check each of them against the
// reference, whichever path its own process dispatches to. Not used by the kernels themselves.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/optimizer.h"

namespace rc::kernels::cpu {

struct CpuPath {
  const char* name;  // an RC_CPU_ISA value: generic, avx512 (x86-64); neon, neon_bf16, sve (aarch64)
  bool runnable;     // this CPU can execute it
  void (*layernorm_forward)(float*, float*, float*, const float*, const float*, const float*, int64_t, int64_t,
                            float) noexcept;
  void (*add_layernorm_forward)(float*, float*, float*, float*, const float*, const float*, const float*, const float*,
                                int64_t, int64_t, float) noexcept;
  void (*layernorm_backward)(float*, float*, float*, const float*, const float*, const float*, const float*,
                             const float*, int64_t, int64_t) noexcept;
  void (*gelu_erf_forward)(float*, const float*, int64_t) noexcept;
  void (*gelu_erf_backward)(float*, const float*, const float*, int64_t) noexcept;
  void (*adamw_step)(float*, const float*, float*, float*, const AdamWSegment*, int64_t, const AdamWHyper&) noexcept;
  void (*attention_forward)(float*, float*, const float*, const int32_t*, int64_t, int64_t, int64_t, int64_t, float,
                            uint64_t, uint64_t) noexcept;
  void (*attention_backward)(float*, const float*, const float*, const float*, const int32_t*, int64_t, int64_t,
                             int64_t, int64_t, float, uint64_t, uint64_t) noexcept;
  void (*quantize_rows_s8)(int8_t*, float*, const float*, int64_t, int64_t) noexcept;
  void (*quantize_rows_s8_bf16)(int8_t*, float*, const uint16_t*, int64_t, int64_t) noexcept;
  void (*dequantize_rows)(float*, uint16_t*, const int32_t*, const float*, const float*, const float*, int64_t, int64_t,
                          bool) noexcept;
  void (*convert_f32_to_bf16)(uint16_t*, const float*, int64_t) noexcept;
};

// generic first, then this architecture's vectorised paths in increasing order.
const std::vector<CpuPath>& cpu_paths();
// The entry named `name`, or null when this build has no such path (another architecture's).
const CpuPath* find_cpu_path(std::string_view name);

}  // namespace rc::kernels::cpu
