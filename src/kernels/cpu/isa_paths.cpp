// The table of kernels/cpu/isa_paths.h: what each dispatch function in kernels/cpu/*.cpp calls
// for each path. Keep in step with those functions.
#include "kernels/cpu/isa_paths.h"

#include "device/cpu_isa.h"
#include "kernels/cpu/avx2/avx2_kernels.h"
#include "kernels/cpu/avx512/avx512_kernels.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/neon/neon_kernels.h"
#include "tensor/bf16.h"

namespace rc::kernels::cpu {

namespace {

void convert_generic(uint16_t* dst, const float* src, int64_t n) noexcept {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

std::vector<CpuPath> make_paths() {
  std::vector<CpuPath> v;
  v.push_back({"generic", true, generic::layernorm_forward, generic::add_layernorm_forward, generic::layernorm_backward,
               generic::gelu_erf_forward, generic::gelu_erf_backward, generic::adamw_step, generic::attention_forward,
               generic::attention_backward, generic::quantize_rows_s8, generic::quantize_rows_s8_bf16,
               generic::dequantize_rows, convert_generic});
#if defined(__x86_64__)
  v.push_back({"avx2", avx2::supported(), avx2::layernorm_forward, avx2::add_layernorm_forward,
               avx2::layernorm_backward, avx2::gelu_erf_forward, avx2::gelu_erf_backward, avx2::adamw_step,
               avx2::attention_forward, avx2::attention_backward, avx2::quantize_rows_s8, avx2::quantize_rows_s8_bf16,
               avx2::dequantize_rows, avx2::convert_f32_to_bf16});
  v.push_back({"avx512", avx512::supported(), avx512::layernorm_forward, avx512::add_layernorm_forward,
               avx512::layernorm_backward, avx512::gelu_erf_forward, avx512::gelu_erf_backward, avx512::adamw_step,
               avx512::attention_forward, avx512::attention_backward, avx512::quantize_rows_s8,
               avx512::quantize_rows_s8_bf16, avx512::dequantize_rows,
               cpu_features().avx512_bf16 ? avx512::convert_f32_to_bf16 : avx2::convert_f32_to_bf16});
#elif defined(__aarch64__)
  const CpuPath n{"neon",
                  neon::supported(),
                  neon::layernorm_forward,
                  neon::add_layernorm_forward,
                  neon::layernorm_backward,
                  neon::gelu_erf_forward,
                  neon::gelu_erf_backward,
                  neon::adamw_step,
                  neon::attention_forward,
                  neon::attention_backward,
                  neon::quantize_rows_s8,
                  neon::quantize_rows_s8_bf16,
                  neon::dequantize_rows,
                  neon::convert_f32_to_bf16};
  v.push_back(n);
  CpuPath nb = n;
  nb.name = "neon_bf16";
  nb.runnable = neon::bf16_supported();
  nb.convert_f32_to_bf16 = neon::convert_f32_to_bf16_bfcvt;
  v.push_back(nb);
  CpuPath s = n;
  s.name = "sve";
  s.runnable = sve::supported();
  s.layernorm_forward = sve::layernorm_forward;
  s.add_layernorm_forward = sve::add_layernorm_forward;
  s.gelu_erf_forward = sve::gelu_erf_forward;
  s.gelu_erf_backward = sve::gelu_erf_backward;
  if (neon::bf16_supported()) s.convert_f32_to_bf16 = neon::convert_f32_to_bf16_bfcvt;
  v.push_back(s);
#endif
  return v;
}

}  // namespace

const std::vector<CpuPath>& cpu_paths() {
  static const std::vector<CpuPath> paths = make_paths();
  return paths;
}

const CpuPath* find_cpu_path(std::string_view name) {
  for (const CpuPath& p : cpu_paths())
    if (name == p.name) return &p;
  return nullptr;
}

}  // namespace rc::kernels::cpu
