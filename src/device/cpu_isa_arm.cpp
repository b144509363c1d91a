// aarch64 feature detection (see cpu_isa_arm.h). Compiles to nothing elsewhere.
#include "device/cpu_isa_arm.h"

#if defined(__aarch64__)

#include <sys/auxv.h>
#include <sys/prctl.h>

namespace rc {

namespace {
// Bit numbers from the Linux UAPI (arch/arm64/include/uapi/asm/hwcap.h), spelled out because
// older libc headers lack the newer ones (HWCAP2_I8MM, HWCAP2_BF16 came with Linux 5.10).
constexpr unsigned long kHwcapAsimd = 1ul << 1;
constexpr unsigned long kHwcapSve = 1ul << 22;
constexpr unsigned long kHwcap2Sve2 = 1ul << 1;
constexpr unsigned long kHwcap2SveI8mm = 1ul << 9;
constexpr unsigned long kHwcap2SveBf16 = 1ul << 12;
constexpr unsigned long kHwcap2I8mm = 1ul << 13;
constexpr unsigned long kHwcap2Bf16 = 1ul << 14;
constexpr int kPrSveGetVl = 51;          // PR_SVE_GET_VL
constexpr int kPrSveVlLenMask = 0xffff;  // PR_SVE_VL_LEN_MASK: the length in bytes
}  // namespace

void detect_arm(CpuFeatures& f) noexcept {
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  f.asimd = hw & kHwcapAsimd;
  f.sve = hw & kHwcapSve;
  f.sve2 = hw2 & kHwcap2Sve2;
  f.arm_bf16 = hw2 & kHwcap2Bf16;
  f.i8mm = hw2 & kHwcap2I8mm;
  f.sve_bf16 = hw2 & kHwcap2SveBf16;
  f.sve_i8mm = hw2 & kHwcap2SveI8mm;
  if (f.sve) {
    const int vl = prctl(kPrSveGetVl, 0, 0, 0, 0);
    f.sve_bits = vl > 0 ? (vl & kPrSveVlLenMask) * 8 : 0;
    if (f.sve_bits == 0) f.sve = false;  // cannot learn the vector length: do not use SVE
  }
}

CpuIsa detected_isa_arm(const CpuFeatures& f) noexcept {
  if (!f.asimd) return CpuIsa::generic;
  if (f.sve) return CpuIsa::sve;
  if (f.arm_bf16 && f.i8mm) return CpuIsa::neon_bf16;
  return CpuIsa::neon;
}

}  // namespace rc

#endif  // __aarch64__
