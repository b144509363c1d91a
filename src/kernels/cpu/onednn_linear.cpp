// PackedLinear (kernels/linear.h).  With oneDNN: weights reordered once into the blocked layout
// the matmul implementation asks for (format_tag::any), one primitive per distinct M cached
// in the object under a mutex, GELU as an eltwise_gelu_erf post-op (exact erf form).  Without
// oneDNN: the packed copy is plain row-major (bf16-rounded values kept as fp32) and the call
// is cpu::matmul_nt + GELU.
#include "kernels/linear.h"

#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/bf16_convert.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"
#include "tensor/bf16.h"

#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace rc::kernels {

struct PackedLinear::Impl {
  int64_t N = 0, K = 0;
  PackedType type = PackedType::f32;
  size_t bytes = 0;
#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN
  dnnl::engine eng;  // the process-wide one: per-thread streams are bound to it
  dnnl::memory::desc w_md;  // the packed layout
  dnnl::memory w_mem;
  struct Prim {
    dnnl::matmul prim;
    dnnl::memory::desc x_md, y_md, bias_md, scratch_md;
  };
  std::mutex mutex;
  std::unordered_map<int64_t, Prim> prims;  // key: M·4 + bias·2 + gelu; nodes never move
#else
  std::vector<float> w;  // (N, K) row-major
#endif
};

PackedLinear::PackedLinear() = default;
PackedLinear::~PackedLinear() = default;
PackedLinear::PackedLinear(PackedLinear&&) noexcept = default;
PackedLinear& PackedLinear::operator=(PackedLinear&&) noexcept = default;

int64_t PackedLinear::n() const noexcept { return impl_ ? impl_->N : 0; }
int64_t PackedLinear::k() const noexcept { return impl_ ? impl_->K : 0; }
PackedType PackedLinear::type() const noexcept { return impl_ ? impl_->type : PackedType::f32; }
size_t PackedLinear::packed_bytes() const noexcept { return impl_ ? impl_->bytes : 0; }

#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN

namespace {
using dt = dnnl::memory::data_type;

const dnnl::engine& shared_engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dt data_type(PackedType t) { return t == PackedType::bf16 ? dt::bf16 : dt::f32; }

// The matmul descriptor for (M, N, K); weights as given (packed) or `any` (to learn the layout).
dnnl::matmul::primitive_desc make_pd(const dnnl::engine& eng, int64_t M, int64_t N, int64_t K, PackedType t,
                                     const dnnl::memory::desc& w_md, bool bias, bool gelu) {
  const dnnl::memory::desc x_md({M, K}, data_type(t), dnnl::memory::format_tag::ab);
  const dnnl::memory::desc y_md({M, N}, dt::f32, dnnl::memory::format_tag::ab);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (gelu) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    attr.set_post_ops(po);
  }
  const auto d = bias ? dnnl::matmul::desc(x_md, w_md, dnnl::memory::desc({1, N}, dt::f32, dnnl::memory::format_tag::ab),
                                           y_md)
                      : dnnl::matmul::desc(x_md, w_md, y_md);
  return dnnl::matmul::primitive_desc(d, attr, eng);
}
}  // namespace

PackedLinear PackedLinear::pack(const float* w, int64_t N, int64_t K, PackedType type) {
  RC_CHECK(N > 0 && K > 0 && w, Errc::invalid_argument, "PackedLinear::pack: got N=", N, ", K=", K,
           ", expected a non-empty (N, K) weight");
  PackedLinear out;
  out.impl_ = std::make_unique<Impl>();
  Impl& im = *out.impl_;
  im.N = N;
  im.K = K;
  im.type = type;
  im.eng = shared_engine();
  try {
    // The layout the implementation prefers for a mid-size M (weights layout does not depend on M
    // for the brgemm kernels).
    const dnnl::memory::desc any_md({K, N}, data_type(type), dnnl::memory::format_tag::any);
    im.w_md = make_pd(im.eng, 128, N, K, type, any_md, false, false).weights_desc();
    im.w_mem = dnnl::memory(im.w_md, im.eng);
    im.bytes = im.w_md.get_size();
    // Source: W(N,K) row-major read as (K, N) with strides {1, K}, converted first when bf16.
    std::vector<uint16_t> w16;
    const void* src = w;
    if (type == PackedType::bf16) {
      w16.resize(size_t(N * K));
      cpu::convert_f32_to_bf16(w16.data(), w, N * K);
      src = w16.data();
    }
    dnnl::memory src_mem(dnnl::memory::desc({K, N}, data_type(type), {1, K}), im.eng, const_cast<void*>(src));
    dnnl::stream strm(im.eng);
    dnnl::reorder(src_mem, im.w_mem).execute(strm, src_mem, im.w_mem);
    strm.wait();
  } catch (const dnnl::error& e) {
    RC_THROW(Errc::device, "PackedLinear::pack: oneDNN refused N=", N, " K=", K, ": ", e.what());
  }
  return out;
}

