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
  RC_CHECK(p.batch_size > 0 && p.grad_accum > 0 && p.eval_batch_size > 0, Errc::invalid_argument,
           "--batch-size and --grad-accum must be > 0");
  // The flags run_mlm.py shares with the Trainer, field by field.
  TrainOptions o;
  o.model_dir = p.model_dir;
  o.data = p.data;
  o.output_dir = p.output_dir;
  o.text_column = p.text_column;
  o.epochs = p.epochs;
  o.max_steps = p.max_steps;
  o.batch_size = p.batch_size;
  o.grad_accum = p.grad_accum;
  o.lr = p.lr;
  o.weight_decay = p.weight_decay;
  o.adam_beta1 = p.adam_beta1;
  o.adam_beta2 = p.adam_beta2;
  o.adam_epsilon = p.adam_epsilon;
  o.max_grad_norm = p.max_grad_norm;
  o.lr_scheduler = p.lr_scheduler;
  o.warmup_ratio = p.warmup_ratio;
  o.warmup_steps = p.warmup_steps;
  o.max_length = p.max_length;
  o.seed = p.seed;
  o.bf16 = p.bf16;
  o.dropout = p.dropout;
  o.eval_every = p.eval_every;
  o.eval_batch_size = p.eval_batch_size;
  o.logging_steps = p.logging_steps;
  o.save_total_limit = p.save_total_limit;
  o.resume = p.resume;
  o.metrics_file = p.metrics_file;
  o.tensorboard_dir = p.tensorboard_dir;
  o.progress = p.progress;
  o.metric = "loss";
  const TrainSummary s = train::run_training(
      o, [&](const std::filesystem::path& resume_dir, bool) { return train::setup_masked_lm_task(p, resume_dir); });
  PretrainSummary r;
  r.global_step = s.global_step;
  r.epoch = s.epoch;
  r.train_loss = s.train_loss;
  r.train_runtime = s.train_runtime;
  r.train_tokens_per_second = s.train_tokens_per_second;
  if (s.best_eval) {
    r.eval_loss = s.best_eval->loss;
    r.perplexity = std::exp(s.best_eval->loss);
  }
  r.interrupted = s.interrupted;
  return r;
}

}  // namespace rc
