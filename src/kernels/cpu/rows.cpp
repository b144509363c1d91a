// CPU rows.h: a batch's rows are few (B ≤ a few hundred), so these are plain loops; the
// gather/scatter copy whole rows.
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"

namespace rc::kernels::cpu {

void position_ids(int32_t* positions, const int32_t* ids, int64_t B, int64_t T, int32_t pad) noexcept {
  for (int64_t b = 0; b < B; ++b) {
    int32_t count = 0;
    const int32_t* row = ids + b * T;
    int32_t* out = positions + b * T;
    for (int64_t t = 0; t < T; ++t) out[t] = row[t] != pad ? pad + ++count : pad;
  }
}

void gather_first_tokens(float* dst, const float* src, int64_t B, int64_t T, int64_t C) noexcept {
  for (int64_t b = 0; b < B; ++b) std::memcpy(dst + b * C, src + b * T * C, size_t(C) * sizeof(float));
}

void scatter_first_tokens(float* dst, const float* src, int64_t B, int64_t T, int64_t C) noexcept {
  zero(dst, B * T * C);
  for (int64_t b = 0; b < B; ++b) std::memcpy(dst + b * T * C, src + b * C, size_t(C) * sizeof(float));
}

void gather_rows(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C) noexcept {
  for (int64_t m = 0; m < M; ++m) std::memcpy(dst + m * C, src + index[m] * C, size_t(C) * sizeof(float));
}

void scatter_rows(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C) noexcept {
  for (int64_t m = 0; m < M; ++m) std::memcpy(dst + index[m] * C, src + m * C, size_t(C) * sizeof(float));
}

void mean_forward(float* out, const float* x, int64_t n) noexcept {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]);
  out[0] = float(s / double(n));
}

}  // namespace rc::kernels::cpu
