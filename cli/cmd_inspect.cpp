// roberta inspect: what a checkpoint folder holds, as JSON.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "model_source.h"
#include "roberta/classifier.h"

namespace rc::cli {

void add_inspect_command(CLI::App& app) {
  struct Opts {
    std::string model, revision;
    bool init_head = false;
  };
  auto opts = std::make_shared<Opts>();
  auto* cmd =
      app.add_subcommand("inspect", "Summarise a checkpoint: config, parameters, dtypes, missing/unexpected keys");
  cmd->add_option("--model", opts->model, "Checkpoint folder or Hugging Face model id (org/name[@rev])")->required();
  add_revision_option(*cmd, opts->revision);
  cmd->add_flag("--init-head", opts->init_head, "Accept a body-only checkpoint (reports the head as missing)");
  cmd->callback([opts] {
    LoadOptions load;
    load.init_head = opts->init_head;
    auto classifier = Classifier::load(resolve_model_source(opts->model, opts->revision), load);
    const ModelInfo& m = classifier->info();
    // One line a key: alike in shape to every JSON writer (benchmark.cpp's), its own fields.
    nlohmann::ordered_json j;
    j["model_type"] = m.model_type;
    j["architecture"] = m.architecture;
    j["weights_file"] = m.weights_file;
    j["weights_dtype"] = m.weights_dtype;
    j["num_parameters"] = m.num_parameters;
    j["vocab_size"] = m.vocab_size;
    j["hidden_size"] = m.hidden_size;
    j["num_hidden_layers"] = m.num_layers;
    j["num_attention_heads"] = m.num_heads;
    j["intermediate_size"] = m.intermediate_size;
    j["max_length"] = m.max_length;
    j["labels"] = m.labels;
    j["missing_keys"] = m.missing_keys;
    j["unexpected_keys"] = m.unexpected_keys;
    j["ignored_keys"] = m.ignored_keys;
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  });
}

}  // namespace rc::cli
