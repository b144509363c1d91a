// Which CPU code path runs: detected once by cpuid, forced with RC_CPU_ISA for tests
// (generic|avx512|amx), and the thread count shared by every kernel (one OpenMP pool).
#pragma once

#include <string_view>

namespace rc {

enum class CpuIsa { generic, avx2, avx512, avx512_bf16, amx };

struct CpuFeatures {
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512vl = false;
  bool avx512_bf16 = false, avx512_vnni = false, amx_bf16 = false, amx_int8 = false;
};

const CpuFeatures& cpu_features() noexcept;
// The best path this CPU supports, lowered by RC_CPU_ISA when set (never raised above
// what the CPU has: asking for more gives a warning and the detected one).
CpuIsa cpu_isa() noexcept;
std::string_view cpu_isa_name(CpuIsa isa) noexcept;
bool cpu_has_bf16() noexcept;  // bf16 GEMMs are fast here (AVX512-BF16 or AMX)

// Physical cores (not hyper-threads): the default thread count.
int physical_cores() noexcept;
// Sets the size of the one OpenMP pool all kernels share; n <= 0 means physical cores.
void set_num_threads(int n);
int num_threads() noexcept;

}  // namespace rc
