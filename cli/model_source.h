// One rule for every command that takes a model (predict, train, eval, inspect, serve,
// package, init --tokenizer): a local path that exists always wins; otherwise the argument
// is a Hugging Face model id, "org/name" or "org/name@revision", fetched into the standard
// cache (src/hub) and replaced by its snapshot folder.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace rc::cli {

// --revision: a branch, tag or commit sha for a Hub id (default main).
void add_revision_option(CLI::App& cmd, std::string& revision);

enum class ModelNeed { model, tokenizer };

// The folder to load. Throws rc::Error with a hint when it is neither a local path nor a
// model the Hub (or the cache, offline) can give.
std::string resolve_model_source(const std::string& model, const std::string& revision = "",
                                 ModelNeed need = ModelNeed::model);

}  // namespace rc::cli
