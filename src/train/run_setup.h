// What fit() settles before its first step: the execution context, the model's head and
// labels, the output folder, the training_args.json view of the options, and the hashes that
// identify a run's data and starting weights (resume and data-parallel rank checks).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kernels/exec_ctx.h"
#include "model/roberta_model.h"
#include "roberta/trainer.h"
#include "train/data_order.h"
#include "train/train_step.h"

namespace rc::train {

// --device and --bf16: on CUDA bf16 means tensor-core GEMMs; on the CPU only where
// AVX512-BF16/AMX run it natively (a warning and fp32 otherwise).
kernels::ExecCtx make_ctx(bool bf16, const std::string& device);

// AdamW and the schedule from the flags Trainer and run_mlm.py share (TrainOptions,
// PretrainOptions: same names, same meaning).
// Field by field (alike in shape to other struct fills, e.g. Classifier's ModelInfo).
template <class Options>
OptimConfig optim_config(const Options& o, LrSchedule schedule) {
  OptimConfig oc;
  oc.weight_decay = o.weight_decay;
  oc.beta1 = o.adam_beta1;
  oc.beta2 = o.adam_beta2;
  oc.eps = o.adam_epsilon;
  oc.max_grad_norm = o.max_grad_norm;
  if constexpr (requires { o.layer_lr_decay; }) oc.layer_lr_decay = o.layer_lr_decay;  // fine-tuning only
  oc.schedule = schedule;
  return oc;
}
// The model's dropout probabilities, all replaced by --dropout when given.
template <class Options>
model::DropoutConfig dropout_config(const Options& o, const model::RobertaConfig& cfg) {
  model::DropoutConfig d = model::DropoutConfig::from(cfg);
  if (o.dropout) d.hidden = d.attention = d.classifier = *o.dropout;
  return d;
}

// A model with another config (labels renamed, problem type) but the same parameters.
std::unique_ptr<model::RobertaModel> with_config(const model::RobertaModel& m, model::RobertaConfig cfg);
// A new head of the same kind with `labels`, HF-initialised; the body copied by name.
std::unique_ptr<model::RobertaModel> reheaded(const model::RobertaModel& m, const std::vector<std::string>& labels,
                                              uint64_t seed);

// Refuses an output folder that is the starting checkpoint or not writable; creates it.
void prepare_output_dir(const std::filesystem::path& out, const std::filesystem::path& model_dir);

// training_args.json (HF's names).
nlohmann::json options_json(const TrainOptions& o, int64_t total_steps, int64_t warmup, bool bf16_active);

uint64_t fingerprint(const TokenizedSplit& t);    // the data, sampled
uint64_t hash_floats(const float* p, int64_t n);  // every bit of the weights
uint64_t hash_text(const std::string& s);

}  // namespace rc::train
