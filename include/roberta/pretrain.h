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

#include "roberta/trainer.h"

namespace rc {

// run_mlm.py's arguments are HF's TrainingArguments plus its data arguments: here TrainOptions
// (every training flag: device, data parallel, resume, report, TensorBoard, the SageMaker
// contract) plus the masked-LM data options, with run_mlm.py's defaults where they differ from
// train's. TrainOptions' classification fields (labels, problem_type, task, ...) are unused.
struct PretrainOptions : TrainOptions {
  std::filesystem::path eval_data;          // optional held-out file; else validation_split_percentage
  int64_t validation_split_percentage = 5;  // run_mlm.py's default
  bool group_texts = false;                 // pack texts into blocks of max_length (run_mlm.py)
  double mlm_probability = 0.15;
  bool whole_word_mask = false;  // DataCollatorForWholeWordMask's masking, words from the text
  // ELECTRA's replaced-token detection instead of masked LM: this masked-LM folder, frozen,
  // fills the masked positions with sampled tokens and the model (a two-label token classifier,
  // original / replaced) learns which were replaced (train/replaced_tokens.h). Empty: masked LM.
  std::filesystem::path generator;
  PretrainOptions() {
    epochs = 3;
    batch_size = 32;
    lr = 5e-5;
    max_length = 128;
    logging_steps = 50;
    metric = "loss";
  }
};

struct PretrainSummary {
  int64_t global_step = 0;
  double epoch = 0, train_loss = 0, train_runtime = 0, train_tokens_per_second = 0;
  std::optional<double> eval_loss, perplexity;
  bool interrupted = false;
  bool world_process_zero = true;  // false on data-parallel ranks > 0 (they save nothing)
  std::string to_json(int indent = 2) const;
};

PretrainSummary pretrain(const PretrainOptions& options);

}  // namespace rc
