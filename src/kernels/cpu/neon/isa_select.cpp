// Which aarch64 paths the cpu:: kernels take, decided once from rc::cpu_isa() (RC_CPU_ISA=generic
// forces the portable loops, neon keeps BF16/I8MM and SVE off, neon_bf16 keeps SVE off).
#if defined(__aarch64__)

#include "device/cpu_isa.h"
#include "kernels/cpu/neon/neon_kernels.h"

namespace rc::kernels::cpu {

bool neon::supported() noexcept { return cpu_features().asimd; }

bool neon::enabled() noexcept {
  static const bool on = [] {
    const CpuIsa isa = cpu_isa();
    return supported() && (isa == CpuIsa::neon || isa == CpuIsa::neon_bf16 || isa == CpuIsa::sve);
  }();
  return on;
}

bool neon::bf16_supported() noexcept { return cpu_features().arm_bf16 && cpu_features().i8mm; }
bool neon::bf16_enabled() noexcept { return cpu_use_arm_bf16_i8mm(); }

bool sve::supported() noexcept { return cpu_features().sve; }
bool sve::enabled() noexcept {
  static const bool on = supported() && cpu_isa() == CpuIsa::sve;
  return on;
}

}  // namespace rc::kernels::cpu

#endif  // __aarch64__
