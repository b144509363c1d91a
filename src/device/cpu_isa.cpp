#include "device/cpu_isa.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <omp.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "device/cpu_isa_arm.h"
#include "roberta/log.h"

namespace rc {
namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (__get_cpuid_count(1, 0, &a, &b, &c, &d)) f.fma = c & (1u << 12);
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = b & (1u << 5);
    f.avx512f = b & (1u << 16);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512_vnni = c & (1u << 11);
    f.amx_bf16 = d & (1u << 22);
    f.amx_int8 = d & (1u << 25);
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512_bf16 = a & (1u << 5);
#elif defined(__aarch64__)
  detect_arm(f);
#endif
  return f;
}

CpuIsa detected_isa(const CpuFeatures& f) {
#if defined(__aarch64__)
  return detected_isa_arm(f);
#endif
  if (f.amx_bf16 && f.avx512_bf16) return CpuIsa::amx;
  if (f.avx512_bf16 && f.avx512bw && f.avx512vl) return CpuIsa::avx512_bf16;
  if (f.avx512f && f.avx512bw && f.avx512vl) return CpuIsa::avx512;
  if (f.avx2 && f.fma) return CpuIsa::avx2;
  return CpuIsa::generic;
}

// Position in this architecture's order (generic = 0); -1 for another architecture's path.
int isa_rank(CpuIsa isa) {
#if defined(__aarch64__)
  constexpr bool arm = true;
#else
  constexpr bool arm = false;
#endif
  switch (isa) {
    case CpuIsa::generic:
      return 0;
    case CpuIsa::avx2:
      return arm ? -1 : 1;
    case CpuIsa::avx512:
      return arm ? -1 : 2;
    case CpuIsa::avx512_bf16:
      return arm ? -1 : 3;
    case CpuIsa::amx:
      return arm ? -1 : 4;
    case CpuIsa::neon:
      return arm ? 1 : -1;
    case CpuIsa::neon_bf16:
      return arm ? 2 : -1;
    case CpuIsa::sve:
      return arm ? 3 : -1;
  }
  return -1;
}

CpuIsa resolve_isa() {
  const CpuIsa detected = detected_isa(cpu_features());
  const char* env = std::getenv("RC_CPU_ISA");
  if (!env || !*env) return detected;
  const std::string want = env;
  // The names are cpu_isa_name()'s: one spelling for the variable, logs and `roberta bench`.
  CpuIsa forced = detected;
  bool known = false;
  for (CpuIsa isa : {CpuIsa::generic, CpuIsa::avx2, CpuIsa::avx512, CpuIsa::avx512_bf16, CpuIsa::amx, CpuIsa::neon,
                     CpuIsa::neon_bf16, CpuIsa::sve})
    if (cpu_isa_name(isa) == want) forced = isa, known = true;
  if (!known)
    log::warn("device", "RC_CPU_ISA='", want,
              "' is not one of generic|avx2|avx512|avx512_bf16|amx (x86-64) or generic|neon|neon_bf16|sve "
              "(aarch64); using ",
              cpu_isa_name(detected));
  if (isa_rank(forced) < 0) {
    log::warn("device", "RC_CPU_ISA=", want, " is a path of another architecture; using ", cpu_isa_name(detected));
    return detected;
  }
  if (isa_rank(forced) > isa_rank(detected)) {
    log::warn("device", "RC_CPU_ISA=", want, " is not supported by this CPU; using ", cpu_isa_name(detected));
    return detected;
  }
  return forced;
}

int count_physical_cores() {
  // Distinct (physical id, core id) pairs among the CPUs this process may run on.
  std::ifstream in("/proc/cpuinfo");
  std::set<std::pair<int, int>> cores;
  std::string line;
  int phys = 0;
  while (std::getline(in, line)) {
    if (line.rfind("physical id", 0) == 0) phys = std::atoi(line.substr(line.find(':') + 1).c_str());
    if (line.rfind("core id", 0) == 0) cores.insert({phys, std::atoi(line.substr(line.find(':') + 1).c_str())});
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  int n = cores.empty() ? int(online) : int(cores.size());
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) n = std::min(n, CPU_COUNT(&set));
  return n > 0 ? n : 1;
}

}  // namespace

const CpuFeatures& cpu_features() noexcept {
  static const CpuFeatures f = detect();
  return f;
}

CpuIsa cpu_isa() noexcept {
  static const CpuIsa isa = resolve_isa();
  return isa;
}

// A switch with no default, like every enum -> name in the tree: -Wswitch proves each value is
// named (alike in shape to the others on purpose; docs/architecture.md).
std::string_view cpu_isa_name(CpuIsa isa) noexcept {
  switch (isa) {
    case CpuIsa::generic:
      return "generic";
    case CpuIsa::avx2:
      return "avx2";
    case CpuIsa::avx512:
      return "avx512";
    case CpuIsa::avx512_bf16:
      return "avx512_bf16";
    case CpuIsa::amx:
      return "amx";
    case CpuIsa::neon:
      return "neon";
    case CpuIsa::neon_bf16:
      return "neon_bf16";
    case CpuIsa::sve:
      return "sve";
  }
  return "?";
}

bool cpu_has_bf16() noexcept {
  const CpuIsa isa = cpu_isa();
  // aarch64: the packed bf16 linears run on our BFMMLA kernel (kernels/cpu/neon/bf16.cpp).
  return isa == CpuIsa::avx512_bf16 || isa == CpuIsa::amx || cpu_use_arm_bf16_i8mm();
}

bool cpu_has_int8_dot() noexcept {
#if defined(__x86_64__)
  // VNNI or AMX, and RC_CPU_ISA not capping below avx512_bf16 (oneDNN's int8 without VNNI
  // saturates: kernels/cpu/onednn_matmul.h's int8_gemm_ok, which asks this).
  if (!cpu_features().avx512_vnni && !cpu_features().amx_int8) return false;
  const char* forced = std::getenv("RC_CPU_ISA");
  return !forced || !*forced || cpu_isa() >= CpuIsa::avx512_bf16;
#else
  return cpu_use_arm_bf16_i8mm();
#endif
}

bool cpu_use_arm_bf16_i8mm() noexcept {
  static const bool on = [] {
    const CpuIsa isa = cpu_isa();
    const CpuFeatures& f = cpu_features();
    return (isa == CpuIsa::neon_bf16 || isa == CpuIsa::sve) && f.arm_bf16 && f.i8mm;
  }();
  return on;
}

int physical_cores() noexcept {
  static const int n = count_physical_cores();
  return n;
}

void set_num_threads(int n) { omp_set_num_threads(n > 0 ? n : physical_cores()); }
int num_threads() noexcept { return omp_get_max_threads(); }

}  // namespace rc
