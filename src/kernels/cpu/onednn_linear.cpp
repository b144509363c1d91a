// PackedLinear (kernels/linear.h).  With oneDNN: weights reordered once into the blocked layout
// the matmul implementation asks for (format_tag::any), one primitive per distinct
// (row bucket, activation types, bias, epilogue) cached in the object under a mutex, GELU as
// an eltwise_gelu_erf post-op (exact erf form). Row buckets (cpu::linear_row_bucket): M runs
// as chunks of ≤ 512 rows, each on the primitive of the next power of two (≤ 64) or multiple
// of 64, short chunks padded in scratch: at most 14 shapes serve any batch × length. oneDNN
// 2.6's runtime M (DNNL_RUNTIME_DIM_VAL) was the alternative: it drops from brgemm to its
// gemm:jit implementation for bf16, so padding it is.
//   f32 / bf16: bias through the matmul's own bias input.
//   s8: s8 × s8 → s32 (VNNI vpdpbusd with oneDNN's s8s8 compensation, AMX-INT8 where present),
//       x quantised per row by us, or already by the LayerNorm before (ActType::s8 input),
//       then one pass of our own (cpu::dequantize_rows) applies x_scale[m]·w_scale[n], the bias
//       and GELU and writes fp32 or bf16.  Why not post-ops: oneDNN 2.6's brgemm matmul has no
//       per-row scale (output scales are per column; a (M, 1) binary post-op drops it to the
//       reference kernel, ~100x slower).
// Fallback (no oneDNN, or oneDNN refuses the type on this CPU / under RC_CPU_ISA; in
// linear_portable.cpp, with the Impl in packed_linear_impl.h): the packed copy is plain row-major (bf16-rounded values
// kept as fp32, or int8 + scales) and portable loops compute the same math; except on aarch64 with BF16 + I8MM
// (Debian's oneDNN 2.6 has no bf16 matmul and no SMMLA there): bf16 and s8 weights are packed into BFMMLA / SMMLA
// panels for cpu/neon/bf16.cpp's micro-kernels (docs/arm64.md).
#include "kernels/linear.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/bf16_convert.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/neon/neon_kernels.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/cpu/onednn_policy.h"
#include "kernels/cpu/packed_linear_impl.h"
#include "kernels/profile.h"

#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace rc::kernels {

using cpu::portable::fallback_forward;
using cpu::portable::grow;
using cpu::portable::pack_fallback;
using cpu::portable::quantize_weights;

PackedLinear::PackedLinear() = default;
PackedLinear::~PackedLinear() = default;
PackedLinear::PackedLinear(PackedLinear&&) noexcept = default;
PackedLinear& PackedLinear::operator=(PackedLinear&&) noexcept = default;

int64_t PackedLinear::n() const noexcept { return impl_ ? impl_->N : 0; }
int64_t PackedLinear::k() const noexcept { return impl_ ? impl_->K : 0; }
PackedType PackedLinear::type() const noexcept { return impl_ ? impl_->type : PackedType::f32; }
bool PackedLinear::borrows() const noexcept { return impl_ && impl_->borrowed; }
size_t PackedLinear::packed_bytes() const noexcept { return impl_ ? impl_->bytes : 0; }
bool PackedLinear::uses_onednn() const noexcept { return impl_ && impl_->onednn; }
const float* PackedLinear::weight_scales() const noexcept {
  return impl_ && impl_->type == PackedType::s8 ? impl_->w_scales.data() : nullptr;
}

#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN

