// Process-wide runtime settings the CLI and server may touch.
#pragma once

#include <string_view>

namespace rc {
// Sets the size of the one OpenMP pool all compute (kernels included) shares; n <= 0 means
// physical cores. Defined in src/device/cpu_isa.cpp; device/cpu_isa.h includes this header.
void set_num_threads(int n);
int num_threads() noexcept;
// Physical cores (not hyper-threads): the default thread count.
int physical_cores() noexcept;
}  // namespace rc
