// The optimizer step (see train_step.h).
#include "train/train_step.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "kernels/profile.h"
#include "model/mnrl.h"
#include "train/data_order.h"

namespace rc::train {

std::vector<kernels::AdamWSegment> adamw_segments(const model::ParamLayout& layout, bool weight_decay) {
  std::vector<LrGroup> one = adamw_lr_groups(layout, weight_decay, 1.0, 0);  // one group without decay
  return one.empty() ? std::vector<kernels::AdamWSegment>{} : std::move(one.front().segments);
}

double layer_lr_scale(const model::ParamEntry& e, double layer_lr_decay, int64_t num_layers) {
  if (layer_lr_decay == 1.0) return 1.0;
  // Depth: the embeddings 0, encoder layer l at l + 1, everything above the encoder (the
  // heads, BERT's pooler) at num_layers + 1 with the full lr.
  int64_t depth = num_layers + 1;
  if (e.layer >= 0)
    depth = e.layer + 1;
  else if (!e.is_head && int(e.role) < int(model::kFirstLayerRole))  // the embeddings' roles precede the layers'
    depth = 0;
  return std::pow(layer_lr_decay, double(num_layers + 1 - depth));
}

std::vector<LrGroup> adamw_lr_groups(const model::ParamLayout& layout, bool weight_decay, double layer_lr_decay,
                                     int64_t num_layers) {
  RC_CHECK(layer_lr_decay > 0 && layer_lr_decay <= 1, Errc::invalid_argument, "layer-wise lr decay ", layer_lr_decay,
           " is outside (0, 1] (hint: 0.8-0.95 is usual; 1 turns it off)");
  std::vector<LrGroup> groups;
  for (const auto& e : layout.entries()) {
    const double scale = layer_lr_scale(e, layer_lr_decay, num_layers);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const LrGroup& x) { return x.lr_scale == scale; });
    if (g == groups.end()) {
      groups.push_back({scale, {}, {}});
      g = groups.end() - 1;
    }
    const bool decay = weight_decay && e.decay;
    auto& segs = g->segments;
    if (!segs.empty() && segs.back().decay == decay && segs.back().offset + segs.back().n == e.offset) {
      segs.back().n += e.numel;
    } else {
      segs.push_back({e.offset, e.numel, decay});
      g->copies.push_back(nullptr);
    }
  }
  return groups;
}

TrainEngine::TrainEngine(model::RobertaModel& model, const OptimConfig& optim, const kernels::ExecCtx& ctx,
                         const model::DropoutConfig& dropout, uint64_t seed, int64_t max_B, int64_t max_T)
    : model_(model),
      optim_(optim),
      ctx_(ctx),
      dropout_(dropout),
      seed_(seed),
      grads_(kernels::alloc_floats(ctx, model.num_params())),
      m_(kernels::alloc_floats(ctx, model.num_params())),
      v_(kernels::alloc_floats(ctx, model.num_params())),
      groups_(adamw_lr_groups(model.layout(), optim.weight_decay > 0, optim.layer_lr_decay,
                              model.config().num_hidden_layers)),
      ws_(ctx, model.config(), max_B, max_T, model.head_kind()) {
  RC_CHECK(model.device() == ctx.device, Errc::invalid_argument,
           "TrainEngine: move the model to the training device first (RobertaModel::to_device)");
  if (model.head_kind() == model::HeadKind::masked_lm)
    mlm_ws_ = std::make_unique<model::MlmWorkspace>(ctx, model.config(), max_B * max_T);
  if (ctx.device == Device::cpu && ctx.matmul_precision == kernels::MatmulPrecision::bf16) {
    bf16_ = std::make_unique<model::Bf16WeightCopy>(model);
    plan_bf16_copies();
    ws_.bf16_weights = bf16_.get();
  }
}

void TrainEngine::set_extra_params(std::vector<ExtraParam> extra) {
  RC_CHECK(ctx_.device == Device::cpu, Errc::unsupported, "parameters beside the model's train on the CPU only");
  RC_CHECK(step_ == 0, Errc::invalid_argument, "set_extra_params after a step");
  extra_ = std::move(extra);
  extra_n_ = 0;
  for (const ExtraParam& p : extra_) extra_n_ += p.numel;
  const int64_t n = num_trainable();
  grads_ = kernels::alloc_floats(ctx_, n);
  m_ = kernels::alloc_floats(ctx_, n);
  v_ = kernels::alloc_floats(ctx_, n);
}

void TrainEngine::plan_bf16_copies() {
  // One plan over every group's segments (it must cover every bf16 copy), then its pieces back
  // into their groups: plan_adamw emits each segment's pieces in the order of the segments.
  std::vector<kernels::AdamWSegment> all;
  for (const LrGroup& g : groups_) all.insert(all.end(), g.segments.begin(), g.segments.end());
  const model::Bf16WeightCopy::AdamWPlan plan = bf16_->plan_adamw(all);
  size_t piece = 0;
  for (LrGroup& g : groups_) {
    std::vector<kernels::AdamWSegment> segs;
    std::vector<uint16_t*> copies;
    for (const kernels::AdamWSegment& s : g.segments) {
      for (int64_t pos = s.offset; pos < s.offset + s.n; ++piece) {
        RC_CHECK(piece < plan.segments.size() && plan.segments[piece].offset == pos, Errc::internal,
                 "bf16 AdamW plan out of step with its segments");
        segs.push_back(plan.segments[piece]);
        copies.push_back(plan.copies[piece]);
        pos += plan.segments[piece].n;
      }
    }
    g.segments = std::move(segs);
    g.copies = std::move(copies);
  }
  RC_CHECK(piece == plan.segments.size(), Errc::internal, "bf16 AdamW plan pieces left without a group");
}