namespace {
using dt = dnnl::memory::data_type;

const dnnl::engine& shared_engine() {
  static const dnnl::engine eng = [] {
    cpu::onednn::apply_isa_limit();  // RC_CPU_ISA caps oneDNN's JIT too; must precede any primitive
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return eng;
}

dt weight_type(PackedType t) {
  switch (t) {
    case PackedType::f32:
      return dt::f32;
    case PackedType::bf16:
      return dt::bf16;
    case PackedType::s8:
      return dt::s8;
  }
  return dt::f32;
}
dt act_type(ActType t) { return t == ActType::bf16 ? dt::bf16 : dt::f32; }

uint64_t next_prim_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

int64_t prim_key(const PackedLinear::Impl& im, int64_t M, bool bias, bool gelu, ActType y_type) {
  if (im.type == PackedType::s8) return M;  // epilogue and output type are ours
  return M * 8 + (bias ? 4 : 0) + (gelu ? 2 : 0) + (im.type == PackedType::bf16 && y_type == ActType::bf16 ? 1 : 0);
}

// The matmul descriptor for (M, N, K); weights as given (packed) or `any` (to learn the layout).
// The source always has the weights' type (x is converted or quantised before the call).
dnnl::matmul::primitive_desc make_pd(const PackedLinear::Impl& im, int64_t M, const dnnl::memory::desc& w_md, bool bias,
                                     bool gelu, ActType y_type) {
  const int64_t N = im.N, K = im.K;
  const dnnl::memory::desc x_md({M, K}, weight_type(im.type), dnnl::memory::format_tag::ab);
  // s8 → s32 (dequantised by us); f32 weights → f32 (converted by us when y is bf16).
  const dt y_dt = im.type == PackedType::s8 ? dt::s32 : im.type == PackedType::f32 ? dt::f32 : act_type(y_type);
  const dnnl::memory::desc y_md({M, N}, y_dt, dnnl::memory::format_tag::ab);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const bool s8 = im.type == PackedType::s8;
  if (gelu && !s8) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    attr.set_post_ops(po);
  }
  const bool matmul_bias = bias && !s8;
  const auto d = matmul_bias ? dnnl::matmul::desc(
                                   x_md, w_md, dnnl::memory::desc({1, N}, dt::f32, dnnl::memory::format_tag::ab), y_md)
                             : dnnl::matmul::desc(x_md, w_md, y_md);
  return dnnl::matmul::primitive_desc(d, attr, shared_engine());
}

const char* type_name(PackedType t) { return t == PackedType::s8 ? "int8" : t == PackedType::bf16 ? "bf16" : "fp32"; }

std::string pack_site(const PackedLinear::Impl& im) {
  return "PackedLinear::pack N=" + std::to_string(im.N) + " K=" + std::to_string(im.K) + " " + type_name(im.type);
}

std::string forward_site(const PackedLinear::Impl& im, int64_t M) {
  return "linear_forward M=" + std::to_string(M) + " N=" + std::to_string(im.N) + " K=" + std::to_string(im.K) + " " +
         type_name(im.type);
}

// oneDNN's reference (non-JIT) implementations are orders of magnitude slower than our own
// fallback loops: accept only JIT ones.
bool is_jit(const dnnl::matmul::primitive_desc& pd) {
  const char* name = pd.impl_info_str();
  return name && std::strstr(name, "ref") == nullptr;
}

}  // namespace

PackedLinear PackedLinear::pack(const float* w, int64_t N, int64_t K, PackedType type) {
  return pack_converted(w, nullptr, N, K, type);
}

