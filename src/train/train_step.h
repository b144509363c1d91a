// One optimizer step, exactly as HF Trainer + torch.optim.AdamW take it:
//   grads ← 0; for each micro-batch: grads += ∂(loss / n_micro)/∂θ  (dropout masks from
//   (seed, step, global sample index)); norm ← ‖grads‖₂ (before clipping, as HF logs it); clip by
//   max_norm / (norm + 1e-6) when that is < 1 (torch.nn.utils.clip_grad_norm_);
//   AdamW with lr = schedule(step) in ONE fused pass (the clip factor rides in grad_scale;
//   in bf16 on the CPU the same pass writes the GEMM weights' bf16 copy, bf16_weights.h);
//   step ← step + 1.
// All buffers (grads, m, v, activations) are allocated once here, on the context's device
// (one Buffer per role; the model must already be there); a step allocates nothing but the
// batch's one copy to the device.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "kernels/exec_ctx.h"
#include "kernels/optimizer.h"
#include "model/bf16_weights.h"
#include "model/mlm_head.h"
#include "model/roberta_model.h"
#include "train/lr_schedule.h"

namespace rc::train {

struct OptimConfig {
  double weight_decay = 0.0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double max_grad_norm = 1.0;  // <= 0: no clipping
  // Layer-wise lr decay (ELECTRA, and the usual torch param groups): the head keeps the lr,
  // encoder layer l of L takes lr · d^(L-l), the embeddings lr · d^(L+1). 1: off (one group).
  double layer_lr_decay = 1.0;
  LrSchedule schedule;
};

// AdamW segments from the layout's decay flags, adjacent runs merged. With weight_decay 0
// every segment is decay = false (HF puts all parameters in the no-decay group then, too).
std::vector<kernels::AdamWSegment> adamw_segments(const model::ParamLayout& layout, bool weight_decay);

// The lr multiplier of a layout entry under layer-wise decay d over num_layers layers (above).
double layer_lr_scale(const model::ParamEntry& e, double layer_lr_decay, int64_t num_layers);

// The parameters that step with one lr (a torch param group): their AdamW segments and, for
// bf16 on the CPU, each segment's bf16 copy (copies[i] for segments[i]; null: none).
struct LrGroup {
  double lr_scale = 1.0;
  std::vector<kernels::AdamWSegment> segments;
  std::vector<uint16_t*> copies;
};
// The layout's segments split into groups by layer_lr_scale, in order of first appearance
// (one group when the decay is 1: adamw_segments' segments).
std::vector<LrGroup> adamw_lr_groups(const model::ParamLayout& layout, bool weight_decay, double layer_lr_decay,
                                     int64_t num_layers);

// A parameter trained beside the model's (a task's, task.h: an embedding model's Dense
// modules), in host memory; decay: whether weight decay applies (not to biases, as HF Trainer).
struct ExtraParam {
  float* data = nullptr;
  int64_t numel = 0;
  bool decay = true;
};

struct StepResult {
  double loss = 0, grad_norm = 0, lr = 0;
};

// Where this process's micro-batches sit among the step's global micro-batches (data
// parallel: rank r of N runs global micro-batches r, r+N, r+2N, ...). Row k of global
// micro-batch g is global sample g·max_B + k of the step (the engine sets
// Batch::first_sample), its dropout masks keyed by that, and every gradient is scaled by
// 1/total, so N ranks × batch b give the same step as one process running all `total`
// micro-batches, or one batch of N·b rows. Default: one process, all of them.
struct MicroLayout {
  int64_t first = 0, stride = 1, total = 0;  // total 0: the number of micro-batches passed
};

// Called once per step after the backward of every local micro-batch and before the norm:
// must replace grads (n floats, on the engine's device) and *loss_sum (this process's sum of
// micro-batch losses) by their sums over all processes. The data-parallel hook.
using GradSync = std::function<void(float* grads, int64_t n, double* loss_sum)>;

class TrainEngine {
 public:
  TrainEngine(model::RobertaModel& model, const OptimConfig& optim, const kernels::ExecCtx& ctx,
              const model::DropoutConfig& dropout, uint64_t seed, int64_t max_B, int64_t max_T);

