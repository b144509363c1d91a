// The optimizer step (see train_step.h).
#include "train/train_step.h"

#include <cmath>

#include "core/check.h"
#include "kernels/profile.h"
#include "model/mnrl.h"
#include "train/data_order.h"

namespace rc::train {

std::vector<kernels::AdamWSegment> adamw_segments(const model::ParamLayout& layout, bool weight_decay) {
  std::vector<kernels::AdamWSegment> segs;
  for (const auto& e : layout.entries()) {
    const bool decay = weight_decay && e.decay;
    if (!segs.empty() && segs.back().decay == decay && segs.back().offset + segs.back().n == e.offset) {
      segs.back().n += e.numel;
    } else {
      segs.push_back({e.offset, e.numel, decay});
    }
  }
  return segs;
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
      segments_(adamw_segments(model.layout(), optim.weight_decay > 0)),
      ws_(ctx, model.config(), max_B, max_T, model.head_kind()) {
  RC_CHECK(model.device() == ctx.device, Errc::invalid_argument,
           "TrainEngine: move the model to the training device first (RobertaModel::to_device)");
  if (model.head_kind() == model::HeadKind::masked_lm)
    mlm_ws_ = std::make_unique<model::MlmWorkspace>(ctx, model.config(), max_B * max_T);
  if (ctx.device == Device::cpu && ctx.matmul_precision == kernels::MatmulPrecision::bf16) {
    bf16_ = std::make_unique<model::Bf16WeightCopy>(model);
    bf16_plan_ = bf16_->plan_adamw(segments_);
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

void TrainEngine::drop_bf16_weights() {
  ws_.bf16_weights = nullptr;
  bf16_.reset();
  bf16_plan_ = {};
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
  h.lr = float(r.lr);
  h.beta1 = float(optim_.beta1);
  h.beta2 = float(optim_.beta2);
  h.eps = float(optim_.eps);
  h.weight_decay = float(optim_.weight_decay);
  h.step = step_ + 1;
  h.grad_scale = clip;
  float* params = model_.params();  // a write: bumps the version the bf16 copy is checked against
  if (bf16_) {
    // The new fp32 master and its bf16 copy in one pass: the copy is fresh for this version.
    kernels::adamw_step_bf16_copy(ctx_, params, grads_.f32(), m_.f32(), v_.f32(), bf16_plan_.segments.data(),
                                  bf16_plan_.copies.data(), int64_t(bf16_plan_.segments.size()), h);
    bf16_->mark_fresh(model_);
  } else {
    kernels::adamw_step(ctx_, params, grads_.f32(), m_.f32(), v_.f32(), segments_.data(), int64_t(segments_.size()), h);
  }
  for (int64_t at = model_.num_params(); const ExtraParam& p : extra_) {
    const kernels::AdamWSegment seg{0, p.numel, optim_.weight_decay > 0 && p.decay};
    kernels::adamw_step(ctx_, p.data, grads_.f32() + at, m_.f32() + at, v_.f32() + at, &seg, 1, h);
    at += p.numel;
  }
  ++step_;
  return r;
}

}  // namespace rc::train