// w: fp32 weights, or w16_in: bf16 ones (type bf16 only; kernels/cpu/pack_rows.cpp).
PackedLinear PackedLinear::pack_converted(const float* w, const uint16_t* w16_in, int64_t N, int64_t K, PackedType type,
                                          std::shared_ptr<const void> borrow) {
  RC_CHECK(N > 0 && K > 0 && (w || w16_in), Errc::invalid_argument, "PackedLinear::pack: got N=", N, ", K=", K,
           ", expected a non-empty (N, K) weight");
  RC_ASSERT(w || type == PackedType::bf16);
  PackedLinear out;
  out.impl_ = std::make_unique<PackedLinear::Impl>();
  PackedLinear::Impl& im = *out.impl_;
  im.N = N;
  im.K = K;
  im.type = type;
  im.eng = shared_engine();
  std::vector<float> wf;  // the fallback packers read fp32
  auto pack_fallback = [&](PackedLinear::Impl& impl, const float* src) {
    if (!src) {
      wf.resize(size_t(N * K));
      cpu::convert_bf16_to_f32(wf.data(), w16_in, N * K);
      src = wf.data();
    }
    cpu::portable::pack_fallback(impl, src);
  };
  // No int8 / bf16 kernel worth having: the plain layout (linear_portable.cpp runs both on
  // oneDNN's fp32 GEMM, exactly for int8 and with bf16-rounded operands for bf16).
  if ((type == PackedType::s8 && !cpu::onednn::int8_gemm_ok()) ||
      (type == PackedType::bf16 && cpu::onednn::bf16_runs_on_fp32_gemm())) {
    pack_fallback(im, w);
    return out;
  }
  std::vector<int8_t> wq;
  if (type == PackedType::s8) quantize_weights(wq, im.w_scales, w, N, K);
  try {
    // The layout the implementation prefers for a mid-size M (the weights layout of the brgemm
    // kernels does not depend on M).
    const dnnl::memory::desc any_md({K, N}, weight_type(type), dnnl::memory::format_tag::any);
    const auto pd = make_pd(im, 128, any_md, false, false, ActType::f32);
    if (!is_jit(pd)) {
      // Only oneDNN's reference kernel: as good as unimplemented for us (orders of magnitude
      // slower than the portable loops).
      cpu::onednn::on_failure(pack_site(im), cpu::onednn::kStatusUnimplemented, "only the reference kernel", true);
      pack_fallback(im, w);
      return out;
    }
    im.w_md = pd.weights_desc();
    // fp32 on oneDNN's gemm-based matmul (no brgemm kernel: AVX2 CPUs): `any` means its plain
    // (K, N) layout there, which ran the 64 × 768 → 3072 GEMM at 4.2 vs 2.8 ms against W's own
    // (N, K) rows (Zen 3). Keep W's rows: the same GEMM as the fp32 master's.
    im.rows_as_given = type == PackedType::f32 && std::strncmp(pd.impl_info_str(), "gemm:", 5) == 0;
    if (im.rows_as_given) im.w_md = dnnl::memory::desc({K, N}, dt::f32, dnnl::memory::format_tag::ba);
    im.bytes = im.w_md.get_size();
    if (im.rows_as_given && borrow) {  // nothing to reorder: read W where it is (see pack)
      im.w_mem = dnnl::memory(im.w_md, im.eng, const_cast<float*>(w));
      im.borrowed = std::move(borrow);
      im.onednn = true;
      return out;
    }
    im.w_mem = dnnl::memory(im.w_md, im.eng);
    // Source: W(N,K) row-major read as (K, N) with strides {1, K}, converted first.  For s8 the
    // reorder also computes the s8s8 compensation the packed descriptor asks for.
    std::vector<uint16_t> w16;
    const void* src = w;
    if (w16_in) {
      src = w16_in;
    } else if (type == PackedType::bf16) {
      w16.resize(size_t(N * K));
      cpu::convert_f32_to_bf16(w16.data(), w, N * K);
      src = w16.data();
    } else if (type == PackedType::s8) {
      src = wq.data();
    }
    dnnl::memory src_mem(dnnl::memory::desc({K, N}, weight_type(type), {1, K}), im.eng, const_cast<void*>(src));
    dnnl::stream strm(im.eng);
    dnnl::reorder(src_mem, im.w_mem).execute(strm, src_mem, im.w_mem);
    strm.wait();
    im.onednn = true;
  } catch (const dnnl::error& e) {
    // "unimplemented": this CPU (or RC_CPU_ISA) has no oneDNN kernel for the type; the plain
    // layout and the portable loops (warned once). Anything else throws Errc::device.
    cpu::onednn::on_failure(pack_site(im), int(e.status), e.what(), true);
    pack_fallback(im, w);
  }
  return out;
}

