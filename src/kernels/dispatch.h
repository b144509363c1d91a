// Shared by the dispatch files (kernels/<op>.cpp): the one place that knows whether this
// build has the CUDA backend. Internal; not part of any op-family header.
//
//   switch (ctx.device) {
//     case Device::cpu:
//       return cpu::op(args...);
//     case Device::cuda:
//       RC_CUDA_RETURN(op, args..., ctx.stream);
//   }
//
// With RC_WITH_CUDA, RC_CUDA_RETURN returns cuda::op(args...); without it, it throws
// Errc::unsupported naming the op (the arguments are not evaluated), so no dispatch file
// repeats an #if RC_WITH_CUDA branch.
//
// Each dispatch function spells this switch out after its own checks, so the `duplicates` tool
// pairs neighbouring ones by shape (e.g. matmul.cpp's three products): a deliberate exception.
// What differs between them (the checks, the CPU and CUDA argument lists) is the content, and
// the switch over Device keeps -Wswitch naming every function to update when a device is added.
#pragma once

#include "core/check.h"
#if RC_WITH_CUDA
#include "kernels/cuda/cuda_kernels.h"
#endif

namespace rc::kernels::detail {

[[noreturn]] inline void no_cuda(const char* op) {
  RC_THROW(Errc::unsupported, op,
           ": Device::cuda has no kernel in this build"
           "\nHINT: this build has no CUDA backend; rebuild with -DRC_WITH_CUDA=ON or run on the CPU");
}

}  // namespace rc::kernels::detail

#if RC_WITH_CUDA
#define RC_CUDA_RETURN(op, ...) return ::rc::kernels::cuda::op(__VA_ARGS__)
#else
#define RC_CUDA_RETURN(op, ...) ::rc::kernels::detail::no_cuda(#op)
#endif
