// Scalar oracle for AdamW (optimizer.h): torch.optim.AdamW's single-tensor formula, with
// every element computed in double and stored as float (torch computes the bias corrections
// in Python double too).
#include <cmath>
#include <cstdint>

#include "kernels/optimizer.h"

namespace rc::kernels::ref {

void adamw_step(float* params, const float* grads, float* m, float* v, const AdamWSegment* segments,
                int64_t num_segments, const AdamWHyper& h) {
  const double lr = h.lr, b1 = h.beta1, b2 = h.beta2, eps = h.eps, wd = h.weight_decay;
  const double bc1 = 1.0 - std::pow(b1, double(h.step)), bc2 = 1.0 - std::pow(b2, double(h.step));
  const double step_size = lr / bc1, bc2_sqrt = std::sqrt(bc2);
  for (int64_t s = 0; s < num_segments; ++s) {
    const AdamWSegment& seg = segments[s];
    for (int64_t i = seg.offset; i < seg.offset + seg.n; ++i) {
      const double g = double(grads[i]) * double(h.grad_scale);
      double p = params[i];
      if (seg.decay) p *= 1.0 - lr * wd;
      const double mi = b1 * m[i] + (1.0 - b1) * g;
      const double vi = b2 * v[i] + (1.0 - b2) * g * g;
      p -= step_size * mi / (std::sqrt(vi) / bc2_sqrt + eps);
      params[i] = float(p);
      m[i] = float(mi);
      v[i] = float(vi);
    }
  }
}

}  // namespace rc::kernels::ref
