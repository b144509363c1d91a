// The portable PackedLinear path (packed_linear_impl.h): plain row-major fp32 / bf16-rounded /
// int8 weights and loops of our own, used without oneDNN or where it refuses a type; on aarch64
// with BF16 + I8MM, BFMMLA / SMMLA panels for cpu/neon/bf16.cpp (onednn_linear.cpp's comment).
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/bf16_convert.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/neon/neon_kernels.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/cpu/packed_linear_impl.h"
#include "kernels/profile.h"

namespace rc::kernels::cpu::portable {

void quantize_weights(std::vector<int8_t>& q, std::vector<float>& scales, const float* w, int64_t N, int64_t K) {
  // NaN is lost in a row's absolute maximum (max ignores it) and then rounds to some int8
  // value, so a NaN weight would give a finite, meaningless answer where fp32 and bf16 give
  // NaN (which the model refuses). int8 cannot represent NaN or Inf: refused here, once, at
  // pack time. `|x| <= FLT_MAX` is false for both, and vectorises.
  for (int64_t n = 0; n < N; ++n) {
    const float* row = w + n * K;
    bool finite = true;
    for (int64_t k = 0; k < K; ++k) finite &= std::fabs(row[k]) <= std::numeric_limits<float>::max();
    RC_CHECK(finite, Errc::format, "int8 weights: row ", n, " of the (", N, ", ", K,
             ") weight has a NaN or Inf value, which int8 cannot represent");
  }
  q.resize(size_t(N * K));
  scales.resize(size_t(N));
  quantize_rows_s8(q.data(), scales.data(), w, N, K);
}

#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN
// Where oneDNN may not run int8
// (no VNNI: onednn_matmul.h's int8_gemm_ok), the plain loops below were ~6× slower than the
// fp32 model (docs/benchmarks.md). The int8 values (our quantisers give [-127, 127]) are widened
// to fp32 and K is cut in chunks of ≤ 1024, so every partial sum is an integer of magnitude
// ≤ 1024·127² = 16,516,096 < 2^24: exact in fp32 in any summation order; the chunks are added
// in int32. W is widened on every call (2.4 M values for the FFN: ~1 ms) so that the model
// keeps its int8 memory. False when oneDNN refuses fp32 too (then the loops run).
bool gemm_s8_on_fp32(int32_t* acc, const int8_t* xq, const int8_t* wq, int64_t M, int64_t N, int64_t K) {
  constexpr int64_t kExactK = 1024;
  thread_local std::vector<float> xf_buf, wf_buf, part_buf;
  float* xf = grow(xf_buf, M * K);
  float* wf = grow(wf_buf, N * K);
  float* part = grow(part_buf, M * N);
  {
    const ProfileScope conv(current_profiler(), OpFamily::convert);
#pragma omp parallel for schedule(static) if (M * K >= (1 << 16))
    for (int64_t i = 0; i < M * K; ++i) xf[i] = float(xq[i]);
#pragma omp parallel for schedule(static) if (N * K >= (1 << 16))
    for (int64_t i = 0; i < N * K; ++i) wf[i] = float(wq[i]);
  }
  for (int64_t k0 = 0; k0 < K; k0 += kExactK) {
    const int64_t kc = K - k0 < kExactK ? K - k0 : kExactK;
    if (!onednn::matmul(part, {xf + k0, K, 1}, {wf + k0, 1, K}, nullptr, M, N, kc, false, MatmulPrecision::fp32))
      return false;
    const bool first = k0 == 0;
#pragma omp parallel for schedule(static) if (M * N >= (1 << 16))
    for (int64_t i = 0; i < M * N; ++i) acc[i] = (first ? 0 : acc[i]) + int32_t(part[i]);
  }
  return true;
}
#else
bool gemm_s8_on_fp32(int32_t*, const int8_t*, const int8_t*, int64_t, int64_t, int64_t) { return false; }
#endif

void fallback_forward(const PackedLinear::Impl& im, void* y, ActType y_type, const void* x, ActType x_type,
                      const float* bias, int64_t M, Epilogue epilogue, const float* x_scale, float* y_scale) {
  const int64_t N = im.N, K = im.K;
  thread_local std::vector<float> xf_buf, yf_buf;
  thread_local std::vector<int8_t> xq_buf;
  thread_local std::vector<float> xs_buf;
  float* yf = y_type == ActType::f32 ? static_cast<float*>(y) : grow(yf_buf, M * N);
  if (im.type == PackedType::s8) {
    const int8_t* xq = static_cast<const int8_t*>(x);
    const float* xs = x_scale;
    if (x_type != ActType::s8) {  // else quantised by the op before (GemmInput)
      const ProfileScope conv(current_profiler(), OpFamily::convert);
      int8_t* q = grow(xq_buf, M * K);
      float* s = grow(xs_buf, M);
      if (x_type == ActType::f32)
        quantize_rows_s8(q, s, static_cast<const float*>(x), M, K);
      else
        quantize_rows_s8_bf16(q, s, static_cast<const uint16_t*>(x), M, K);
      xq = q;
      xs = s;
    }
    const int8_t* wq = im.wq.data();
    thread_local std::vector<int32_t> acc_buf;
    int32_t* acc = grow(acc_buf, M * N);
#if defined(__aarch64__)
    if (!im.wq_mmla.empty()) {
      cpu::neon::gemm_s8_smmla(acc, xq, im.wq_mmla.data(), M, N, K);
      wq = nullptr;
    }
#endif
#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN
    if (wq && gemm_s8_on_fp32(acc, xq, wq, M, N, K)) wq = nullptr;
#endif
    if (wq) {
#pragma omp parallel for collapse(2) schedule(static)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          int32_t a = 0;
          for (int64_t k = 0; k < K; ++k) a += int32_t(xq[m * K + k]) * int32_t(wq[n * K + k]);
          acc[m * N + n] = a;
        }
    }
    const bool f = y_type == ActType::f32;
    const ProfileScope epi(current_profiler(), OpFamily::epilogue);
    thread_local std::vector<uint16_t> yb_buf;
    uint16_t* yb = y_type == ActType::s8 ? grow(yb_buf, M * N) : static_cast<uint16_t*>(y);
    cpu::dequantize_rows(f ? static_cast<float*>(y) : nullptr, f ? nullptr : yb, acc, xs, im.w_scales.data(), bias, M,
                         N, epilogue == Epilogue::gelu_erf);
    if (y_type == ActType::s8) quantize_rows_s8_bf16(static_cast<int8_t*>(y), y_scale, yb, M, N);
    return;
  } else if (!im.wmmla.empty()) {
#if defined(__aarch64__)
    if (x_type == ActType::bf16)
      cpu::neon::linear_bf16_bfmmla_bf16in(yf, static_cast<const uint16_t*>(x), im.wmmla.data(), bias, M, N, K);
    else
      cpu::neon::linear_bf16_bfmmla(yf, static_cast<const float*>(x), im.wmmla.data(), bias, M, N, K);
#endif
  } else {
    const float* xf = static_cast<const float*>(x);
    MatmulPrecision prec = im.type == PackedType::bf16 ? MatmulPrecision::bf16 : MatmulPrecision::fp32;
    if (x_type == ActType::bf16) {
      const ProfileScope conv(current_profiler(), OpFamily::convert);
      float* buf = grow(xf_buf, M * K);
      convert_bf16_to_f32(buf, static_cast<const uint16_t*>(x), M * K);
      xf = buf;
    }
#if defined(RC_WITH_ONEDNN) && RC_WITH_ONEDNN
    if (prec == MatmulPrecision::bf16 && onednn::bf16_runs_on_fp32_gemm()) {
      // wf holds bf16-rounded weights already: round x alone (bf16 x is exact as it is) and
      // take the fp32 GEMM, rather than matmul_nt's bf16 emulation rounding W on every call.
      if (x_type != ActType::bf16) {
        const ProfileScope conv(current_profiler(), OpFamily::convert);
        float* buf = grow(xf_buf, M * K);
        round_to_bf16(buf, xf, M * K);
        xf = buf;
      }
      prec = MatmulPrecision::fp32;
    }
#endif
    cpu::matmul_nt(yf, xf, im.wf.data(), bias, M, N, K, prec);
  }
  if (epilogue == Epilogue::gelu_erf) {
    const ProfileScope gelu(current_profiler(), OpFamily::gelu);
    cpu::gelu_erf_forward(yf, yf, M * N);
  }
  if (y_type == ActType::bf16) {
    const ProfileScope conv(current_profiler(), OpFamily::convert);
    cpu::convert_f32_to_bf16(static_cast<uint16_t*>(y), yf, M * N);
  }
}