namespace {

// The cached primitive for M rows (created on first use, under the object's mutex).
const PackedLinear::Impl::Prim& get_prim(PackedLinear::Impl& im, int64_t M, bool bias, bool gelu, ActType y_type) {
  const int64_t key = prim_key(im, M, bias, gelu, y_type);
  std::lock_guard<std::mutex> lock(im.mutex);
  auto it = im.prims.find(key);
  if (it == im.prims.end()) {
    // rows_as_given (oneDNN's gemm-based matmul): its post-op pass ran GELU at 4.03 vs 2.78 ms
    // for the 64 × 3072 × 768 GEMM (Zen 3), ours adds ~0.3 ms (run_rows). Its brgemm kernels
    // apply post-ops to the tile in registers and keep them.
    const auto pd = make_pd(im, M, im.w_md, bias, gelu && !im.rows_as_given, y_type);
    PackedLinear::Impl::Prim pr{
        dnnl::matmul(pd),     pd.src_desc(),
        pd.dst_desc(),        dnnl::memory::desc({1, im.N}, dt::f32, dnnl::memory::format_tag::ab),
        pd.scratchpad_desc(), next_prim_id()};
    it = im.prims.emplace(key, std::move(pr)).first;
  }
  return it->second;
}

// Runs p on x → dst (bias only when the primitive takes it).  Memory objects are bound once per
// (thread, primitive) and re-pointed per call; the C execute takes a stack argument array (no
// per-call allocation of ours; see onednn_matmul.cpp).
void run_prim(const PackedLinear::Impl& im, const PackedLinear::Impl::Prim& p, const void* xp, void* dst,
              const float* bias, int64_t M) {
  struct Bound {
    dnnl::memory x, y, s, bias;
  };
  thread_local std::unordered_map<uint64_t, Bound> bound;
  thread_local std::vector<uint8_t> scratch;
  thread_local dnnl::stream strm(shared_engine());
  auto bit = bound.find(p.id);
  if (bit == bound.end())
    bit = bound
              .emplace(p.id, Bound{dnnl::memory(p.x_md, im.eng, const_cast<void*>(xp)),
                                   dnnl::memory(p.y_md, im.eng, dst), dnnl::memory(p.scratch_md, im.eng, nullptr),
                                   dnnl::memory(p.bias_md, im.eng, const_cast<float*>(bias))})
              .first;
  Bound& bd = bit->second;
  const size_t need = p.scratch_md.get_size();
  bd.x.set_data_handle(const_cast<void*>(xp));
  bd.y.set_data_handle(dst);
  bd.s.set_data_handle(grow(scratch, int64_t(need > 0 ? need : 1)));
  dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, bd.x.get()},
                             {DNNL_ARG_WEIGHTS, im.w_mem.get()},
                             {DNNL_ARG_DST, bd.y.get()},
                             {DNNL_ARG_SCRATCHPAD, bd.s.get()},
                             {DNNL_ARG_BIAS, nullptr}};
  int nargs = 4;
  if (bias && im.type != PackedType::s8) {
    bd.bias.set_data_handle(const_cast<float*>(bias));
    args[nargs++].memory = bd.bias.get();
  }
  const dnnl_status_t st = dnnl_primitive_execute(p.prim.get(), strm.get(), nargs, args);
  // The weights are in oneDNN's layout: no fallback from here, whatever the status.
  if (st != dnnl_success) cpu::onednn::on_failure(forward_site(im, M), int(st), "execute", false);
  strm.wait();
}

// Rows per GEMM call. int8: the s32 result of a chunk (≤ 256 × N × 4 bytes, 3 MB at N = 3072)
// is dequantised while it is still in cache instead of after a round trip through DRAM.
constexpr int64_t kMaxRows = 512, kInt8Chunk = 256;

std::atomic<bool> g_row_buckets{true};

// Runs y = x·Wᵀ (+ bias, GELU) over M rows in chunks of ≤ max_rows, each with its row bucket's
// primitive (why: a new M used to create a primitive on first use, seconds under load when
// every batch × length is new). A chunk shorter than its bucket runs on a copy padded with
// zero rows in per-thread scratch; rows are independent in a GEMM, so the real rows' results
// are those of an exact-M primitive. x and y are dense rows of xe / ye bytes per element;
// out(m0) is where the chunk at row m0 goes, done(m0, rows, y_chunk) runs after each chunk.
template <class Out, class Done>
void run_rows(PackedLinear::Impl& im, int64_t M, int64_t max_rows, const void* x, size_t xe, size_t ye,
              const float* bias, bool gelu, ActType y_type, Out out, Done done) {
  thread_local std::vector<uint8_t> pad_x, pad_y;
  const int64_t N = im.N, K = im.K;
  const bool buckets = g_row_buckets.load(std::memory_order_relaxed);
  for (int64_t m0 = 0; m0 < M; m0 += max_rows) {
    const int64_t mc = std::min(max_rows, M - m0);
    const int64_t rows = buckets ? cpu::linear_row_bucket(mc) : mc;
    const auto* xc = static_cast<const uint8_t*>(x) + size_t(m0 * K) * xe;
    void* yc = out(m0);
    const auto& prim = get_prim(im, rows, bias != nullptr, gelu, y_type);
    if (rows == mc) {
      run_prim(im, prim, xc, yc, bias, rows);
    } else {
      uint8_t* px = grow(pad_x, int64_t(size_t(rows * K) * xe));
      std::memcpy(px, xc, size_t(mc * K) * xe);
      std::memset(px + size_t(mc * K) * xe, 0, size_t((rows - mc) * K) * xe);
      uint8_t* py = grow(pad_y, int64_t(size_t(rows * N) * ye));
      run_prim(im, prim, px, py, bias, rows);
      std::memcpy(yc, py, size_t(mc * N) * ye);
    }
    if (gelu && im.rows_as_given) {  // fp32 rows (see Impl::rows_as_given), while the chunk is warm
      RC_ASSERT(ye == sizeof(float));
      const ProfileScope g(current_profiler(), OpFamily::gelu);
      cpu::gelu_erf_forward(static_cast<float*>(yc), static_cast<const float*>(yc), mc * N);
    }
    done(m0, mc, yc);
  }
}

}  // namespace

