#include "model/param_layout.h"

#include "core/check.h"

namespace rc::model {

ParamLayout ParamLayout::build(const RobertaConfig& c, HeadKind head) {
  ParamLayout layout;
  const EncoderFamily& family = c.family();
  const int64_t C = c.hidden_size, I = c.intermediate_size, K = c.num_labels();
  using Init = ParamEntry::Init;
  // Weights decay; biases and LayerNorm parameters do not (HF Trainer's decay mask: "bias" in
  // the name or a LayerNorm module, whatever the module is called: DistilBERT's sa_layer_norm).
  enum Kind { weight, bias, ln_weight, ln_bias };
  auto add = [&](Role role, int64_t layer, std::vector<int64_t> shape, Kind kind, bool is_head = false) {
    ParamEntry e;
    e.name = family.tensor_name(role, layer);
    RC_ASSERT(!e.name.empty());
    e.shape = std::move(shape);
    e.numel = 1;
    for (int64_t d : e.shape) e.numel *= d;
    e.offset = layout.total_;
    e.decay = kind == weight;
    e.is_head = is_head;
    e.role = role;
    e.layer = is_layer_role(role) ? layer : -1;
    e.may_be_missing = is_head;
    e.init = kind == ln_weight ? Init::ones : kind == weight ? Init::normal : Init::zeros;
    layout.total_ += e.numel;
    layout.entries_.push_back(std::move(e));
  };
  add(Role::word_embeddings, 0, {c.vocab_size, C}, weight);
  add(Role::position_embeddings, 0, {c.max_position_embeddings, C}, weight);
  if (family.has_token_types()) add(Role::token_type_embeddings, 0, {c.type_vocab_size, C}, weight);
  add(Role::embeddings_ln_weight, 0, {C}, ln_weight);
  add(Role::embeddings_ln_bias, 0, {C}, ln_bias);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    // q, k, v weights then their biases: contiguous W_qkv (3C, C) and b_qkv (3C).
    add(Role::query_weight, l, {C, C}, weight);
    add(Role::key_weight, l, {C, C}, weight);
    add(Role::value_weight, l, {C, C}, weight);
    add(Role::query_bias, l, {C}, bias);
    add(Role::key_bias, l, {C}, bias);
    add(Role::value_bias, l, {C}, bias);
    add(Role::attention_out_weight, l, {C, C}, weight);
    add(Role::attention_out_bias, l, {C}, bias);
    add(Role::attention_ln_weight, l, {C}, ln_weight);
    add(Role::attention_ln_bias, l, {C}, ln_bias);
    add(Role::ffn_in_weight, l, {I, C}, weight);
    add(Role::ffn_in_bias, l, {I}, bias);
    add(Role::ffn_out_weight, l, {C, I}, weight);
    add(Role::ffn_out_bias, l, {C}, bias);
    add(Role::ffn_ln_weight, l, {C}, ln_weight);
    add(Role::ffn_ln_bias, l, {C}, ln_bias);
  }
  const bool head_part = true;
  if (head == HeadKind::masked_lm) {
    add(Role::mlm_dense_weight, 0, {C, C}, weight, head_part);
    add(Role::mlm_dense_bias, 0, {C}, bias, head_part);
    add(Role::mlm_ln_weight, 0, {C}, ln_weight, head_part);
    add(Role::mlm_ln_bias, 0, {C}, ln_bias, head_part);
    add(Role::mlm_bias, 0, {c.vocab_size}, bias, head_part);
    return layout;
  }
  if (head == HeadKind::encoder_only) return layout;
  if (head == HeadKind::token_classifier) {
    add(Role::token_out_weight, 0, {K, C}, weight, head_part);
    add(Role::token_out_bias, 0, {K}, bias, head_part);
    return layout;
  }
  // BERT's pooler belongs to the base model (bert.pooler.*): loaded with it, kept by
  // --init-head, but initialised when a checkpoint has none.
  const bool dense_is_head = !family.sequence_dense_in_base;
  add(Role::sequence_dense_weight, 0, {C, C}, weight, dense_is_head);
  add(Role::sequence_dense_bias, 0, {C}, bias, dense_is_head);
  layout.entries_[layout.entries_.size() - 2].may_be_missing = true;
  layout.entries_.back().may_be_missing = true;
  add(Role::sequence_out_weight, 0, {K, C}, weight, head_part);
  add(Role::sequence_out_bias, 0, {K}, bias, head_part);
  return layout;
}

