// What every kernel call is told besides pointers and shapes: where it runs and how
// precise its GEMMs may be. Passed explicitly; there is no global device state.
// Memory for a context's device comes from alloc(): one Buffer per role (device/buffer.h).
#pragma once

#include <cstddef>
#include <string>

#include "device/buffer.h"

namespace rc::kernels {

using rc::Device;

// fp32: GEMMs in fp32. bf16: GEMM inputs rounded to bf16, fp32 accumulation and output
// (AMX / AVX512-BF16 through oneDNN, tensor cores on CUDA); everything outside GEMMs stays fp32.
enum class MatmulPrecision { fp32, bf16 };

class Profiler;  // profile.h

struct ExecCtx {
  Device device = Device::cpu;
  MatmulPrecision matmul_precision = MatmulPrecision::fp32;
  void* stream = nullptr;  // cudaStream_t on Device::cuda (null: the default stream)
  int device_index = 0;    // CUDA ordinal (cuda:N)
  // Per-op-family timing (profile.h), or null: off, one pointer test per op. CPU only.
  Profiler* profiler = nullptr;
};

// The context for a --device flag ("cpu", "cuda", "cuda:N", "auto"; device/device_choice.h):
// on CUDA the device is selected for this thread. fp32 GEMMs; callers choose bf16.
// Throws Errc::device (exit 4) when CUDA is asked for and there is none.
ExecCtx exec_ctx_for(const std::string& device);

// Makes the context's CUDA device the calling thread's current one (a no-op on the CPU). The
// CUDA runtime's current device is per thread, and a thread starts on device 0: every entry
// point that launches work (a forward, a training step) calls this first, so that a worker
// thread serving a model on cuda:N launches on device N, where its pointers live.
inline void use_device(const ExecCtx& ctx) { select_device(ctx.device, ctx.device_index); }

// Zero-filled memory on the context's device.
inline Buffer alloc(const ExecCtx& ctx, size_t bytes) { return Buffer::allocate(ctx.device, ctx.device_index, bytes); }
inline Buffer alloc_floats(const ExecCtx& ctx, int64_t n) { return alloc(ctx, size_t(n > 0 ? n : 0) * sizeof(float)); }
// The same, but on the CPU a large buffer's pages are only paid for when first touched: for
// workspaces sized for the largest call, of which small calls use a corner.
inline Buffer alloc_floats_lazy(const ExecCtx& ctx, int64_t n) {
  const size_t bytes = size_t(n > 0 ? n : 0) * sizeof(float);
  return ctx.device == Device::cpu ? Buffer::allocate_host_lazy(bytes) : alloc(ctx, bytes);
}

// Host ↔ the context's device.
inline void upload(const ExecCtx& ctx, void* dst, const void* host, size_t bytes) {
  copy_to(ctx.device, dst, host, bytes, ctx.stream);
}
inline void download(const ExecCtx& ctx, void* host, const void* src, size_t bytes) {
  copy_from(ctx.device, host, src, bytes, ctx.stream);
}

}  // namespace rc::kernels