void pack_fallback(PackedLinear::Impl& im, const float* w) {
  im.onednn = false;
  const int64_t N = im.N, K = im.K;
  if (im.type == PackedType::s8) {
    quantize_weights(im.wq, im.w_scales, w, N, K);
#if defined(__aarch64__)
    if (cpu::neon::bf16_enabled()) {  // SMMLA panels of the same int8 weights
      im.wq_mmla.resize(size_t(cpu::neon::smmla_packed_size(N, K)));
      cpu::neon::pack_smmla_weights(im.wq_mmla.data(), im.wq.data(), N, K);
      std::vector<int8_t>().swap(im.wq);
      im.bytes = im.wq_mmla.size() + im.w_scales.size() * sizeof(float);
      return;
    }
#endif
    im.bytes = im.wq.size() + im.w_scales.size() * sizeof(float);
    return;
  }
#if defined(__aarch64__)
  if (im.type == PackedType::bf16 && cpu::neon::bf16_enabled()) {  // BFMMLA: the same bf16-rounded W
    im.wmmla.resize(size_t(cpu::neon::bfmmla_packed_size(N, K)));
    cpu::neon::pack_bfmmla_weights(im.wmmla.data(), w, N, K);
    im.bytes = im.wmmla.size() * sizeof(uint16_t);
    return;
  }
#endif
  im.wf.assign(w, w + N * K);
  if (im.type == PackedType::bf16) round_to_bf16(im.wf.data(), im.wf.data(), N * K);
  im.bytes = im.wf.size() * sizeof(float);
}

}  // namespace rc::kernels::cpu::portable