  // One optimizer step over `micro` batches (labels[i] belongs to micro[i]). A classifier
  // takes one label per row; a masked-LM model (RobertaForMaskedLM) one per token (B·T,
  // -100 where there is no target), its loss the mean over the masked tokens (mlm_head.h).
  // With a MicroLayout, `micro` may be empty (a rank without data at the end of an epoch).
  StepResult step(std::span<const model::Batch> micro, std::span<const int32_t* const> labels,
                  const MicroLayout& layout = {});
  // The same with any head's targets (model::Targets): per-row or per-token labels, or the
  // float targets of multi-label and regression classifiers.
  StepResult step(std::span<const model::Batch> micro, std::span<const model::Targets> targets,
                  const MicroLayout& layout = {});
  void set_grad_sync(GradSync sync) { sync_ = std::move(sync); }
  // Trains `extra` with the model: their gradients follow the model's in grads() (from
  // model().num_params(), in this order), so the gradient norm, clipping and a GradSync cover
  // them, and AdamW updates them with the same hyper-parameters and schedule (moments after the
  // model's in exp_avg() / exp_avg_sq()). A ranking target's Dense modules (mnrl.h) get their
  // gradients there, so these must be those modules' weights and biases in that layout. CPU
  // only; before the first step (it reallocates grads and moments, zero).
  void set_extra_params(std::vector<ExtraParam> extra);
  // The model's parameters and the extra ones: the length of grads(), exp_avg(), exp_avg_sq().
  int64_t num_trainable() const { return model_.num_params() + extra_n_; }
  // Called during the LAST local micro-batch's backward as each encoder layer's gradients
  // become final for the step (layers NL-1 down to 0): the data-parallel hook starts their
  // all-reduce then, and the GradSync call reduces the rest and waits for all of it.
  void set_layer_grads_ready(std::function<void(int64_t layer)> ready) { ready_ = std::move(ready); }

  int64_t global_step() const { return step_; }
  void set_global_step(int64_t s) { step_ = s; }
  // On the context's device (host memory on the CPU).
  float* exp_avg() { return m_.f32(); }
  float* exp_avg_sq() { return v_.f32(); }
  const float* exp_avg() const { return m_.f32(); }
  const float* exp_avg_sq() const { return v_.f32(); }
  const float* grads() const { return grads_.f32(); }
  float* grads() { return grads_.f32(); }
  const kernels::ExecCtx& ctx() const { return ctx_; }
  // Per-op-family timing of the following steps (kernels/profile.h), or null: off.
  void set_profiler(kernels::Profiler* p) { ctx_.profiler = p; }
  model::RobertaModel& model() { return model_; }
  // bf16 on the CPU: the GEMM weights' bf16 copy, written by AdamW with the fp32 master and
  // read by every micro-batch's forward and dX GEMMs (model/bf16_weights.h); null otherwise.
  const model::Bf16WeightCopy* bf16_weights() const { return bf16_.get(); }
  // Drops it: every GEMM converts its weight per call again (the same results; for comparison).
  void drop_bf16_weights();
  const OptimConfig& optim() const { return optim_; }

 private:
  void plan_bf16_copies();  // groups_' segments cut at bf16_'s ranges, each with its copy

  model::RobertaModel& model_;
  OptimConfig optim_;
  kernels::ExecCtx ctx_;
  model::DropoutConfig dropout_;
  uint64_t seed_;
  int64_t step_ = 0;
  Buffer grads_, m_, v_;
  std::vector<LrGroup> groups_;  // with bf16 on the CPU: segments cut at bf16_'s ranges
  std::vector<ExtraParam> extra_;
  int64_t extra_n_ = 0;
  model::TrainWorkspace ws_;
  std::unique_ptr<model::MlmWorkspace> mlm_ws_;  // masked-LM models only
  std::unique_ptr<model::Bf16WeightCopy> bf16_;  // bf16 on the CPU only
  GradSync sync_;
  std::function<void(int64_t)> ready_;
  std::vector<model::Targets> label_targets_;  // step(labels)'s view as Targets
};

}  // namespace rc::train
