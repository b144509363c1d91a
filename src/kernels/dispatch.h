// Shared by the dispatch files (kernels/<op>.cpp): the error for a device whose backend is
// not built.  Internal; not part of any op-family header.
#pragma once

#include "core/check.h"

namespace rc::kernels::detail {

[[noreturn]] inline void no_cuda(const char* op) {
  RC_THROW(Errc::unsupported, op, ": Device::cuda has no kernel in this build"
           "\nHINT: the CUDA backend (kernels/cuda) is not written yet; run with device cpu");
}

}  // namespace rc::kernels::detail
