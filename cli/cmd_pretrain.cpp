// roberta pretrain — masked-language-model training (RobertaForMaskedLM), as transformers'
// run_mlm.py with HF Trainer (include/roberta/pretrain.h).
#include <cstdio>
#include <cstdlib>

#include "commands.h"
#include "core/check.h"
#include "roberta/pretrain.h"

namespace rc::cli {
namespace {

struct PretrainFlags {
  PretrainOptions o;
  std::string metrics, tensorboard;
  float dropout = -1;
  int threads = 0;
};

}  // namespace

void add_pretrain_command(CLI::App& app) {
  auto f = std::make_shared<PretrainFlags>();
  // The option table: alike in shape to every command's, on purpose (see commands.h).
  auto* cmd = app.add_subcommand(
      "pretrain",
      "Masked-language-model training (RobertaForMaskedLM): continue a pretrained checkpoint on your domain's "
      "text, or pretrain a `roberta init` model from scratch");
  cmd->add_option("--model", f->o.model_dir,
                  "Starting checkpoint (any RoBERTa folder; a missing lm_head is initialised)")
      ->required();
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
  cmd->add_option("--max-length", f->o.max_length, "Tokens per example (line by line: truncation; blocks: size)")
      ->capture_default_str();
  cmd->add_option("--epochs", f->o.epochs, "Training epochs")->capture_default_str();
  cmd->add_option("--max-steps", f->o.max_steps, "Stop after N optimizer steps (overrides --epochs)");
  cmd->add_option("--batch-size", f->o.batch_size, "Examples per micro-batch")->capture_default_str();
  cmd->add_option("--grad-accum", f->o.grad_accum, "Micro-batches per optimizer step")->capture_default_str();
  cmd->add_option("--lr", f->o.lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--weight-decay", f->o.weight_decay, "AdamW weight decay (not on biases / LayerNorm)")
      ->capture_default_str();
  cmd->add_option("--warmup-ratio", f->o.warmup_ratio, "Fraction of steps warming the lr up")->capture_default_str();
  cmd->add_option("--warmup-steps", f->o.warmup_steps, "Warmup steps (overrides --warmup-ratio when > 0)");
  cmd->add_option("--lr-scheduler", f->o.lr_scheduler, "linear | constant | cosine")->capture_default_str();
  cmd->add_option("--max-grad-norm", f->o.max_grad_norm, "Clip to this global L2 norm (0: off)")->capture_default_str();
  cmd->add_option("--adam-beta2", f->o.adam_beta2, "AdamW beta2 (RoBERTa pretraining used 0.98)")
      ->capture_default_str();
  cmd->add_option("--seed", f->o.seed, "Seeds data order, masks, dropout and a new lm_head")->capture_default_str();
  cmd->add_flag("--bf16", f->o.bf16, "bf16 GEMMs with fp32 master weights");
  cmd->add_option("--dropout", f->dropout, "Override every dropout probability");
  cmd->add_option("--eval-every", f->o.eval_every, "Eval + checkpoint every N steps (0: each epoch)");
  cmd->add_option("--eval-batch-size", f->o.eval_batch_size, "Examples per eval batch")->capture_default_str();
  cmd->add_option("--logging-steps", f->o.logging_steps, "Progress line every N steps")->capture_default_str();
  cmd->add_option("--save-total-limit", f->o.save_total_limit, "Keep at most N checkpoints");
  cmd->add_flag("--resume", f->o.resume, "Continue from the last checkpoint-N in --output (bit-identical)");
  cmd->add_option("--metrics", f->metrics, "JSON Lines per optimizer step (default OUTPUT/metrics.jsonl)");
  cmd->add_option("--tensorboard", f->tensorboard, "Write TensorBoard event files to this folder");
  cmd->add_option("--text-column", f->o.text_column, "JSONL/CSV text field")->capture_default_str();
  add_threads_option(*cmd, f->threads);
  cmd->callback([f] {
    apply_threads(f->threads);
    PretrainOptions o = f->o;
    RC_CHECK(o.logging_steps > 0, Errc::invalid_argument, "--logging-steps must be > 0");
    if (f->dropout >= 0) o.dropout = f->dropout;
    o.metrics_file = f->metrics;
    o.tensorboard_dir = f->tensorboard;
    const PretrainSummary s = pretrain(o);
    std::printf("%s\n", s.to_json(2).c_str());
    std::fflush(stdout);
    if (s.interrupted) std::exit(130);  // as a shell reports a SIGINT-ended command
  });
}

}  // namespace rc::cli
