// roberta convert — rewrite a checkpoint folder with its weights in another dtype, as
// `model.to(torch.bfloat16).save_pretrained(...)` does: same names, same head, same
// tokenizer files. bf16 halves the size of a shipped model; training reads it back as fp32.
#include <cstdio>

#include "commands.h"
#include "core/check.h"
#include "model/checkpoint.h"
#include "model/param_layout.h"
#include "model/roberta_config.h"
#include "model_source.h"

namespace rc::cli {

void add_convert_command(CLI::App& app) {
  struct Flags {
    std::string model, revision, output, dtype = "bf16";
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("convert", "Rewrite a checkpoint with fp32 or bf16 weights (HF layout, same head)");
  cmd->add_option("--model", f->model, "Checkpoint folder or Hugging Face model id (org/name[@rev])")->required();
  add_revision_option(*cmd, f->revision);
  cmd->add_option("--output", f->output, "Output folder (config.json, model.safetensors, tokenizer files)")->required();
  cmd->add_option("--dtype", f->dtype, "Weights dtype on disk: bf16 or fp32")
      ->check(CLI::IsMember({"bf16", "fp32"}))
      ->capture_default_str();
  cmd->callback([f] {
    const std::filesystem::path src = resolve_model_source(f->model, f->revision);
    const model::RobertaConfig config = model::RobertaConfig::from_file(src / "config.json");
    // The head the folder was saved with (masked LM, token classifier, bare encoder or sequence
    // classifier) stays the one written, with the family's own class name.
    model::CheckpointLoadOptions load;
    load.head = model::checkpoint_head_kind(src);
    const auto m = model::load_checkpoint(src, load);
    const std::filesystem::path out = f->output;
    RC_CHECK(!std::filesystem::exists(out / "model.safetensors") || !std::filesystem::equivalent(src, out),
             Errc::invalid_argument, "--output is the --model folder '", out.string(),
             "'\nHINT: write the converted checkpoint to a new folder");
    model::save_checkpoint(out, *m, {}, f->dtype == "bf16" ? DType::bf16 : DType::f32);
    model::copy_tokenizer_files(src, out);
    std::printf("wrote %s (%s weights, %s)\n", out.c_str(), f->dtype.c_str(),
                model::head_architecture(load.head, config.family()).c_str());
  });
}

}  // namespace rc::cli
