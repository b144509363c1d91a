#include "model/roberta_config.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include <limits>
#include <type_traits>

#include "core/check.h"
#include "core/json_depth.h"
#include "core/regular_file.h"

namespace rc::model {
namespace {

using nlohmann::json;

template <class T>
void read_key(const json& j, const char* key, T& out, std::string_view source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;  // keep transformers' default
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // nlohmann would turn 128.5 into 128 and 2^64-1 into -1: sizes and ids are integers,
    // taken only when they are exactly representable.
    const bool fits =
        it->is_number_integer() &&
        (it->is_number_unsigned() ? it->template get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
                                  : it->template get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
                                        it->template get<int64_t>() <= int64_t(std::numeric_limits<T>::max()));
    RC_CHECK(fits, Errc::format, source, ": '", key, "' must be an integer", it->is_number() ? " in range" : "",
             ", got ", it->dump());
  }
  try {
    out = it->get<T>();
  } catch (const json::exception&) {
    RC_THROW(Errc::format, source, ": key '", key, "' has the wrong type (", it->type_name(), ")");
  }
}

// An optional float: absent or null keeps "not set" (classifier_dropout: use hidden_dropout_prob).
void read_key(const json& j, const char* key, std::optional<float>& out, std::string_view source) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  RC_CHECK(it->is_number(), Errc::format, source, ": '", key, "' must be a number or null");
  out = it->get<float>();
}

// config.json's plain keys, the one list from_json reads and to_json writes, in the order
// they are read (the first bad key is the one reported). One line a key, alike in shape by
// nature; the keys with rules of their own (model_type, architectures, problem_type, the
// labels) are handled beside the calls.
// Each under the family's key (family.h ConfigKeys); a field the family has no key for is
// skipped (it keeps the family's fixed value).
template <class Config, class F>
void for_each_plain_key(Config& c, const ConfigKeys& k, F&& f) {
  auto field = [&](const char* key, auto& value) {
    if (key) f(key, value);
  };
  field(k.vocab_size, c.vocab_size);
  field(k.hidden_size, c.hidden_size);
  field(k.num_hidden_layers, c.num_hidden_layers);
  field(k.num_attention_heads, c.num_attention_heads);
  field(k.intermediate_size, c.intermediate_size);
  field(k.max_position_embeddings, c.max_position_embeddings);
  field(k.type_vocab_size, c.type_vocab_size);
  field(k.hidden_act, c.hidden_act);
  field(k.hidden_dropout_prob, c.hidden_dropout_prob);
  field(k.attention_probs_dropout_prob, c.attention_probs_dropout_prob);
  field(k.classifier_dropout, c.classifier_dropout);
  field(k.layer_norm_eps, c.layer_norm_eps);
  field(k.initializer_range, c.initializer_range);
  field(k.pad_token_id, c.pad_token_id);
  field(k.bos_token_id, c.bos_token_id);
  field(k.eos_token_id, c.eos_token_id);
}

// Upper bounds on each size, far above any released RoBERTa-family checkpoint (roberta-large:
// 24 layers x 1024, 16 heads, 4096 FFN; xlm-roberta: 250,002 tokens), so that a hostile
// config.json is refused before anything is sized from it.
constexpr int64_t kMaxVocab = int64_t(1) << 22, kMaxHidden = 16384, kMaxLayers = 256, kMaxHeads = 256,
                  kMaxIntermediate = int64_t(1) << 18, kMaxPositions = int64_t(1) << 20, kMaxTypeVocab = 1024,
                  kMaxLabels = int64_t(1) << 16;
// The same bound RobertaModel applies (16 GiB of fp32), computed here before the layout is.
constexpr int64_t kMaxParams = int64_t(4) << 30;

void check_at_most(int64_t v, int64_t bound, const char* key, std::string_view source) {
  RC_CHECK(v <= bound, Errc::format, source, ": '", key, "' is ", v, ", more than the ", bound,
           " this build accepts\nHINT: is config.json corrupt? real RoBERTa checkpoints are far smaller");
}

