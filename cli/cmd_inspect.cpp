// roberta inspect: what a checkpoint folder holds, as JSON.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "model_source.h"
#include "roberta/classifier.h"
#include "roberta/log.h"

namespace rc::cli {
namespace {

// NaN and Inf values of a floating-point tensor: all exponent bits set, whatever the mantissa.
int64_t count_nonfinite(const io::TensorInfo& t, std::span<const std::byte> bytes) {
  auto count = [&](auto word, auto exponent_mask) {
    using W = decltype(word);
    int64_t n = 0;
    for (size_t i = 0; i + sizeof(W) <= bytes.size(); i += sizeof(W)) {
      W w;
      std::memcpy(&w, bytes.data() + i, sizeof(W));
      n += (w & exponent_mask) == exponent_mask;
    }
    return n;
  };
  switch (t.dtype) {
    case DType::f32:
      return count(uint32_t{}, uint32_t{0x7f800000});
    case DType::bf16:
      return count(uint16_t{}, uint16_t{0x7f80});
    case DType::f16:
      return count(uint16_t{}, uint16_t{0x7c00});
    case DType::f64:
      return count(uint64_t{}, uint64_t{0x7ff0000000000000});
    default:
      return 0;
  }
}

}  // namespace

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
    // NaN / Inf weights load (as in transformers) and make every answer NaN, which predict and
    // serve refuse: name the tensors that hold them.
    auto source = model::open_weights(std::filesystem::path(m.weights_file).parent_path());
    nlohmann::ordered_json nonfinite = nlohmann::ordered_json::object();
    for (const io::TensorInfo& t : source->tensors())
      if (const int64_t n = count_nonfinite(t, source->data(t.name)); n > 0) nonfinite[t.name] = n;
    if (!nonfinite.empty())
      log::warn("inspect", nonfinite.size(),
                " tensor(s) hold NaN or Inf values: predictions that reach them are refused (fp32, bf16) or "
                "meaningless (int8)");
    j["nonfinite_values"] = nonfinite;
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  });
}

}  // namespace rc::cli
