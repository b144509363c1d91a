// aarch64 feature detection behind rc::cpu_features() (device/cpu_isa.cpp): Linux reports the
// CPU's extensions in the auxiliary vector (AT_HWCAP, AT_HWCAP2), which is what the kernel
// allows user space to run — the right question, unlike reading ID registers.
#pragma once

#include "device/cpu_isa.h"

namespace rc {

#if defined(__aarch64__)
void detect_arm(CpuFeatures& f) noexcept;
// sve when the CPU has SVE; else neon_bf16 when it has BF16 and I8MM; else neon.
CpuIsa detected_isa_arm(const CpuFeatures& f) noexcept;
#endif

}  // namespace rc