int64_t cpu::linear_row_bucket(int64_t rows) noexcept {
  if (rows > 64) return (rows + 63) / 64 * 64;
  int64_t b = 1;
  while (b < rows) b *= 2;
  return b;
}

size_t cpu::linear_primitive_count(const PackedLinear& w) {
  if (w.empty()) return 0;
  std::lock_guard<std::mutex> lock(w.impl()->mutex);
  return w.impl()->prims.size();
}

void cpu::set_linear_row_buckets(bool on) noexcept { g_row_buckets.store(on); }

void cpu::packed_linear_forward(void* y, ActType y_type, const void* x, ActType x_type, const PackedLinear& w,
                                const float* bias, int64_t M, Epilogue epilogue, const float* x_scale, float* y_scale) {
  RC_ASSERT(!w.empty() && M >= 0 && (M == 0 || (y && x)));
  RC_ASSERT((x_type == ActType::s8) == (x_scale != nullptr) && (y_type == ActType::s8) == (y_scale != nullptr));
  RC_ASSERT((x_type != ActType::s8 && y_type != ActType::s8) || w.type() == PackedType::s8);
  if (M == 0) return;
  PackedLinear::Impl& im = *w.impl();
  if (!im.onednn) return fallback_forward(im, y, y_type, x, x_type, bias, M, epilogue, x_scale, y_scale);
  const bool gelu = epilogue == Epilogue::gelu_erf;
  const int64_t N = im.N, K = im.K;
  try {
    thread_local std::vector<uint16_t> x16;
    thread_local std::vector<float> xf, xs, yf;
    thread_local std::vector<int8_t> xq;
    thread_local std::vector<int32_t> acc;
    switch (im.type) {
      case PackedType::f32: {
        const void* xp = x;
        if (x_type == ActType::bf16) {
          const ProfileScope conv(current_profiler(), OpFamily::convert);
          cpu::convert_bf16_to_f32(grow(xf, M * K), static_cast<const uint16_t*>(x), M * K);
          xp = xf.data();
        }
        float* yp = y_type == ActType::f32 ? static_cast<float*>(y) : grow(yf, M * N);
        run_rows(
            im, M, kMaxRows, xp, sizeof(float), sizeof(float), bias, gelu, ActType::f32,
            [&](int64_t m0) { return yp + m0 * N; }, [](int64_t, int64_t, void*) {});
        if (y_type == ActType::f32) return;
        const ProfileScope conv(current_profiler(), OpFamily::convert);
        return cpu::convert_f32_to_bf16(static_cast<uint16_t*>(y), yf.data(), M * N);
      }
      case PackedType::bf16: {
        const void* xp = x;
        if (x_type == ActType::f32) {
          const ProfileScope conv(current_profiler(), OpFamily::convert);
          cpu::convert_f32_to_bf16(grow(x16, M * K), static_cast<const float*>(x), M * K);
          xp = x16.data();
        }
        const size_t ye = y_type == ActType::f32 ? sizeof(float) : sizeof(uint16_t);
        return run_rows(
            im, M, kMaxRows, xp, sizeof(uint16_t), ye, bias, gelu, y_type,
            [&](int64_t m0) { return static_cast<uint8_t*>(y) + size_t(m0 * N) * ye; }, [](int64_t, int64_t, void*) {});
      }
      case PackedType::s8: {
        const int8_t* xq_p = static_cast<const int8_t*>(x);
        const float* xs_p = x_scale;
        if (x_type != ActType::s8) {  // else quantised by the op before (GemmInput)
          const ProfileScope conv(current_profiler(), OpFamily::convert);
          if (x_type == ActType::f32)
            quantize_rows_s8(grow(xq, M * K), grow(xs, M), static_cast<const float*>(x), M, K);
          else
            quantize_rows_s8_bf16(grow(xq, M * K), grow(xs, M), static_cast<const uint16_t*>(x), M, K);
          xq_p = xq.data();
          xs_p = xs.data();
        }
        const bool f = y_type == ActType::f32;
        int32_t* acc_p = grow(acc, std::min(kInt8Chunk, M) * N);
        uint16_t* yb_p = y_type == ActType::s8 ? grow(x16, std::min(kInt8Chunk, M) * N) : nullptr;
        run_rows(
            im, M, kInt8Chunk, xq_p, 1, sizeof(int32_t), bias, gelu, y_type, [&](int64_t) { return acc_p; },
            [&](int64_t m0, int64_t mc, void*) {
              const ProfileScope epi(current_profiler(), OpFamily::epilogue);
              if (y_type == ActType::s8) {  // the chunk's bf16 rows, then quantised while in cache
                cpu::dequantize_rows(nullptr, yb_p, acc_p, xs_p + m0, im.w_scales.data(), bias, mc, N, gelu);
                quantize_rows_s8_bf16(static_cast<int8_t*>(y) + m0 * N, y_scale + m0, yb_p, mc, N);
                return;
              }
              cpu::dequantize_rows(f ? static_cast<float*>(y) + m0 * N : nullptr,
                                   f ? nullptr : static_cast<uint16_t*>(y) + m0 * N, acc_p, xs_p + m0,
                                   im.w_scales.data(), bias, mc, N, gelu);
            });
        return;
      }
    }
  } catch (const dnnl::error& e) {
    // A new M's primitive refused after the weights were packed for oneDNN: no fallback left.
    cpu::onednn::on_failure(forward_site(im, M), int(e.status), e.what(), false);
  }
}

