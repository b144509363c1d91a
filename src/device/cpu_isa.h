// Which CPU code path runs: detected once (cpuid on x86-64, getauxval on aarch64), forced with
// RC_CPU_ISA for tests (x86-64: generic|avx2|avx512|avx512_bf16|amx; aarch64:
// generic|neon|neon_bf16|sve), and the thread count shared by every kernel (one OpenMP pool).
#pragma once

#include <string_view>

// physical_cores, set_num_threads, num_threads (defined in device/cpu_isa.cpp): declared once,
// in the public header the CLI and server include.
#include "roberta/runtime.h"

namespace rc {

// Each architecture's paths in increasing order; generic is common to both. On aarch64:
// neon = Armv8.0 Advanced SIMD only; neon_bf16 = NEON plus BF16 and I8MM (BFMMLA, SMMLA: Armv8.6,
// Graviton3); sve = SVE kernels where they pay, with BF16/I8MM when the CPU has them too.
enum class CpuIsa { generic, avx2, avx512, avx512_bf16, amx, neon, neon_bf16, sve };

struct CpuFeatures {
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512vl = false;
  bool avx512_bf16 = false, avx512_vnni = false, amx_bf16 = false, amx_int8 = false;
  // aarch64, from getauxval(AT_HWCAP / AT_HWCAP2) (device/cpu_isa_arm.cpp).
  bool asimd = false, arm_bf16 = false, i8mm = false, sve = false, sve2 = false, sve_bf16 = false, sve_i8mm = false;
  int sve_bits = 0;  // SVE vector length in bits (0 without SVE): 256 on Graviton3
};

const CpuFeatures& cpu_features() noexcept;
// The best path this CPU supports, lowered by RC_CPU_ISA when set (never raised above
// what the CPU has: asking for more gives a warning and the detected one).
CpuIsa cpu_isa() noexcept;
std::string_view cpu_isa_name(CpuIsa isa) noexcept;
bool cpu_has_bf16() noexcept;  // bf16 GEMMs are fast here (AVX512-BF16, AMX, or Arm BF16 + I8MM)
// int8 GEMMs run on dot-product units here (AVX512-VNNI, AMX-INT8, or Arm I8MM); elsewhere
// they are exact but on the fp32 GEMM, no faster than fp32.
bool cpu_has_int8_dot() noexcept;
// aarch64: the chosen path may use BFMMLA/BFDOT and SMMLA (neon_bf16, or sve on a CPU with both).
bool cpu_use_arm_bf16_i8mm() noexcept;

}  // namespace rc
