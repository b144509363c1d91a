// Shared by the dispatch files (kernels/<op>.cpp): the error for a device whose backend is
// not built.  Internal; not part of any op-family header.
#pragma once

#include "core/check.h"

namespace rc::kernels::detail {

[[noreturn]] inline void no_cuda(const char* op) {
  RC_THROW(Errc::unsupported, op,
           ": Device::cuda has no kernel in this build"
           "\nHINT: this build has no CUDA backend; rebuild with -DRC_WITH_CUDA=ON or run on the CPU");
}

}  // namespace rc::kernels::detail
