// The one oneDNN error policy of the kernels (matmul and packed linear alike):
//   - a failure with status "unimplemented" (oneDNN has no kernel for this case on this CPU,
//     or under the RC_CPU_ISA cap) takes the documented fallback where the caller has one
//     (cpu::matmul_*'s portable loops, PackedLinear's plain-layout pack): one warning per
//     call site per process on the log (stderr by default), then the slow path, same math;
//   - anything else (out of memory, a bad descriptor, an execute failure), and
//     "unimplemented" where there is no fallback, throws rc::Error(Errc::device) with a
//     one-line message naming the op, the shape and oneDNN's status.
// No oneDNN types here: callers pass dnnl_status_t as an int.
#pragma once

#include <string_view>

namespace rc::kernels::cpu::onednn {

// dnnl_unimplemented in oneDNN's C API (dnnl_types.h); checked against it in onednn_matmul.cpp.
constexpr int kStatusUnimplemented = 3;

// Applies the policy to a failed oneDNN call at `where` (e.g. "matmul_nt M=32 N=768 K=768
// bf16"). Returns (after the one-time warning) only for "unimplemented" with can_fall_back;
// throws Errc::device otherwise. `detail` is oneDNN's message (may be empty).
void on_failure(std::string_view where, int status, std::string_view detail, bool can_fall_back);

// oneDNN's name for a status ("unimplemented", "out_of_memory", ...).
const char* status_name(int status) noexcept;

}  // namespace rc::kernels::cpu::onednn
