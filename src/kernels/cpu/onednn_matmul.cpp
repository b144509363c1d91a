// oneDNN matmul with a primitive cache: the only file that includes dnnl.hpp.
//
// Cache: one primitive per (M, N, K, strides, precision, accumulate, bias), created on first use
// under a mutex (the server runs forwards from several threads; creation is rare), executed
// outside it (oneDNN primitives may run concurrently).  Scratchpads are user-managed and
// thread_local (the library-managed one is shared per primitive), grown on demand.  Those, the
// bf16 staging buffers and oneDNN's small memory handles are the only allocations here.
//
// bf16: the inputs are rounded to bf16 (round-to-nearest-even) into thread_local staging
// buffers and multiplied as bf16 × bf16 → fp32 (AMX on Sapphire Rapids).  The alternative,
// oneDNN's fpmath_mode::bf16 on fp32 memory, is selected with RC_ONEDNN_BF16=fpmath for
// comparison (see bench/kernels/bench_matmul.cpp).
#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN

#include "kernels/cpu/onednn_matmul.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "device/cpu_isa.h"
#include "kernels/cpu/bf16_convert.h"
#include "kernels/cpu/onednn_policy.h"
#include "kernels/profile.h"
#include "roberta/log.h"

namespace rc::kernels::cpu::onednn {

static_assert(kStatusUnimplemented == int(dnnl_unimplemented), "onednn_policy.h's status code");

namespace {

struct Key {
  int64_t M, N, K, sa_r, sa_c, sb_r, sb_c;
  int flags;  // bit 0 bf16, bit 1 accumulate, bit 2 bias, bit 3 fpmath
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const noexcept {
    size_t h = 1469598103934665603ull;
    for (int64_t v : {k.M, k.N, k.K, k.sa_r, k.sa_c, k.sb_r, k.sb_c, int64_t(k.flags)})
      h = (h ^ size_t(v)) * 1099511628211ull;
    return h;
  }
};

struct Entry {
  dnnl::matmul prim;
  dnnl::memory::desc a_md, b_md, c_md, bias_md, scratch_md;
  bool refused = false;  // oneDNN said "unimplemented" for this key: the loops run it
};

// Bounded so that a long run with ever-changing M (dynamic padding) cannot grow it forever.
constexpr size_t kMaxEntries = 1024;

dnnl::engine& engine() {
  static dnnl::engine eng = [] {
    apply_isa_limit();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return eng;
}

bool use_fpmath() {
  static const bool v = [] {
    const char* e = std::getenv("RC_ONEDNN_BF16");
    return e && std::strcmp(e, "fpmath") == 0;
  }();
  return v;
}

std::mutex g_mutex;
std::unordered_map<Key, Entry, KeyHash>& cache() {
  static std::unordered_map<Key, Entry, KeyHash> c;
  return c;
}

Entry make_entry(const Key& k) {
  using dt = dnnl::memory::data_type;
  const bool bf16 = k.flags & 1, acc = k.flags & 2, bias = k.flags & 4, fpmath = k.flags & 8;
  const dt in_dt = bf16 && !fpmath ? dt::bf16 : dt::f32;
  Entry e;
  e.a_md = dnnl::memory::desc({k.M, k.K}, in_dt, {k.sa_r, k.sa_c});
  e.b_md = dnnl::memory::desc({k.K, k.N}, in_dt, {k.sb_r, k.sb_c});
  e.c_md = dnnl::memory::desc({k.M, k.N}, dt::f32, {k.N, 1});
  if (bias) e.bias_md = dnnl::memory::desc({1, k.N}, dt::f32, {k.N, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (bf16 && fpmath) attr.set_fpmath_mode(dnnl::fpmath_mode::bf16);
  if (acc) {
    dnnl::post_ops po;
    po.append_sum(1.0f);
    attr.set_post_ops(po);
  }
  const auto d =
      bias ? dnnl::matmul::desc(e.a_md, e.b_md, e.bias_md, e.c_md) : dnnl::matmul::desc(e.a_md, e.b_md, e.c_md);
  const dnnl::matmul::primitive_desc pd(d, attr, engine());
  e.prim = dnnl::matmul(pd);
  e.scratch_md = pd.scratchpad_desc();
  return e;
}

const Entry* lookup(const Key& k) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto& c = cache();
  auto it = c.find(k);
  if (it != c.end()) return &it->second;
  // Entries are never erased and unordered_map never moves its nodes, so the pointer stays
  // valid without the lock.  Past the bound, new shapes run uncached instead of evicting.
  if (c.size() >= kMaxEntries) return nullptr;
  try {
    return &c.emplace(k, make_entry(k)).first->second;
  } catch (const dnnl::error& err) {
    // Remember a refusal, so the next call with this key goes straight to the loops instead
    // of asking oneDNN (and throwing) again; the caller applies the policy to this first one.
    if (err.status == dnnl_unimplemented) c.emplace(k, Entry{{}, {}, {}, {}, {}, {}, true});
    throw;
  }
}

// Rounds a dense operand (all our cases: one stride is 1, the other spans a full row or column)
// to bf16 in the same layout.
uint16_t* to_bf16(std::vector<uint16_t>& buf, const float* src, int64_t n) {
  if (int64_t(buf.size()) < n) buf.resize(size_t(n));
  convert_f32_to_bf16(buf.data(), src, n);
  return buf.data();
}

#if defined(__x86_64__)
// True when this CPU (or the RC_CPU_ISA cap) has no bf16 matmul kernel in oneDNN, or only its
// reference one (x86-64 without AVX512-core: AMD Zen 2/3, older Intel). Probed once on a small
// shape: oneDNN 2.6 decides bf16 support by ISA, not by shape. x86 only: on aarch64 the bf16
// GEMMs are our own BFMMLA kernels, and an unused function fails the RC_WERROR build there.
bool bf16_gemm_missing() {
  static const bool missing = [] {
    bool m = false;
    try {
      const Entry e = make_entry(Key{16, 16, 16, 16, 1, 16, 1, 1});
      const char* name = nullptr;
      if (dnnl_primitive_desc_query(e.prim.get_primitive_desc(), dnnl_query_impl_info_str, 0, &name) == dnnl_success)
        m = name && std::strstr(name, "ref") != nullptr;
    } catch (const dnnl::error& err) {
      m = err.status == dnnl_unimplemented;
    }
    if (m)
      log::warn("onednn",
                "bf16: oneDNN has no bf16 GEMM on this CPU; bf16 products run as fp32 GEMMs on bf16-rounded "
                "operands (same math, the speed of fp32)");
    return m;
  }();
  return missing;
}
#endif

// The operand of the fp32 GEMM standing in for a bf16 one: the caller's bf16 copy widened, or
// the fp32 operand rounded through bf16.
const float* as_bf16_values(std::vector<float>& buf, const float* src, const uint16_t* src16, int64_t n) {
  if (int64_t(buf.size()) < n) buf.resize(size_t(n));
  if (src16)
    convert_bf16_to_f32(buf.data(), src16, n);
  else
    round_to_bf16(buf.data(), src, n);
  return buf.data();
}

}  // namespace

bool bf16_runs_on_fp32_gemm() noexcept {
#if defined(__x86_64__)
  try {
    return !use_fpmath() && bf16_gemm_missing();
  } catch (...) {
    return false;
  }
#else
  return false;
#endif
}

void apply_isa_limit() noexcept {
  static const bool done = [] {
    // Only a forced path caps oneDNN: its own detection knows ISA extensions we do not name.
    const char* forced = std::getenv("RC_CPU_ISA");
    if (!forced || !*forced) return true;
    dnnl::cpu_isa cap = dnnl::cpu_isa::all;
    // A switch rather than a table (its cases alike on purpose): -Wswitch names a new CpuIsa here.
    switch (cpu_isa()) {
      case CpuIsa::generic:
        cap = dnnl::cpu_isa::sse41;
        break;
      case CpuIsa::avx2:
        cap = dnnl::cpu_isa::avx2;
        break;
      case CpuIsa::avx512:
        cap = dnnl::cpu_isa::avx512_core;
        break;
      case CpuIsa::avx512_bf16:
        cap = dnnl::cpu_isa::avx512_core_bf16;
        break;
      case CpuIsa::amx:
        cap = dnnl::cpu_isa::all;
        break;
      // aarch64: oneDNN's own ISA levels there are not in its public enum; no cap.
      case CpuIsa::neon:
      case CpuIsa::neon_bf16:
      case CpuIsa::sve:
        cap = dnnl::cpu_isa::all;
        break;
    }
#if !defined(__x86_64__)
    cap = dnnl::cpu_isa::all;  // the x86 levels above mean nothing to an aarch64 oneDNN
#endif
    try {
      if (cap != dnnl::cpu_isa::all) dnnl::set_max_cpu_isa(cap);
    } catch (const dnnl::error&) {
      // Too late (a primitive already ran, e.g. DNNL_MAX_CPU_ISA set it): keep oneDNN's choice.
    }
    return true;
  }();
  (void)done;
}

bool int8_gemm_ok() noexcept {
#if defined(__x86_64__)
  return cpu_has_int8_dot();
#else
  return false;  // aarch64: int8 runs on our SMMLA kernels (cpu/neon/bf16.cpp) or the loops
#endif
}

namespace {
std::string where(int64_t M, int64_t N, int64_t K, Strided a, Strided b, MatmulPrecision prec) {
  const char* kind = a.stride_col == 1 ? (b.stride_row == 1 ? "matmul_nt" : "matmul_nn") : "matmul_tn";
  return std::string(kind) + " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
         (prec == MatmulPrecision::bf16 ? " bf16" : " fp32");
}
}  // namespace

bool matmul(float* y, Strided a, Strided b, const float* bias, int64_t M, int64_t N, int64_t K, bool accumulate,
            MatmulPrecision prec, const uint16_t* a16, const uint16_t* b16) {
  if (prec == MatmulPrecision::bf16 && bf16_runs_on_fp32_gemm()) {
    // No bf16 kernel here: the fp32 GEMM on the operands rounded to bf16. Same math as a bf16
    // GEMM (each bf16·bf16 product is exact in fp32, fp32 accumulation); only the summation
    // order is the fp32 kernel's. Far faster than the caller's loops (docs/benchmarks.md).
    thread_local std::vector<float> a_f, b_f;
    const float *ap, *bp;
    {
      const ProfileScope conv(current_profiler(), OpFamily::convert);
      ap = as_bf16_values(a_f, a.data, a16, M * K);
      bp = as_bf16_values(b_f, b.data, b16, K * N);
    }
    return matmul(y, {ap, a.stride_row, a.stride_col}, {bp, b.stride_row, b.stride_col}, bias, M, N, K, accumulate,
                  MatmulPrecision::fp32);
  }
  try {
    const bool bf16 = prec == MatmulPrecision::bf16;
    const bool fpmath = bf16 && use_fpmath();
#if !defined(__x86_64__)
    // Debian's aarch64 oneDNN 2.6 has no bf16 matmul: asking would throw (and allocate) on every
    // call. The caller's bf16 loops run instead (docs/arm64.md).
    if (bf16 && !fpmath) return false;
#endif
    // An operand given only as bf16 (a16 / b16 with a null fp32 pointer, the training step's
    // saved activations) is widened, exactly, for the kernels that read fp32.
    thread_local std::vector<float> a_wide, b_wide;
    if (!(bf16 && !fpmath)) {
      if (!a.data && a16) a.data = as_bf16_values(a_wide, nullptr, a16, M * K);
      if (!b.data && b16) b.data = as_bf16_values(b_wide, nullptr, b16, K * N);
    }
    const Key key{M,
                  N,
                  K,
                  a.stride_row,
                  a.stride_col,
                  b.stride_row,
                  b.stride_col,
                  (bf16 ? 1 : 0) | (accumulate ? 2 : 0) | (bias ? 4 : 0) | (fpmath ? 8 : 0)};
    const Entry* e = lookup(key);
    if (e && e->refused) return false;
    Entry uncached;
    if (!e) {
      uncached = make_entry(key);
      e = &uncached;
    }
    thread_local dnnl::stream strm(engine());
    thread_local std::vector<uint8_t> scratch;
    thread_local std::vector<uint16_t> a_stage, b_stage;
    if (scratch.size() < e->scratch_md.get_size()) scratch.resize(e->scratch_md.get_size());

    void* a_ptr = const_cast<float*>(a.data);
    void* b_ptr = const_cast<float*>(b.data);
    if (bf16 && !fpmath) {
      // The operands are dense (M·K and K·N elements in some order), so the conversion is flat.
      // Operands the caller converted already (a16 / b16) are read as they are.
      const ProfileScope conv(current_profiler(), OpFamily::convert);
      a_ptr = a16 ? const_cast<uint16_t*>(a16) : to_bf16(a_stage, a.data, M * K);
      b_ptr = b16 ? const_cast<uint16_t*>(b16) : to_bf16(b_stage, b.data, K * N);
    }
    // Memory objects bound once per (thread, cache entry), re-pointed per call, and the C
    // execute with a stack argument array: the C++ execute(map) and fresh dnnl::memory objects
    // cost ~8 heap allocations per call.  (oneDNN 2.6's own execute still allocates ~6: its
    // exec context is a std::unordered_map.)
    struct Bound {
      dnnl::memory a, b, c, s, bias;
    };
    thread_local std::unordered_map<const Entry*, Bound> bound;
    auto it = e == &uncached ? bound.end() : bound.find(e);
    Bound local;
    Bound* bd = &local;
    if (it != bound.end()) {
      bd = &it->second;
    } else {
      Bound nb{dnnl::memory(e->a_md, engine(), a_ptr), dnnl::memory(e->b_md, engine(), b_ptr),
               dnnl::memory(e->c_md, engine(), y), dnnl::memory(e->scratch_md, engine(), scratch.data()),
               bias ? dnnl::memory(e->bias_md, engine(), const_cast<float*>(bias)) : dnnl::memory()};
      if (e == &uncached)
        local = std::move(nb);
      else
        bd = &bound.emplace(e, std::move(nb)).first->second;
    }
    bd->a.set_data_handle(a_ptr);
    bd->b.set_data_handle(b_ptr);
    bd->c.set_data_handle(y);
    bd->s.set_data_handle(scratch.data());
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, bd->a.get()},
                               {DNNL_ARG_WEIGHTS, bd->b.get()},
                               {DNNL_ARG_DST, bd->c.get()},
                               {DNNL_ARG_SCRATCHPAD, bd->s.get()},
                               {DNNL_ARG_BIAS, nullptr}};
    int nargs = 4;
    if (bias) {
      bd->bias.set_data_handle(const_cast<float*>(bias));
      args[nargs++].memory = bd->bias.get();
    }
    const dnnl_status_t st = dnnl_primitive_execute(e->prim.get(), strm.get(), nargs, args);
    if (st != dnnl_success) {
      on_failure(where(M, N, K, a, b, prec), int(st), "execute", true);
      return false;
    }
    strm.wait();
    return true;
  } catch (const dnnl::error& err) {
    on_failure(where(M, N, K, a, b, prec), int(err.status), err.what(), true);
    return false;
  }
}

}  // namespace rc::kernels::cpu::onednn

#else  // no oneDNN: the callers' loops do bf16 themselves

#include "kernels/cpu/onednn_matmul.h"

namespace rc::kernels::cpu::onednn {
bool bf16_runs_on_fp32_gemm() noexcept { return false; }
}  // namespace rc::kernels::cpu::onednn

#endif  // RC_WITH_ONEDNN
