// Checks + dispatch for linear.h: on the weight kind, then on the device. The only place the
// model's GEMMs go through (matmul.h's backward products aside).
#include "kernels/linear.h"

#include "kernels/activation.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "kernels/profile.h"

namespace rc::kernels {

void linear_forward(const ExecCtx& ctx, void* y, ActType y_type, const void* x, ActType x_type, const LinearWeight& w,
                    const float* bias, int64_t M, Epilogue epilogue, const float* x_scale, float* y_scale) {
  RC_ASSERT(M >= 0 && w.n > 0 && w.k > 0 && (M == 0 || (y && x)));
  RC_ASSERT((x_type == ActType::s8) == (x_scale != nullptr) && (y_type == ActType::s8) == (y_scale != nullptr));
  switch (w.kind) {
    case LinearWeight::Kind::f32: {
      // bf16 x: the training step's saved bf16 activation (CPU, bf16 GEMMs; matmul_nt_w16).
      RC_ASSERT(w.w && (x_type == ActType::f32 || x_type == ActType::bf16) && y_type == ActType::f32);
      float* yf = static_cast<float*>(y);
      const bool x16 = x_type == ActType::bf16;
      matmul_nt_w16(ctx, yf, x16 ? nullptr : static_cast<const float*>(x), w.w, w.w16, bias, M, w.n, w.k,
                    x16 ? static_cast<const uint16_t*>(x) : nullptr);
      if (epilogue == Epilogue::gelu_erf) {
        const ProfileScope gelu(ctx.profiler, OpFamily::gelu);  // a pass of its own: not GEMM time
        gelu_erf_forward(ctx, yf, yf, M * w.n);
      }
      return;
    }
    case LinearWeight::Kind::packed:
      RC_ASSERT(w.packed && !w.packed->empty());
      RC_CHECK(ctx.device == Device::cpu, Errc::unsupported,
               "linear_forward: packed bf16/int8 weights are a CPU weight format"
               "\nHINT: on CUDA keep fp32 weights and use bf16 GEMMs (--precision bf16)");
      RC_ASSERT((x_type != ActType::s8 && y_type != ActType::s8) || w.packed->type() == PackedType::s8);
      return cpu::packed_linear_forward(y, y_type, x, x_type, *w.packed, bias, M, epilogue, x_scale, y_scale);
  }
}

void linear_forward(const ExecCtx& ctx, void* y, ActType y_type, const void* x, ActType x_type, const PackedLinear& w,
                    const float* bias, int64_t M, Epilogue epilogue, const float* x_scale, float* y_scale) {
  RC_ASSERT(!w.empty());
  linear_forward(ctx, y, y_type, x, x_type, LinearWeight::of(w), bias, M, epilogue, x_scale, y_scale);
}

}  // namespace rc::kernels
