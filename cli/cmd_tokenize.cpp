// roberta tokenize: the ids Hugging Face's tokenizer gives, one JSON line per text.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/check.h"
#include "model_source.h"
#include "roberta/tokenizer.h"
#include "text_input.h"

namespace rc::cli {

void add_tokenize_command(CLI::App& app) {
  struct Opts {
    std::string model, tokenizer, input;
    std::vector<std::string> texts;
    int max_length = 0;
    bool no_special = false;
  };
  auto opts = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("tokenize", "Print token ids as Hugging Face's tokenizer gives them");
  auto* model =
      cmd->add_option("--model", opts->model, "A checkpoint folder with tokenizer files (or a Hugging Face model id)");
  auto* tok = cmd->add_option("--tokenizer", opts->tokenizer,
                              "A folder with tokenizer.json, or vocab.json + merges.txt (or a Hugging Face model id)");
  model->excludes(tok);
  cmd->add_option("texts", opts->texts, "Texts (default: --input, else one per stdin line)");
  cmd->add_option("--input", opts->input, "A .txt (one text per line) or .jsonl ({\"text\": ...}) file");
  cmd->add_option("--max-length", opts->max_length, "Truncate to this many ids incl. <s> </s> (default: none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-special-tokens", opts->no_special, "Leave out <s> and </s>");
  cmd->callback([opts] {
    RC_CHECK(!opts->model.empty() || !opts->tokenizer.empty(), Errc::invalid_argument,
             "tokenize needs --model DIR or --tokenizer DIR");
    auto tokenizer = Tokenizer::from_dir(
        resolve_model_source(opts->model.empty() ? opts->tokenizer : opts->model, "", ModelNeed::tokenizer));
    for (const std::string& text : gather_texts(opts->texts, opts->input)) {
      nlohmann::json j;
      j["ids"] = tokenizer->encode(text, !opts->no_special, opts->max_length);
      std::printf("%s\n", j.dump().c_str());
    }
    std::fflush(stdout);
  });
}

}  // namespace rc::cli
