// Scalar oracles for rows.h.
#include <cstring>

#include "kernels/rows.h"

namespace rc::kernels::ref {

void position_ids(int32_t* positions, const int32_t* ids, int64_t B, int64_t T, int32_t pad) {
  for (int64_t b = 0; b < B; ++b) {
    int32_t count = 0;
    for (int64_t t = 0; t < T; ++t) positions[b * T + t] = ids[b * T + t] != pad ? pad + ++count : pad;
  }
}

void gather_first_tokens(float* dst, const float* src, int64_t B, int64_t T, int64_t C) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) dst[b * C + c] = src[b * T * C + c];
}

void scatter_first_tokens(float* dst, const float* src, int64_t B, int64_t T, int64_t C) {
  for (int64_t i = 0; i < B * T * C; ++i) dst[i] = 0.0f;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) dst[b * T * C + c] = src[b * C + c];
}

void gather_rows(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) dst[m * C + c] = src[index[m] * C + c];
}

void scatter_rows(float* dst, const float* src, const int64_t* index, int64_t M, int64_t C) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) dst[index[m] * C + c] = src[m * C + c];
}

void mean_forward(float* out, const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]);
  out[0] = float(s / double(n));
}

}  // namespace rc::kernels::ref
