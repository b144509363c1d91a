// roberta init — a freshly initialised classifier (HF's _init_weights) in HF layout, for
// training from scratch: no pretrained weights can be downloaded here.
#include <cstdio>

#include "commands.h"
#include "core/check.h"
#include "model_source.h"
#include "roberta/trainer.h"

namespace rc::cli {

void add_init_command(CLI::App& app) {
  auto o = std::make_shared<InitOptions>();
  auto labels = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("init", "Write a randomly initialised RoBERTa classifier (HF checkpoint)");
  cmd->add_option("--config", o->config,
                  "tiny (2x128), small (4x256), base (roberta-base shapes) or a config.json path")
      ->capture_default_str();
  cmd->add_option(
         "--tokenizer", o->tokenizer_dir,
         "Folder with vocab.json + merges.txt or tokenizer.json, or a Hugging Face model id whose tokenizer to use")
      ->required();
  cmd->add_option("--labels", *labels, "Comma-separated label names, in id order")->required();
  cmd->add_option("--output", o->output_dir, "Output folder")->required();
  cmd->add_option("--seed", o->seed, "Initialisation seed")->capture_default_str();
  cmd->callback([o, labels] {
    InitOptions opts = *o;
    opts.tokenizer_dir = resolve_model_source(opts.tokenizer_dir.string(), "", ModelNeed::tokenizer);
    std::string cur;
    for (char c : *labels + ",") {
      if (c == ',') {
        while (!cur.empty() && cur.back() == ' ') cur.pop_back();
        RC_CHECK(!cur.empty(), Errc::invalid_argument, "--labels: empty label name in '", *labels, "'");
        opts.labels.push_back(cur);
        cur.clear();
      } else if (!(c == ' ' && cur.empty())) {
        cur += c;
      }
    }
    init_model(opts);
    std::printf("wrote %s (%s, labels %s)\n", opts.output_dir.c_str(), opts.config.c_str(), labels->c_str());
  });
}

}  // namespace rc::cli
