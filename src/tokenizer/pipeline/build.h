// Building the pipeline's components from tokenizer.json objects: one factory per kind, which
// reads the "type" tag and refuses a type it does not know with a one-line error naming the type
// and the file.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/pipeline/components.h"
#include "tokenizer/pipeline/regex.h"

namespace rc::tokenizer::pipeline {

// Where the objects come from, for error messages.
struct Source {
  std::string file;
};

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, const Source& src);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j, const Source& src);
std::unique_ptr<Model> make_model(const nlohmann::json& j, const Source& src);
std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j, const Source& src);
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, const Source& src);

enum class PrependScheme { always, first, never };
PrependScheme read_prepend_scheme(const nlohmann::json& j, const Source& src);

// Shared by the factories.
[[noreturn]] void unknown_type(const Source& src, const char* kind, const std::string& type);
std::string type_of(const nlohmann::json& j, const Source& src, const char* kind);
Pattern read_pattern(const nlohmann::json& j, const Source& src, const char* where);
SplitBehavior read_behavior(const nlohmann::json& j, const Source& src);
bool get_bool(const nlohmann::json& j, const char* key, bool fallback);
std::string get_string(const nlohmann::json& j, const char* key, const std::string& fallback);

// Bounds on what a file controls.
inline constexpr size_t kMaxVocab = size_t(1) << 22;          // tokens (the largest real: ~256k)
inline constexpr size_t kMaxTokenBytes = 1024;                // one token's string
inline constexpr size_t kMaxComponents = 64;                  // steps of a Sequence, nesting
inline constexpr size_t kMaxCharsmapBytes = size_t(8) << 20;  // precompiled_charsmap (nmt_nfkc: ~240 KB)

}  // namespace rc::tokenizer::pipeline
