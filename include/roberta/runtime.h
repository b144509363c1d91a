// Process-wide runtime settings the CLI and server may touch.
#pragma once

#include <string_view>

namespace rc {
// Sets the size of the one OpenMP pool all compute shares; n <= 0 means physical cores.
void set_num_threads(int n);
int num_threads() noexcept;
int physical_cores() noexcept;
}  // namespace rc
