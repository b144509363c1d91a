// bf16_weights.h.
#include "model/bf16_weights.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/matmul.h"
#include "kernels/profile.h"

namespace rc::model {

Bf16WeightCopy::Bf16WeightCopy(const RobertaModel& model) {
  RC_CHECK(model.device() == Device::cpu, Errc::unsupported, "the bf16 weight copy is for CPU training");
  const RobertaConfig& c = model.config();
  const int64_t C = c.hidden_size, I = c.intermediate_size;
  for (const LayerOffsets& L : model.offsets().layers) {
    layers_.push_back({L.qkv_w, L.attn_out_w, L.ffn_in_w, L.ffn_out_w});
    for (const auto& [off, n] : {std::pair{L.qkv_w, 3 * C * C}, std::pair{L.attn_out_w, C * C},
                                 std::pair{L.ffn_in_w, I * C}, std::pair{L.ffn_out_w, C * I}})
      ranges_.push_back({off, n, 0});
  }
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.offset < b.offset; });
  int64_t at = 0;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    RC_ASSERT(i == 0 || ranges_[i - 1].offset + ranges_[i - 1].n <= ranges_[i].offset);
    ranges_[i].at = at;
    at += ranges_[i].n;
  }
  copy_.resize(size_t(at));
}

void Bf16WeightCopy::refresh(const kernels::ExecCtx& ctx, const RobertaModel& model) {
  if (fresh(model)) return;
  const kernels::ProfileScope conv(ctx.profiler, kernels::OpFamily::convert);
  const float* P = model.params();
  for (const Range& r : ranges_) kernels::convert_to_bf16(ctx, copy_.data() + r.at, P + r.offset, r.n);
  version_ = model.params_version();
  made_ = true;
  ++conversions_;
}

const uint16_t* Bf16WeightCopy::copy_of(int64_t offset, int64_t n) const {
  auto it =
      std::upper_bound(ranges_.begin(), ranges_.end(), offset, [](int64_t o, const Range& r) { return o < r.offset; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  if (offset + n > it->offset + it->n) return nullptr;
  return copy_.data() + it->at + (offset - it->offset);
}

LayerWeights Bf16WeightCopy::attach(LayerWeights w, size_t l) const {
  RC_ASSERT(made_ && l < layers_.size());
  kernels::LinearWeight* views[4] = {&w.qkv, &w.attn_out, &w.ffn_in, &w.ffn_out};
  for (size_t i = 0; i < 4; ++i) {
    kernels::LinearWeight& lw = *views[i];
    RC_ASSERT(lw.kind == kernels::LinearWeight::Kind::f32 && lw.w);
    lw.w16 = copy_of(layers_[l][i], lw.n * lw.k);
    RC_ASSERT(lw.w16);
  }
  return w;
}

Bf16WeightCopy::AdamWPlan Bf16WeightCopy::plan_adamw(std::span<const kernels::AdamWSegment> segments) {
  AdamWPlan plan;
  int64_t covered = 0;
  for (const kernels::AdamWSegment& s : segments) {
    int64_t pos = s.offset;
    const int64_t end = s.offset + s.n;
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), pos,
                               [](int64_t o, const Range& r) { return o < r.offset + r.n; });
    while (pos < end) {
      if (it == ranges_.end() || it->offset >= end) {
        plan.segments.push_back({pos, end - pos, s.decay});
        plan.copies.push_back(nullptr);
        break;
      }
      if (it->offset > pos) {
        plan.segments.push_back({pos, it->offset - pos, s.decay});
        plan.copies.push_back(nullptr);
        pos = it->offset;
      }
      const int64_t e = std::min(end, it->offset + it->n);
      plan.segments.push_back({pos, e - pos, s.decay});
      plan.copies.push_back(copy_.data() + it->at + (pos - it->offset));
      covered += e - pos;
      pos = e;
      if (pos == it->offset + it->n) ++it;
    }
  }
  RC_CHECK(covered == int64_t(copy_.size()), Errc::internal, "AdamW segments leave ", int64_t(copy_.size()) - covered,
           " GEMM weights without their bf16 copy");
  return plan;
}

void Bf16WeightCopy::mark_fresh(const RobertaModel& model) {
  version_ = model.params_version();
  made_ = true;
}

}  // namespace rc::model
