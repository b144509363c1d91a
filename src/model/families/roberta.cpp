// RoBERTa and the families that are its graph under another model_type: XLM-RoBERTa and
// CamemBERT (transformers' modeling_xlm_roberta.py and modeling_camembert.py are
// "Copied from ...roberta" with base_model_prefix "roberta"; their configs are RobertaConfig's
// keys and defaults but vocab_size 30522: configuration_xlm_roberta.py, configuration_camembert.py).
#include "model/family.h"
#include "model/roberta_config.h"

namespace rc::model {
namespace {

EncoderFamily roberta_like(const char* model_type, const char* class_prefix, void (*defaults)(RobertaConfig&)) {
  EncoderFamily f{};
  f.model_type = model_type;
  f.class_prefix = class_prefix;
  f.base_prefix = "roberta.";
  f.layer_prefix = "roberta.encoder.layer.";
  f.defaults = defaults;
  f.extra_config_json = R"({"position_embedding_type": "absolute", "use_cache": true})";
  auto set = [&](Role r, const char* n) { f.names[int(r)] = n; };
  set(Role::word_embeddings, "roberta.embeddings.word_embeddings.weight");
  set(Role::position_embeddings, "roberta.embeddings.position_embeddings.weight");
  set(Role::token_type_embeddings, "roberta.embeddings.token_type_embeddings.weight");
  set(Role::embeddings_ln_weight, "roberta.embeddings.LayerNorm.weight");
  set(Role::embeddings_ln_bias, "roberta.embeddings.LayerNorm.bias");
  set_bert_layer_names(f);
  set(Role::sequence_dense_weight, "classifier.dense.weight");
  set(Role::sequence_dense_bias, "classifier.dense.bias");
  set(Role::sequence_out_weight, "classifier.out_proj.weight");
  set(Role::sequence_out_bias, "classifier.out_proj.bias");
  set(Role::token_out_weight, "classifier.weight");
  set(Role::token_out_bias, "classifier.bias");
  set(Role::mlm_dense_weight, "lm_head.dense.weight");
  set(Role::mlm_dense_bias, "lm_head.dense.bias");
  set(Role::mlm_ln_weight, "lm_head.layer_norm.weight");
  set(Role::mlm_ln_bias, "lm_head.layer_norm.bias");
  set(Role::mlm_bias, "lm_head.bias");
  // lm_head.decoder.{weight,bias} are ties (the word embeddings, lm_head.bias), not weights.
  f.ignored_keys = {"roberta.embeddings.position_ids", "roberta.embeddings.token_type_ids", "lm_head.decoder.weight",
                    "lm_head.decoder.bias"};
  f.positions = PositionIds::after_padding;
  f.position_pad_row = true;
  f.attention_output_dropout = true;
  f.has_position_embedding_type = true;
  f.sequence_head = SequenceHead::roberta;
  f.token_head_uses_hidden_dropout = false;
  f.mlm_uses_hidden_act = false;  // RobertaLMHead calls gelu() whatever hidden_act says
  f.sequence_dense_in_base = false;
  return f;
}

void roberta_defaults(RobertaConfig&) {}  // RobertaConfig's own defaults are the struct's
void xlm_roberta_defaults(RobertaConfig& c) { c.vocab_size = 30522; }

}  // namespace

const EncoderFamily& roberta_family() {
  static const EncoderFamily f = roberta_like("roberta", "Roberta", roberta_defaults);
  return f;
}

const EncoderFamily& xlm_roberta_family() {
  static const EncoderFamily f = roberta_like("xlm-roberta", "XLMRoberta", xlm_roberta_defaults);
  return f;
}

const EncoderFamily& camembert_family() {
  static const EncoderFamily f = roberta_like("camembert", "Camembert", xlm_roberta_defaults);
  return f;
}

}  // namespace rc::model
