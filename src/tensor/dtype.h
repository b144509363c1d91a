// Element types that cross layer boundaries. Kernels take raw pointers; this enum is
// what files, parameter tables and dispatch talk about.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace rc {

enum class DType { f32, f16, bf16, f64, i64, i32, i16, i8, u8, boolean };

size_t dtype_size(DType dtype) noexcept;
std::string_view dtype_name(DType dtype) noexcept;  // safetensors spelling: "F32", "BF16", ...

}  // namespace rc