std::string head_architecture(HeadKind head, const EncoderFamily& family) {
  switch (head) {
    case HeadKind::masked_lm:
      return family.class_name("ForMaskedLM");
    case HeadKind::token_classifier:
      return family.class_name("ForTokenClassification");
    case HeadKind::encoder_only:
      return family.class_name("Model");
    case HeadKind::classifier:
      break;
  }
  return family.class_name("ForSequenceClassification");
}

const char* head_architecture(HeadKind head) noexcept {
  switch (head) {
    case HeadKind::masked_lm:
      return "RobertaForMaskedLM";
    case HeadKind::token_classifier:
      return "RobertaForTokenClassification";
    case HeadKind::encoder_only:
      return "RobertaModel";
    case HeadKind::classifier:
      break;
  }
  return "RobertaForSequenceClassification";
}

HeadKind head_kind_of(const std::vector<std::string>& architectures) noexcept {
  for (const std::string& a : architectures) {
    if (a.ends_with("ForMaskedLM")) return HeadKind::masked_lm;
    if (a.ends_with("ForTokenClassification")) return HeadKind::token_classifier;
  }
  return HeadKind::classifier;
}

const ParamEntry* ParamLayout::find(Role role, int64_t layer) const {
  for (const auto& e : entries_)
    if (e.role == role && (e.layer == layer || !is_layer_role(role))) return &e;
  return nullptr;
}

const ParamEntry* ParamLayout::find(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

ModelOffsets model_offsets(const ParamLayout& layout, const RobertaConfig& c) {
  auto at = [&](Role role, int64_t layer = 0) {
    const ParamEntry* e = layout.find(role, layer);
    RC_ASSERT(e != nullptr);
    return e->offset;
  };
  auto maybe = [&](Role role) {
    const ParamEntry* e = layout.find(role);
    return e ? e->offset : int64_t(-1);
  };
  ModelOffsets o;
  o.wte = at(Role::word_embeddings);
  o.wpe = at(Role::position_embeddings);
  o.tte = maybe(Role::token_type_embeddings);
  o.ln_emb_gamma = at(Role::embeddings_ln_weight);
  o.ln_emb_beta = at(Role::embeddings_ln_bias);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    LayerOffsets L;
    L.qkv_w = at(Role::query_weight, l);
    L.qkv_b = at(Role::query_bias, l);
    // The fused views rely on adjacency (see the header); a layout change must keep it.
    RC_ASSERT(at(Role::value_weight, l) == L.qkv_w + 2 * c.hidden_size * c.hidden_size);
    RC_ASSERT(at(Role::value_bias, l) == L.qkv_b + 2 * c.hidden_size);
    L.attn_out_w = at(Role::attention_out_weight, l);
    L.attn_out_b = at(Role::attention_out_bias, l);
    L.ln_attn_gamma = at(Role::attention_ln_weight, l);
    L.ln_attn_beta = at(Role::attention_ln_bias, l);
    L.ffn_in_w = at(Role::ffn_in_weight, l);
    L.ffn_in_b = at(Role::ffn_in_bias, l);
    L.ffn_out_w = at(Role::ffn_out_weight, l);
    L.ffn_out_b = at(Role::ffn_out_bias, l);
    L.ln_ffn_gamma = at(Role::ffn_ln_weight, l);
    L.ln_ffn_beta = at(Role::ffn_ln_bias, l);
    o.layers.push_back(L);
  }
  o.lm_dense_w = maybe(Role::mlm_dense_weight);
  o.lm_dense_b = maybe(Role::mlm_dense_bias);
  o.lm_ln_gamma = maybe(Role::mlm_ln_weight);
  o.lm_ln_beta = maybe(Role::mlm_ln_bias);
  o.lm_bias = maybe(Role::mlm_bias);
  if (o.lm_bias >= 0) return o;
  if (layout.find(Role::token_out_weight)) {
    o.head_out_w = at(Role::token_out_weight);
    o.head_out_b = at(Role::token_out_bias);
    return o;
  }
  if (!layout.find(Role::sequence_out_weight)) return o;  // encoder_only: no head
  o.head_dense_w = at(Role::sequence_dense_weight);
  o.head_dense_b = at(Role::sequence_dense_bias);
  o.head_out_w = at(Role::sequence_out_weight);
  o.head_out_b = at(Role::sequence_out_bias);
  return o;
}

}  // namespace rc::model
