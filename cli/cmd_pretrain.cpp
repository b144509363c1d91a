// roberta pretrain — masked-language-model training (RobertaForMaskedLM), as transformers'
// run_mlm.py with HF Trainer (include/roberta/pretrain.h): train's loop and flags
// (training_flags.h) plus run_mlm.py's data options, and the same SageMaker contract.
#include <cstdio>
#include <cstdlib>

#include "commands.h"
#include "model_source.h"
#include "roberta/pretrain.h"
#include "sagemaker_train.h"
#include "training_flags.h"

namespace rc::cli {
namespace {

struct PretrainFlags {
  PretrainOptions o;
  TrainingFlags loop;
  std::string revision;
};

}  // namespace

void add_pretrain_command(CLI::App& app) {
  auto f = std::make_shared<PretrainFlags>();
  auto* cmd = app.add_subcommand(
      "pretrain",
      "Masked-language-model training (RobertaForMaskedLM): continue a pretrained checkpoint on your domain's "
      "text, or pretrain a `roberta init` model from scratch");
  cmd->add_option("--model", f->o.model_dir,
                  "Starting checkpoint: HF folder (any head; a missing lm_head is initialised) or Hugging Face model "
                  "id (org/name[@rev])")
      ->required();
  add_revision_option(*cmd, f->revision);
  cmd->add_option("--data", f->o.data, "Unlabelled texts: .txt (one a line), .jsonl ({\"text\"}) or .csv/.tsv")
      ->required();
  cmd->add_option("--output", f->o.output_dir, "Output folder (HF RobertaForMaskedLM layout; checkpoint-N/ inside)")
      ->required();
  cmd->add_option("--eval-data", f->o.eval_data, "Held-out texts (default: the last --validation-split-percentage)");
  cmd->add_option("--validation-split-percentage", f->o.validation_split_percentage,
                  "Percent of --data held out for eval loss / perplexity when no --eval-data")
      ->capture_default_str();
  cmd->add_flag("--group-texts", f->o.group_texts,
                "Concatenate the texts and cut blocks of --max-length tokens (run_mlm.py's default; default here: "
                "line by line)");
  cmd->add_option("--mlm-probability", f->o.mlm_probability, "Fraction of tokens masked (then 80/10/10)")
      ->capture_default_str();
  cmd->add_flag("--whole-word-mask", f->o.whole_word_mask,
                "Mask whole words (DataCollatorForWholeWordMask): a row's words in random order until "
                "--mlm-probability of its tokens; a word is what whitespace delimits");
  cmd->add_option("--generator", f->o.generator,
                  "ELECTRA's replaced-token detection instead of masked LM: this masked-LM folder (same "
                  "tokenizer), frozen, fills the masked positions with sampled tokens, and --model becomes a "
                  "two-label token classifier (original, replaced) over every token; fine-tune its output with "
                  "`train --task text-classification`");
  cmd->add_option("--max-length", f->o.max_length, "Tokens per example (line by line: truncation; blocks: size)")
      ->capture_default_str();
  cmd->add_option("--seed", f->o.seed, "Seeds data order, masks, dropout and a new lm_head")->capture_default_str();
  cmd->add_option("--text-column", f->o.text_column, "JSONL/CSV text field")->capture_default_str();
  add_training_flags(*cmd, f->o, f->loop);
  relax_required_flags_for_sagemaker(*cmd);  // `pretrain` with no flags in a SageMaker job
  cmd->callback([f, cmd] {
    if (run_sagemaker_training(*cmd)) return;  // re-enters this command with flags from /opt/ml
    PretrainOptions o = f->o;
    apply_training_flags(f->loop, o);
    o.model_dir = resolve_model_source(o.model_dir.string(), f->revision);
    const PretrainSummary s = pretrain(o);
    if (s.world_process_zero) std::printf("%s\n", s.to_json(2).c_str());  // data parallel: rank 0 reports
    std::fflush(stdout);
    if (s.interrupted) std::exit(130);  // as a shell reports a SIGINT-ended command
  });
}

}  // namespace rc::cli
