// DistilBERT, from transformers' models/distilbert/modeling_distilbert.py and
// configuration_distilbert.py:
//   - config keys dim, n_layers, n_heads, hidden_dim, activation, dropout, attention_dropout,
//     seq_classif_dropout (attribute_map: hidden_size → dim, ...); pad_token_id 0; no
//     layer_norm_eps key (every LayerNorm is eps 1e-12), no token types, no bos/eos;
//   - Embeddings: word (padding_idx = pad) + position (position_ids buffer, 0..T-1; no
//     padding_idx), LayerNorm, dropout;
//   - TransformerBlock: sa_layer_norm(out_lin(attention) + x) — no dropout after out_lin —
//     then output_layer_norm(dropout(lin2(act(lin1(.)))) + .);
//   - DistilBertForSequenceClassification: hidden[:, 0] → pre_classifier → ReLU →
//     dropout(seq_classif_dropout) → classifier;
//   - DistilBertForTokenClassification: dropout(config.dropout) → classifier;
//   - DistilBertForMaskedLM: vocab_transform → activation → vocab_layer_norm → vocab_projector
//     (weight tied to the word embeddings, its own bias).
#include "model/family.h"
#include "model/roberta_config.h"

namespace rc::model {
namespace {

void distilbert_defaults(RobertaConfig& c) {
  c.vocab_size = 30522;
  c.max_position_embeddings = 512;
  c.num_hidden_layers = 6;
  c.num_attention_heads = 12;
  c.hidden_size = 768;
  c.intermediate_size = 4 * 768;
  c.hidden_dropout_prob = 0.1f;
  c.attention_probs_dropout_prob = 0.1f;
  c.classifier_dropout = 0.2f;  // seq_classif_dropout
  c.hidden_act = "gelu";
  c.initializer_range = 0.02f;
  c.pad_token_id = 0;
  c.type_vocab_size = 0;      // no token type embeddings
  c.layer_norm_eps = 1e-12f;  // nn.LayerNorm(dim, eps=1e-12) everywhere, not configurable
}

EncoderFamily make_distilbert() {
  EncoderFamily f{};
  f.model_type = "distilbert";
  f.class_prefix = "DistilBert";
  f.base_prefix = "distilbert.";
  f.layer_prefix = "distilbert.transformer.layer.";
  f.keys.hidden_size = "dim";
  f.keys.num_hidden_layers = "n_layers";
  f.keys.num_attention_heads = "n_heads";
  f.keys.intermediate_size = "hidden_dim";
  f.keys.hidden_act = "activation";
  f.keys.hidden_dropout_prob = "dropout";
  f.keys.attention_probs_dropout_prob = "attention_dropout";
  f.keys.classifier_dropout = "seq_classif_dropout";
  f.keys.type_vocab_size = nullptr;
  f.keys.layer_norm_eps = nullptr;
  f.keys.bos_token_id = nullptr;
  f.keys.eos_token_id = nullptr;
  f.defaults = distilbert_defaults;
  f.extra_config_json = R"({"qa_dropout": 0.1, "sinusoidal_pos_embds": false})";
  auto set = [&](Role r, const char* n) { f.names[int(r)] = n; };
  set(Role::word_embeddings, "distilbert.embeddings.word_embeddings.weight");
  set(Role::position_embeddings, "distilbert.embeddings.position_embeddings.weight");
  set(Role::embeddings_ln_weight, "distilbert.embeddings.LayerNorm.weight");
  set(Role::embeddings_ln_bias, "distilbert.embeddings.LayerNorm.bias");
  set(Role::query_weight, "attention.q_lin.weight");
  set(Role::key_weight, "attention.k_lin.weight");
  set(Role::value_weight, "attention.v_lin.weight");
  set(Role::query_bias, "attention.q_lin.bias");
  set(Role::key_bias, "attention.k_lin.bias");
  set(Role::value_bias, "attention.v_lin.bias");
  set(Role::attention_out_weight, "attention.out_lin.weight");
  set(Role::attention_out_bias, "attention.out_lin.bias");
  set(Role::attention_ln_weight, "sa_layer_norm.weight");
  set(Role::attention_ln_bias, "sa_layer_norm.bias");
  set(Role::ffn_in_weight, "ffn.lin1.weight");
  set(Role::ffn_in_bias, "ffn.lin1.bias");
  set(Role::ffn_out_weight, "ffn.lin2.weight");
  set(Role::ffn_out_bias, "ffn.lin2.bias");
  set(Role::ffn_ln_weight, "output_layer_norm.weight");
  set(Role::ffn_ln_bias, "output_layer_norm.bias");
  set(Role::sequence_dense_weight, "pre_classifier.weight");
  set(Role::sequence_dense_bias, "pre_classifier.bias");
  set(Role::sequence_out_weight, "classifier.weight");
  set(Role::sequence_out_bias, "classifier.bias");
  set(Role::token_out_weight, "classifier.weight");
  set(Role::token_out_bias, "classifier.bias");
  set(Role::mlm_dense_weight, "vocab_transform.weight");
  set(Role::mlm_dense_bias, "vocab_transform.bias");
  set(Role::mlm_ln_weight, "vocab_layer_norm.weight");
  set(Role::mlm_ln_bias, "vocab_layer_norm.bias");
  set(Role::mlm_bias, "vocab_projector.bias");
  f.ignored_keys = {"distilbert.embeddings.position_ids", "vocab_projector.weight"};
  f.positions = PositionIds::from_zero;
  f.position_pad_row = false;
  f.attention_output_dropout = false;
  f.has_position_embedding_type = false;
  f.sequence_head = SequenceHead::pre_relu;
  f.token_head_uses_hidden_dropout = true;
  f.mlm_uses_hidden_act = true;
  f.sequence_dense_in_base = false;
  return f;
}

}  // namespace

const EncoderFamily& distilbert_family() {
  static const EncoderFamily f = make_distilbert();
  return f;
}

}  // namespace rc::model
