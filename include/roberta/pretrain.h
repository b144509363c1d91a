// Masked-language-model pretraining (RobertaForMaskedLM), what transformers' run_mlm.py does
// with HF Trainer: from any checkpoint (domain-adaptive: continue a pretrained model) or from
// `roberta init` (from scratch). The CLI's `pretrain` is a thin wrapper over pretrain().
//
// Output folder: config.json (architectures ["RobertaForMaskedLM"]), model.safetensors (the
// tied decoder left out, as transformers saves it), tokenizer files, training_args.json,
// trainer_state.json, eval_results.json (eval_loss, perplexity), metrics.jsonl, and
// checkpoint-N/ folders with the AdamW state for a bit-identical --resume.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace rc {

struct PretrainOptions {
  std::filesystem::path model_dir;  // any RoBERTa checkpoint (its lm_head is used if present)
  std::filesystem::path data;       // .txt (a text a line), .jsonl ({"text"}), .csv/.tsv (header)
  std::filesystem::path eval_data;  // optional held-out file; else validation_split_percentage
  std::filesystem::path output_dir;
  std::string text_column = "text";
  int64_t validation_split_percentage = 5;  // run_mlm.py's default
  bool group_texts = false;                 // pack texts into blocks of max_length (run_mlm.py)
  double mlm_probability = 0.15;
  int max_length = 128;
  int64_t epochs = 3;
  int64_t max_steps = 0;  // > 0 overrides epochs
  int64_t batch_size = 32;
  int64_t grad_accum = 1;
  double lr = 5e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_epsilon = 1e-8;
  double max_grad_norm = 1.0;
  std::string lr_scheduler = "linear";
  double warmup_ratio = 0.0;
  int64_t warmup_steps = 0;
  uint64_t seed = 42;
  bool bf16 = false;
  std::optional<float> dropout;
  int64_t eval_every = 0;  // 0: at the end of each epoch
  int64_t eval_batch_size = 64;
  int64_t logging_steps = 50;
  int64_t save_total_limit = 0;
  bool resume = false;
  std::filesystem::path metrics_file;
  std::filesystem::path tensorboard_dir;
  int progress = -1;
};

struct PretrainSummary {
  int64_t global_step = 0;
  double epoch = 0, train_loss = 0, train_runtime = 0, train_tokens_per_second = 0;
  std::optional<double> eval_loss, perplexity;
  bool interrupted = false;
  std::string to_json(int indent = 2) const;
};

PretrainSummary pretrain(const PretrainOptions& options);

}  // namespace rc