void TrainEngine::drop_bf16_weights() {
  ws_.bf16_weights = nullptr;
  bf16_.reset();
  groups_ = adamw_lr_groups(model_.layout(), optim_.weight_decay > 0, optim_.layer_lr_decay,
                            model_.config().num_hidden_layers);
}

StepResult TrainEngine::step(std::span<const model::Batch> micro, std::span<const int32_t* const> labels,
                             const MicroLayout& layout) {
  label_targets_.assign(labels.begin(), labels.end());  // no allocation once warm (the step allocates nothing)
  return step(micro, std::span<const model::Targets>(label_targets_), layout);
}

StepResult TrainEngine::step(std::span<const model::Batch> micro, std::span<const model::Targets> labels,
                             const MicroLayout& layout) {
  const int64_t total = layout.total > 0 ? layout.total : int64_t(micro.size());
  RC_ASSERT(micro.size() == labels.size() && total > 0 && int64_t(micro.size()) <= total);
  const int64_t n = num_trainable();
  float* extra_grads = extra_n_ > 0 ? grads_.f32() + model_.num_params() : nullptr;
  // Zeroing and AdamW launch here, before any forward selects the device for this thread.
  kernels::use_device(ctx_);
  kernels::Profiler* prof = ctx_.profiler;  // bench --profile: zeroing and the update are the optimizer's share
  if (prof) prof->set_phase(kernels::Phase::optimizer);
  kernels::profiled(ctx_, kernels::OpFamily::optimizer, [&] { kernels::zero(ctx_, grads_.f32(), n); });
  const float scale = 1.0f / float(total);
  double loss = 0;
  // One dropout seed per step; each row's masks are keyed by its global sample index in the
  // step (global micro-batch · per-process batch size + row; kernels/dropout.h).
  const uint64_t dropout_seed = mix_seed(seed_, uint64_t(step_));
  for (size_t i = 0; i < micro.size(); ++i) {
    const uint64_t global_micro = uint64_t(layout.first + int64_t(i) * layout.stride);
    model::Batch mb = micro[i];
    mb.first_sample = global_micro * uint64_t(ws_.max_B());
    if (ready_ && i + 1 == micro.size()) ws_.on_layer_grads = ready_;  // grads final after this one
    if (labels[i].ranking) {                                           // an embedding model (train/task_embedding.cpp)
      RC_CHECK(model::dense_param_count(labels[i].ranking->dense) == extra_n_, Errc::invalid_argument,
               "the ranking target's Dense modules are not the engine's extra parameters (set_extra_params)");
      loss += double(model::mnrl_forward_backward(ctx_, model_, mb, *labels[i].ranking, dropout_, dropout_seed, scale,
                                                  grads_.f32(), ws_, extra_grads));
      continue;
    }
    if (mlm_ws_) {
      loss += model::mlm_forward_backward(ctx_, model_, mb, labels[i].labels, dropout_, dropout_seed, scale,
                                          grads_.f32(), ws_, *mlm_ws_)
                  .mean();
      continue;
    }
    loss += double(model::forward_backward(ctx_, model_, mb, labels[i], dropout_, dropout_seed, scale, grads_.f32(),
                                           ws_, nullptr));
  }
  ws_.on_layer_grads = nullptr;
  if (prof) prof->set_phase(kernels::Phase::optimizer);
  const kernels::ProfileScope optimizer_scope(prof, kernels::OpFamily::optimizer);
  if (sync_) sync_(grads_.f32(), n, &loss);
  StepResult r;
  r.loss = loss / double(total);
  r.grad_norm = std::sqrt(kernels::sum_squares(ctx_, grads_.f32(), n));
  float clip = 1.0f;
  if (optim_.max_grad_norm > 0) {
    // torch: clip_coef = max_norm / (total_norm + 1e-6), applied only when < 1 (fp32).
    const float coef = float(optim_.max_grad_norm) / (float(r.grad_norm) + 1e-6f);
    if (coef < 1.0f) clip = coef;
  }
  r.lr = optim_.schedule.lr(step_);
  kernels::AdamWHyper h;
  h.beta1 = float(optim_.beta1);
  h.beta2 = float(optim_.beta2);
  h.eps = float(optim_.eps);
  h.weight_decay = float(optim_.weight_decay);
  h.step = step_ + 1;
  h.grad_scale = clip;
  float* params = model_.params();  // a write: bumps the version the bf16 copy is checked against
  for (const LrGroup& g : groups_) {
    // torch's param groups: the group's lr also scales its weight decay (p ← p·(1 - lr·wd)).
    h.lr = float(r.lr * g.lr_scale);
    if (bf16_) {
      // The new fp32 master and its bf16 copy in one pass: the copy is fresh for this version.
      kernels::adamw_step_bf16_copy(ctx_, params, grads_.f32(), m_.f32(), v_.f32(), g.segments.data(), g.copies.data(),
                                    int64_t(g.segments.size()), h);
    } else {
      kernels::adamw_step(ctx_, params, grads_.f32(), m_.f32(), v_.f32(), g.segments.data(), int64_t(g.segments.size()),
                          h);
    }
  }
  if (bf16_) bf16_->mark_fresh(model_);
  h.lr = float(r.lr);  // the modules beside the model sit above the encoder: the full lr
  for (int64_t at = model_.num_params(); const ExtraParam& p : extra_) {
    const kernels::AdamWSegment seg{0, p.numel, optim_.weight_decay > 0 && p.decay};
    kernels::adamw_step(ctx_, p.data, grads_.f32() + at, m_.f32() + at, v_.f32() + at, &seg, 1, h);
    at += p.numel;
  }
  ++step_;
  return r;
}

}  // namespace rc::train
