// RobertaConfig: config.json as transformers reads it, for every encoder family (family.h):
// one config whose fields each family maps its own keys onto (DistilBERT's `dim` is
// hidden_size). EncoderConfig names it so. Missing keys take transformers'
// RobertaConfig defaults — several of which are BERT's (layer_norm_eps 1e-12,
// type_vocab_size 2, max_position_embeddings 512), not roberta-base's checkpoint values.
// RoBERTa quirks live here in one place (STYLE.md 7.11.10):
//   - position ids start at pad_token_id + 1, so at most max_position_embeddings - pad - 1
//     tokens fit (512 for roberta-base's 514);
//   - hidden_act "gelu" is the exact erf GELU.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/family.h"

namespace rc::model {

struct RobertaConfig {
  int64_t vocab_size = 50265;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;  // 0: the family has no token type embeddings (DistilBERT)
  std::string hidden_act = "gelu";
  float hidden_dropout_prob = 0.1f;
  float attention_probs_dropout_prob = 0.1f;
  std::optional<float> classifier_dropout;  // null → hidden_dropout_prob
  float layer_norm_eps = 1e-12f;
  float initializer_range = 0.02f;
  int32_t pad_token_id = 1, bos_token_id = 0, eos_token_id = 2;
  std::string model_type = "roberta";  // one of all_families(); family() is its description
  std::vector<std::string> architectures;
  std::vector<std::string> id2label;  // index = label id; defaults LABEL_0, LABEL_1
  std::string problem_type;           // "single_label_classification" once trained
  std::string torch_dtype;            // written as torch_dtype when set (the saved weights' dtype)
  std::string original_json;          // the file as read: unknown keys survive a save

  // Parses config.json text; `source` names the file in errors. Throws rc::Error(format).
  static RobertaConfig from_json(std::string_view text, std::string_view source);
  static RobertaConfig from_file(const std::filesystem::path& path);
  // config.json as HF writes it (2-space indent, sorted keys), keeping unknown keys.
  std::string to_json() const;

  const EncoderFamily& family() const { return family_of(model_type); }
  Activation activation() const { return activation_by_name(hidden_act); }  // the FFN's
  int64_t num_labels() const { return int64_t(id2label.size()); }
  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  float classifier_dropout_prob() const { return classifier_dropout.value_or(hidden_dropout_prob); }
  // Most tokens a sequence may have, <s> and </s> ([CLS], [SEP]) included: RoBERTa's positions
  // start after the pad id, BERT's and DistilBERT's at 0.
  int64_t max_tokens() const {
    return family().positions == PositionIds::after_padding ? max_position_embeddings - pad_token_id - 1
                                                            : max_position_embeddings;
  }
};
using EncoderConfig = RobertaConfig;

// Named presets for `roberta init --config`: tiny (2×128), small (4×256), base (roberta-base).
RobertaConfig preset_config(std::string_view name);

}  // namespace rc::model
