// An encoder family as DATA (docs/FAMILIES.md): what separates RoBERTa, XLM-R, CamemBERT,
// BERT and DistilBERT is at the two ends of one post-LN encoder, never in its layers:
//   - config.json's key for each field of the one encoder config (DistilBERT's `dim` is
//     hidden_size), the family's defaults for absent keys and its fixed values (DistilBERT's
//     LayerNorm eps, 1e-12, is no key at all);
//   - the Hugging Face tensor name of each role (DistilBERT's `q_lin` is RoBERTa's
//     `attention.self.query`), so loading, saving and the layout are one lookup;
//   - the embeddings variant (position ids after the pad id, or from 0; token types or none);
//   - the sequence head variant (RoBERTa's dense+tanh+out_proj, BERT's pooler+classifier,
//     DistilBERT's pre_classifier+ReLU+classifier) and where the heads' dropout comes from.
// A new family (DeBERTa-v3, ModernBERT) whose layers are this encoder is one more file under
// model/families/ plus a line in family.cpp's list.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rc::model {

struct RobertaConfig;

// Every tensor the engine knows, by what it does. Layer roles are named per layer.
enum class Role : int {
  word_embeddings,
  position_embeddings,
  token_type_embeddings,  // a family without token types has no name here
  embeddings_ln_weight,
  embeddings_ln_bias,
  // per layer
  query_weight,
  key_weight,
  value_weight,
  query_bias,
  key_bias,
  value_bias,
  attention_out_weight,
  attention_out_bias,
  attention_ln_weight,
  attention_ln_bias,
  ffn_in_weight,
  ffn_in_bias,
  ffn_out_weight,
  ffn_out_bias,
  ffn_ln_weight,
  ffn_ln_bias,
  // sequence classification: dense (RoBERTa's classifier.dense, BERT's pooler, DistilBERT's
  // pre_classifier) then the output projection
  sequence_dense_weight,
  sequence_dense_bias,
  sequence_out_weight,
  sequence_out_bias,
  // token classification: one Linear on every token
  token_out_weight,
  token_out_bias,
  // masked LM: dense → activation → LayerNorm → decoder tied to the word embeddings + bias
  mlm_dense_weight,
  mlm_dense_bias,
  mlm_ln_weight,
  mlm_ln_bias,
  mlm_bias,
  count
};
inline constexpr int kRoleCount = int(Role::count);
inline constexpr Role kFirstLayerRole = Role::query_weight, kLastLayerRole = Role::ffn_ln_bias;
constexpr bool is_layer_role(Role r) { return int(r) >= int(kFirstLayerRole) && int(r) <= int(kLastLayerRole); }

// Position ids: RoBERTa's create_position_ids_from_input_ids (pad + 1 + running count of
// non-pad tokens; pads get pad), or BERT's / DistilBERT's position_ids buffer (0, 1, 2, ...).
enum class PositionIds { after_padding, from_zero };

// The sequence head on token 0's final hidden state x:
//   roberta:  out_proj(drop(tanh(dense(drop(x)))))  (RobertaClassificationHead)
//   pooler:   classifier(drop(tanh(pooler.dense(x))))  (BertPooler + BertForSequenceClassification)
//   pre_relu: classifier(drop(relu(pre_classifier(x))))  (DistilBertForSequenceClassification)
enum class SequenceHead { roberta, pooler, pre_relu };

// config.json's key for each encoder config field; nullptr: the family has no such key (the
// field keeps the family's fixed value and is never written).
struct ConfigKeys {
  const char* vocab_size = "vocab_size";
  const char* hidden_size = "hidden_size";
  const char* num_hidden_layers = "num_hidden_layers";
  const char* num_attention_heads = "num_attention_heads";
  const char* intermediate_size = "intermediate_size";
  const char* max_position_embeddings = "max_position_embeddings";
  const char* type_vocab_size = "type_vocab_size";
  const char* hidden_act = "hidden_act";
  const char* hidden_dropout_prob = "hidden_dropout_prob";
  const char* attention_probs_dropout_prob = "attention_probs_dropout_prob";
  const char* classifier_dropout = "classifier_dropout";
  const char* layer_norm_eps = "layer_norm_eps";
  const char* initializer_range = "initializer_range";
  const char* pad_token_id = "pad_token_id";
  const char* bos_token_id = "bos_token_id";
  const char* eos_token_id = "eos_token_id";
};

struct EncoderFamily {
  const char* model_type;    // config.json's model_type
  const char* class_prefix;  // transformers' class names: <prefix>ForSequenceClassification, ...
  const char* base_prefix;   // the base model's key prefix ("roberta."), absent in bare base-model saves
  const char* layer_prefix;  // layer l's tensors are <layer_prefix><l>.<role name>
  ConfigKeys keys;
  void (*defaults)(RobertaConfig&);  // transformers' <Family>Config defaults, fixed values included
  // Keys written to config.json when absent (the family's PretrainedConfig attributes the
  // engine does not model), as a JSON object text.
  const char* extra_config_json;
  const char* names[kRoleCount];  // HF tensor names; layer roles relative to layer_prefix<l>.
  // Checkpoint keys that hold no weights of their own: buffers and the tied decoder.
  std::vector<std::string> ignored_keys;
  PositionIds positions;
  bool position_pad_row;             // the position table has padding_idx = pad (RoBERTa): zero at init, no gradient
  bool attention_output_dropout;     // hidden dropout after the attention output dense (DistilBERT: none)
  bool has_position_embedding_type;  // config.json's position_embedding_type (must be "absolute")
  SequenceHead sequence_head;
  bool token_head_uses_hidden_dropout;  // DistilBertForTokenClassification: config.dropout
  bool mlm_uses_hidden_act;             // BERT / DistilBERT: the LM transform's activation is the config's
  bool sequence_dense_in_base;          // BERT's pooler is bert.pooler.*: part of the base model

  bool has_token_types() const { return names[int(Role::token_type_embeddings)] != nullptr; }
  // The tensor name of `role` (layer: for layer roles); "" when the family has none.
  std::string tensor_name(Role role, int64_t layer = 0) const;
  // transformers' class name for a head suffix ("ForSequenceClassification", ...).
  std::string class_name(std::string_view head_suffix) const { return class_prefix + std::string(head_suffix); }
};

// BertLayer's tensor names (relative to layer_prefix<l>), which RobertaLayer copies: the
// attention, its output dense and LayerNorm, the FFN and its LayerNorm.
void set_bert_layer_names(EncoderFamily& family);

// The family of a config.json model_type; throws unsupported naming it when none is.
const EncoderFamily& family_of(std::string_view model_type);
// Every family this build reads, in the order family_of tries them.
const std::vector<const EncoderFamily*>& all_families();
// "roberta, xlm-roberta, ..." for messages.
std::string supported_model_types();

// The FFN activations the encoder runs, by transformers' ACT2FN names (activations.py):
// "gelu" the erf form, "gelu_new" / "gelu_pytorch_tanh" the tanh approximation, "relu".
enum class Activation { gelu, gelu_new, relu };
bool is_supported_activation(std::string_view name);
Activation activation_by_name(std::string_view name);  // RC_ASSERTs a supported name

}  // namespace rc::model