void linear_forward(const ExecCtx& ctx, float* y, const float* x, const PackedLinear& w, const float* bias, int64_t M,
                    Epilogue epilogue) {
  RC_ASSERT(!w.empty() && M >= 0 && (M == 0 || (y && x)));
  if (ctx.device == Device::cuda) detail::no_cuda("linear_forward");
  if (M == 0) return;
  PackedLinear::Impl& im = *w.impl();
  const bool gelu = epilogue == Epilogue::gelu_erf;
  const int64_t key = M * 4 + (bias ? 2 : 0) + (gelu ? 1 : 0);
  const PackedLinear::Impl::Prim* p = nullptr;
  try {
    {
      std::lock_guard<std::mutex> lock(im.mutex);
      auto it = im.prims.find(key);
      if (it == im.prims.end()) {
        const auto pd = make_pd(im.eng, M, im.N, im.K, im.type, im.w_md, bias != nullptr, gelu);
        PackedLinear::Impl::Prim pr{dnnl::matmul(pd), pd.src_desc(), pd.dst_desc(),
                                    bias ? pd.bias_desc() : dnnl::memory::desc(), pd.scratchpad_desc()};
        it = im.prims.emplace(key, std::move(pr)).first;
      }
      p = &it->second;
    }
    thread_local std::vector<uint8_t> scratch;
    thread_local std::vector<uint16_t> x16;
    thread_local dnnl::stream strm(im.eng);
    if (scratch.size() < p->scratch_md.get_size()) scratch.resize(p->scratch_md.get_size());
    void* xp = const_cast<float*>(x);
    if (im.type == PackedType::bf16) {
      if (int64_t(x16.size()) < M * im.K) x16.resize(size_t(M * im.K));
      cpu::convert_f32_to_bf16(x16.data(), x, M * im.K);
      xp = x16.data();
    }
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(p->x_md, im.eng, xp)},
                                               {DNNL_ARG_WEIGHTS, im.w_mem},
                                               {DNNL_ARG_DST, dnnl::memory(p->y_md, im.eng, y)},
                                               {DNNL_ARG_SCRATCHPAD, dnnl::memory(p->scratch_md, im.eng, scratch.data())}};
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(p->bias_md, im.eng, const_cast<float*>(bias)));
    p->prim.execute(strm, args);
    strm.wait();
  } catch (const dnnl::error& e) {
    RC_THROW(Errc::device, "linear_forward: oneDNN failed for M=", M, " N=", im.N, " K=", im.K, ": ", e.what());
  }
}

#else  // no oneDNN

PackedLinear PackedLinear::pack(const float* w, int64_t N, int64_t K, PackedType type) {
  RC_CHECK(N > 0 && K > 0 && w, Errc::invalid_argument, "PackedLinear::pack: got N=", N, ", K=", K,
           ", expected a non-empty (N, K) weight");
  PackedLinear out;
  out.impl_ = std::make_unique<Impl>();
  Impl& im = *out.impl_;
  im.N = N;
  im.K = K;
  im.type = type;
  im.w.assign(w, w + N * K);
  if (type == PackedType::bf16)
    for (float& v : im.w) v = bf16_to_f32(f32_to_bf16(v));
  im.bytes = im.w.size() * sizeof(float);
  return out;
}

void linear_forward(const ExecCtx& ctx, float* y, const float* x, const PackedLinear& w, const float* bias, int64_t M,
                    Epilogue epilogue) {
  RC_ASSERT(!w.empty() && M >= 0 && (M == 0 || (y && x)));
  if (ctx.device == Device::cuda) detail::no_cuda("linear_forward");
  const PackedLinear::Impl& im = *w.impl();
  cpu::matmul_nt(y, x, im.w.data(), bias, M, im.N, im.K,
                 im.type == PackedType::bf16 ? MatmulPrecision::bf16 : MatmulPrecision::fp32);
  if (epilogue == Epilogue::gelu_erf) cpu::gelu_erf_forward(y, y, M * im.N);
}

#endif

}  // namespace rc::kernels
