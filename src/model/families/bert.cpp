// BERT, from transformers' models/bert/modeling_bert.py and configuration_bert.py:
//   - BertEmbeddings: word (padding_idx = pad) + position (no padding_idx; ids from the
//     position_ids buffer, 0..T-1) + token type (ids default to zeros), LayerNorm, dropout;
//   - BertLayer is RobertaLayer under the prefix bert.encoder.layer.;
//   - BertForSequenceClassification: BertPooler (dense + tanh on [CLS], bert.pooler.dense, part
//     of the base model) → dropout(classifier_dropout or hidden_dropout_prob) → classifier;
//   - BertForTokenClassification (add_pooling_layer=False): dropout → classifier on each token;
//   - BertForMaskedLM (add_pooling_layer=False): cls.predictions.transform.{dense, act =
//     ACT2FN[hidden_act], LayerNorm(layer_norm_eps)} → decoder tied to the word embeddings +
//     cls.predictions.bias (cls.predictions.decoder.{weight,bias} are ties).
#include "model/family.h"
#include "model/roberta_config.h"

namespace rc::model {
namespace {

void bert_defaults(RobertaConfig& c) {
  c.vocab_size = 30522;
  c.max_position_embeddings = 512;
  c.type_vocab_size = 2;
  c.layer_norm_eps = 1e-12f;
  c.pad_token_id = 0;
}

EncoderFamily make_bert() {
  EncoderFamily f{};
  f.model_type = "bert";
  f.class_prefix = "Bert";
  f.base_prefix = "bert.";
  f.layer_prefix = "bert.encoder.layer.";
  f.keys.bos_token_id = nullptr;  // BertConfig has none (PretrainedConfig's None)
  f.keys.eos_token_id = nullptr;
  f.defaults = bert_defaults;
  f.extra_config_json = R"({"position_embedding_type": "absolute", "use_cache": true})";
  auto set = [&](Role r, const char* n) { f.names[int(r)] = n; };
  set(Role::word_embeddings, "bert.embeddings.word_embeddings.weight");
  set(Role::position_embeddings, "bert.embeddings.position_embeddings.weight");
  set(Role::token_type_embeddings, "bert.embeddings.token_type_embeddings.weight");
  set(Role::embeddings_ln_weight, "bert.embeddings.LayerNorm.weight");
  set(Role::embeddings_ln_bias, "bert.embeddings.LayerNorm.bias");
  set_bert_layer_names(f);
  set(Role::sequence_dense_weight, "bert.pooler.dense.weight");
  set(Role::sequence_dense_bias, "bert.pooler.dense.bias");
  set(Role::sequence_out_weight, "classifier.weight");
  set(Role::sequence_out_bias, "classifier.bias");
  set(Role::token_out_weight, "classifier.weight");
  set(Role::token_out_bias, "classifier.bias");
  set(Role::mlm_dense_weight, "cls.predictions.transform.dense.weight");
  set(Role::mlm_dense_bias, "cls.predictions.transform.dense.bias");
  set(Role::mlm_ln_weight, "cls.predictions.transform.LayerNorm.weight");
  set(Role::mlm_ln_bias, "cls.predictions.transform.LayerNorm.bias");
  set(Role::mlm_bias, "cls.predictions.bias");
  f.ignored_keys = {"bert.embeddings.position_ids", "bert.embeddings.token_type_ids", "cls.predictions.decoder.weight",
                    "cls.predictions.decoder.bias"};
  f.positions = PositionIds::from_zero;
  f.position_pad_row = false;
  f.attention_output_dropout = true;
  f.has_position_embedding_type = true;
  f.sequence_head = SequenceHead::pooler;
  f.token_head_uses_hidden_dropout = false;
  f.mlm_uses_hidden_act = true;
  f.sequence_dense_in_base = true;
  return f;
}

}  // namespace

const EncoderFamily& bert_family() {
  static const EncoderFamily f = make_bert();
  return f;
}

}  // namespace rc::model