// Parameters the layout will hold (model/param_layout.cpp), counted in floating point so
// no product can overflow.
double parameter_count(const RobertaConfig& c) {
  const double C = double(c.hidden_size), I = double(c.intermediate_size), K = double(c.num_labels());
  const double embeddings = double(c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * C + 2 * C;
  const double layer = 4 * C * C + 4 * C + 2 * C + 2 * I * C + I + C + 2 * C;
  const double head = C * C + C + K * C + K;
  return embeddings + double(c.num_hidden_layers) * layer + head;
}

void check_positive(int64_t v, const char* key, std::string_view source) {
  RC_CHECK(v > 0, Errc::format, source, ": '", key, "' must be positive, got ", v);
}

// A float field as transformers writes it (Python floats are doubles): the value the file
// had when it still rounds to this float, else the shortest decimal that does, so 0.1f is
// written 0.1 and 1e-5f 1e-05, not 0.10000000149011612 / 9.999999747378752e-06.
json float_as_written(float v, const json& original, const char* key) {
  if (auto it = original.find(key); it != original.end() && it->is_number() && float(it->get<double>()) == v)
    return *it;
  char buf[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, double(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  return std::strtod(buf, nullptr);
}

}  // namespace

RobertaConfig RobertaConfig::from_json(std::string_view text, std::string_view source) {
  check_json_depth(text, source);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    RC_THROW(Errc::format, source, ": not valid JSON (", e.what(), ")");
  }
  RC_CHECK(j.is_object(), Errc::format, source, ": expected a JSON object, got ", j.type_name());

  RobertaConfig c;
  c.original_json = std::string(text);
  read_key(j, "model_type", c.model_type, source);
  const EncoderFamily* family = nullptr;
  for (const EncoderFamily* f : all_families())
    if (c.model_type == f->model_type) family = f;
  RC_CHECK(family, Errc::unsupported, source, ": model_type '", c.model_type,
           "' is not supported (supported: ", supported_model_types(),
           ")\nHINT: roberta.cpp runs these encoder families' checkpoints");
  family->defaults(c);
  const ConfigKeys& keys = family->keys;
  for_each_plain_key(c, keys, [&](const char* key, auto& field) { read_key(j, key, field, source); });
  if (family->has_position_embedding_type) {
    std::string position_embedding_type = "absolute";
    read_key(j, "position_embedding_type", position_embedding_type, source);
    RC_CHECK(position_embedding_type == "absolute", Errc::unsupported, source, ": position_embedding_type '",
             position_embedding_type, "' is not supported (only 'absolute')");
  }
  if (auto it = j.find("sinusoidal_pos_embds"); it != j.end() && !it->is_null()) {
    // DistilBERT's fixed sinusoidal table: transformers freezes it (requires_grad False),
    // which training here would not.
    RC_CHECK(it->is_boolean() && !it->get<bool>(), Errc::unsupported, source, ": sinusoidal_pos_embds ", it->dump(),
             " is not supported (only learned position embeddings: false)");
  }
  read_key(j, "architectures", c.architectures, source);
  read_key(j, "problem_type", c.problem_type, source);

  check_at_most(c.vocab_size, kMaxVocab, keys.vocab_size, source);
  check_at_most(c.num_attention_heads, kMaxHeads, keys.num_attention_heads, source);
  check_at_most(c.hidden_size, kMaxHidden, keys.hidden_size, source);
  check_at_most(c.num_hidden_layers, kMaxLayers, keys.num_hidden_layers, source);
  check_at_most(c.intermediate_size, kMaxIntermediate, keys.intermediate_size, source);
  check_at_most(c.max_position_embeddings, kMaxPositions, keys.max_position_embeddings, source);
  check_at_most(c.type_vocab_size, kMaxTypeVocab, "type_vocab_size", source);
  check_positive(c.vocab_size, keys.vocab_size, source);
  check_positive(c.hidden_size, keys.hidden_size, source);
  check_positive(c.num_hidden_layers, keys.num_hidden_layers, source);
  check_positive(c.num_attention_heads, keys.num_attention_heads, source);
  check_positive(c.intermediate_size, keys.intermediate_size, source);
  if (family->has_token_types()) check_positive(c.type_vocab_size, "type_vocab_size", source);
  RC_CHECK(c.hidden_size % c.num_attention_heads == 0, Errc::format, source, ": ", keys.hidden_size, " ", c.hidden_size,
           " is not a multiple of ", keys.num_attention_heads, " ", c.num_attention_heads);
  RC_CHECK(is_supported_activation(c.hidden_act), Errc::unsupported, source, ": ", keys.hidden_act, " '", c.hidden_act,
           "' is not supported (supported: gelu, gelu_new, gelu_pytorch_tanh, relu)");
  RC_CHECK(c.pad_token_id >= 0 && c.pad_token_id < c.vocab_size, Errc::format, source, ": pad_token_id ",
           c.pad_token_id, " outside the vocabulary of ", c.vocab_size);
  RC_CHECK(c.max_tokens() >= 3, Errc::format, source, ": max_position_embeddings ", c.max_position_embeddings,
           " leaves no room for a sequence (need > pad_token_id + 3)");
  RC_CHECK(c.layer_norm_eps > 0, Errc::format, source, ": layer_norm_eps must be positive");
  for (float p : {c.hidden_dropout_prob, c.attention_probs_dropout_prob, c.classifier_dropout_prob()})
    RC_CHECK(p >= 0 && p < 1, Errc::format, source, ": dropout probabilities must be in [0, 1), got ", p);

  // Labels as PretrainedConfig does: id2label (string keys) wins; else num_labels (default 2).
  if (auto it = j.find("id2label"); it != j.end() && it->is_object() && !it->empty()) {
    check_at_most(int64_t(it->size()), kMaxLabels, "id2label", source);
    c.id2label.assign(it->size(), std::string());
    std::vector<bool> seen(it->size(), false);
    for (auto& [key, value] : it->items()) {
      size_t used = 0;
      long id = -1;
      try {
        id = std::stol(key, &used);
      } catch (...) {
      }
      RC_CHECK(used == key.size() && id >= 0 && size_t(id) < c.id2label.size() && !seen[id], Errc::format, source,
               ": id2label key '", key, "' is not one of the ids 0..", c.id2label.size() - 1);
      RC_CHECK(value.is_string(), Errc::format, source, ": id2label[", key, "] must be a string");
      seen[id] = true;
      c.id2label[id] = value.get<std::string>();
    }
  } else {
    int64_t n = 2;
    read_key(j, "num_labels", n, source);
    check_positive(n, "num_labels", source);
    check_at_most(n, kMaxLabels, "num_labels", source);
    for (int64_t i = 0; i < n; ++i) c.id2label.push_back("LABEL_" + std::to_string(i));
  }
  const double params = parameter_count(c);
  RC_CHECK(params <= double(kMaxParams), Errc::format, source, ": describes ", int64_t(params),
           " parameters, more than the ", kMaxParams, " this build supports\nHINT: is config.json corrupt?");
  return c;
}

RobertaConfig RobertaConfig::from_file(const std::filesystem::path& path) {
  // A symlink loop is "cannot open ...: Too many levels of symbolic links" from the reader
  // below (bad input, exit 3), not a filesystem_error escaping.
  RC_CHECK(path_present(path), Errc::not_found, path.string(),
           ": not found\nHINT: a Hugging Face checkpoint folder has config.json next to its weights");
  return from_json(read_regular_file(path, kMaxSmallJsonFileBytes, "config",
                                     "is this a checkpoint's config.json? real ones are a few KB"),
                   path.string());
}

std::string RobertaConfig::to_json() const {
  json j = json::object();
  if (!original_json.empty()) {
    try {
      j = json::parse(original_json);
    } catch (const json::exception&) {
      j = json::object();
    }
  }
  const json original = j;  // the values as the file wrote them, for float_as_written
  const EncoderFamily& fam = family();
  j["model_type"] = model_type;
  for_each_plain_key(*this, fam.keys, [&](const char* key, const auto& field) {
    using T = std::decay_t<decltype(field)>;
    if constexpr (std::is_same_v<T, float>)
      j[key] = float_as_written(field, original, key);
    else if constexpr (std::is_same_v<T, std::optional<float>>)
      j[key] = field ? float_as_written(*field, original, key) : json(nullptr);
    else
      j[key] = field;
  });
  j["architectures"] =
      architectures.empty() ? std::vector<std::string>{fam.class_name("ForSequenceClassification")} : architectures;
  json id2label_json = json::object(), label2id_json = json::object();
  for (size_t i = 0; i < id2label.size(); ++i) {
    id2label_json[std::to_string(i)] = id2label[i];
    label2id_json[id2label[i]] = i;
  }
  j["id2label"] = id2label_json;
  j["label2id"] = label2id_json;
  j.erase("num_labels");  // derived from id2label, as transformers writes it
  if (!problem_type.empty())
    j["problem_type"] = problem_type;
  else
    j.erase("problem_type");  // unset: transformers' default (None), which save_pretrained leaves out
  if (!torch_dtype.empty())
    j["torch_dtype"] = torch_dtype;
  else if (!j.contains("torch_dtype"))
    j["torch_dtype"] = "float32";
  // The family's other PretrainedConfig attributes, as its save_pretrained writes them.
  const json extra = json::parse(fam.extra_config_json);
  for (auto& [key, value] : extra.items())
    if (!j.contains(key)) j[key] = value;
  // The release whose config.json layout this is (the keys above, nothing newer); it also
  // runs on Debian 12's torch 1.13, the tests' PyTorch reference. A version the file already
  // names is kept: its keys survive the save.
  if (!j.contains("transformers_version")) j["transformers_version"] = "4.30.2";
  return j.dump(2) + "\n";
}

RobertaConfig preset_config(std::string_view name) {
  RobertaConfig c;
  c.max_position_embeddings = 514;
  c.type_vocab_size = 1;
  c.layer_norm_eps = 1e-5f;
  c.architectures = {"RobertaForSequenceClassification"};
  if (name == "tiny") {
    c.hidden_size = 128, c.num_hidden_layers = 2, c.num_attention_heads = 2, c.intermediate_size = 512;
  } else if (name == "small") {
    c.hidden_size = 256, c.num_hidden_layers = 4, c.num_attention_heads = 4, c.intermediate_size = 1024;
  } else if (name == "base") {
    // roberta-base's own config.json values.
  } else {
    RC_THROW(Errc::invalid_argument, "unknown config preset '", name,
             "'\nHINT: use tiny, small, base, or a config.json path");
  }
  return c;
}

}  // namespace rc::model
