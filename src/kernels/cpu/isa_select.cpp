// Which hand-vectorised path the cpu:: kernels take: decided once from rc::cpu_isa(), so
// RC_CPU_ISA=generic forces the portable loops everywhere.
#include "device/cpu_isa.h"
#include "kernels/cpu/avx2/avx2_kernels.h"
#include "kernels/cpu/avx512/avx512_kernels.h"

namespace rc::kernels::cpu::avx512 {

bool supported() noexcept {
#if defined(__x86_64__)
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512bw && f.avx512vl && f.fma;
#else
  return false;
#endif
}

bool enabled() noexcept {
  static const bool on = supported() && cpu_isa() >= CpuIsa::avx512;
  return on;
}

}  // namespace rc::kernels::cpu::avx512

namespace rc::kernels::cpu::avx2 {

bool supported() noexcept {
#if defined(__x86_64__)
  const CpuFeatures& f = cpu_features();
  return f.avx2 && f.fma;
#else
  return false;
#endif
}

// Taken where AVX-512 is not (each dispatch asks avx512::enabled() first), or when RC_CPU_ISA=avx2
// caps an AVX-512 machine to it.
bool enabled() noexcept {
  static const bool on = supported() && cpu_isa() >= CpuIsa::avx2;
  return on;
}

}  // namespace rc::kernels::cpu::avx2
