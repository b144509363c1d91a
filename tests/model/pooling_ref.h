// The plain reference twin of model::pool_hidden_states: sentence-transformers' Pooling
// (models/Pooling.py v5, _forward_padded) written over an explicit 0/1 attention mask, one
// mode at a time, in the tensor operations' own order — no lengths, no shortcuts.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace rc::test {

// mask (B, T) 0/1; tok (B, T, C). Returns (B, C).
inline std::vector<float> pooling_ref(const std::string& mode, const std::vector<float>& tok,
                                      const std::vector<int>& mask, int64_t B, int64_t T, int64_t C) {
  std::vector<float> out(size_t(B * C), 0.0f);
  for (int64_t b = 0; b < B; ++b) {
    auto m = [&](int64_t t) { return mask[size_t(b * T + t)]; };
    auto h = [&](int64_t t, int64_t c) { return tok[size_t((b * T + t) * C + c)]; };
    float* o = &out[size_t(b * C)];
    if (mode == "cls") {  // argmax of the mask: its first 1, or 0
      int64_t first = 0;
      for (int64_t t = 0; t < T; ++t)
        if (m(t)) {
          first = t;
          break;
        }
      for (int64_t c = 0; c < C; ++c) o[c] = h(first, c);
    } else if (mode == "max") {  // masked_fill(mask == 0, -inf).max(dim=1)
      for (int64_t c = 0; c < C; ++c) {
        float best = -std::numeric_limits<float>::infinity();
        for (int64_t t = 0; t < T; ++t) best = std::max(best, m(t) ? h(t, c) : -std::numeric_limits<float>::infinity());
        o[c] = best;
      }
    } else if (mode == "mean" || mode == "mean_sqrt_len_tokens" || mode == "weightedmean") {
      const bool weighted = mode == "weightedmean";
      for (int64_t c = 0; c < C; ++c) {
        double s = 0, n = 0;
        for (int64_t t = 0; t < T; ++t) {
          const double w = double(m(t)) * (weighted ? double(t + 1) : 1.0);
          s += h(t, c) * w;
          n += w;
        }
        n = std::max(n, 1e-9);
        o[c] = float(mode == "mean_sqrt_len_tokens" ? s / std::sqrt(n) : s / n);
      }
    } else if (mode == "lasttoken") {  // flip, max -> index of the last 1; gather from tok * mask
      int64_t idx = -1;
      for (int64_t t = T - 1; t >= 0; --t)
        if (m(t)) {
          idx = t;
          break;
        }
      const int64_t at = idx < 0 ? 0 : idx;  // values == 0: seq_len - (seq_len - 1) - 1 = 0
      for (int64_t c = 0; c < C; ++c) o[c] = h(at, c) * float(m(at));
    }
  }
  return out;
}

}  // namespace rc::test
