// Masked-LM pretraining (include/roberta/pretrain.h): run_mlm.py's data preparation
// (mlm_collator.h) as a task (task_masked_lm.cpp) on the one training loop that fine-tuning
// runs (trainer.cpp): the same resume contract, data parallel, loggers, report and checkpoints.
// The masks are a function of (seed, step, example), so a resumed run is bit-identical.
#include "roberta/pretrain.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "core/check.h"
#include "train/task_setup.h"

namespace rc {

std::string PretrainSummary::to_json(int indent) const {
  nlohmann::json j{{"global_step", global_step},
                   {"epoch", epoch},
                   {"train_loss", train_loss},
                   {"train_runtime", train_runtime},
                   {"train_tokens_per_second", train_tokens_per_second}};
  if (eval_loss) j["eval_loss"] = *eval_loss;
  if (perplexity) j["perplexity"] = *perplexity;
  if (interrupted) j["interrupted"] = true;
  return j.dump(indent);
}

PretrainSummary pretrain(const PretrainOptions& p) {
  const TrainSummary s = train::run_training(
      p, [&](const std::filesystem::path& resume_dir, bool) { return train::setup_masked_lm_task(p, resume_dir); });
  PretrainSummary r;
  r.global_step = s.global_step;
  r.epoch = s.epoch;
  r.train_loss = s.train_loss;
  r.train_runtime = s.train_runtime;
  r.train_tokens_per_second = s.train_tokens_per_second;
  if (s.best_eval) {
    r.eval_loss = s.best_eval->loss;
    if (p.generator.empty()) r.perplexity = std::exp(s.best_eval->loss);  // masked LM's
  }
  r.interrupted = s.interrupted;
  r.world_process_zero = s.world_process_zero;
  return r;
}

}  // namespace rc