#else  // no oneDNN

// The same checks and Impl set-up as the oneDNN build's pack above (alike on purpose: only one
// of the two is compiled, and each reads whole without the other).
PackedLinear PackedLinear::pack(const float* w, int64_t N, int64_t K, PackedType type) {
  return pack_converted(w, nullptr, N, K, type);
}

PackedLinear PackedLinear::pack_converted(const float* w, const uint16_t* w16, int64_t N, int64_t K, PackedType type,
                                          std::shared_ptr<const void>) {  // no oneDNN: always a copy
  RC_CHECK(N > 0 && K > 0 && (w || w16), Errc::invalid_argument, "PackedLinear::pack: got N=", N, ", K=", K,
           ", expected a non-empty (N, K) weight");
  RC_ASSERT(w || type == PackedType::bf16);
  PackedLinear out;
  out.impl_ = std::make_unique<PackedLinear::Impl>();
  PackedLinear::Impl& im = *out.impl_;
  im.N = N;
  im.K = K;
  im.type = type;
  std::vector<float> wf;
  if (!w) {
    wf.resize(size_t(N * K));
    cpu::convert_bf16_to_f32(wf.data(), w16, N * K);
    w = wf.data();
  }
  pack_fallback(im, w);
  return out;
}

void cpu::packed_linear_forward(void* y, ActType y_type, const void* x, ActType x_type, const PackedLinear& w,
                                const float* bias, int64_t M, Epilogue epilogue, const float* x_scale, float* y_scale) {
  RC_ASSERT(!w.empty() && M >= 0 && (M == 0 || (y && x)));
  RC_ASSERT((x_type == ActType::s8) == (x_scale != nullptr) && (y_type == ActType::s8) == (y_scale != nullptr));
  RC_ASSERT((x_type != ActType::s8 && y_type != ActType::s8) || w.type() == PackedType::s8);
  if (M == 0) return;
  fallback_forward(*w.impl(), y, y_type, x, x_type, bias, M, epilogue, x_scale, y_scale);
}

#endif

}  // namespace rc::kernels
