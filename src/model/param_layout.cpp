#include "model/param_layout.h"

#include "core/check.h"

namespace rc::model {

ParamLayout ParamLayout::build(const RobertaConfig& c, HeadKind head) {
  ParamLayout layout;
  const int64_t C = c.hidden_size, I = c.intermediate_size, K = c.num_labels();
  auto add = [&](std::string name, std::vector<int64_t> shape, bool decay = true, bool head = false) {
    ParamEntry e;
    e.name = std::move(name);
    e.shape = std::move(shape);
    e.numel = 1;
    for (int64_t d : e.shape) e.numel *= d;
    e.offset = layout.total_;
    e.decay = decay;
    e.is_head = head;
    layout.total_ += e.numel;
    layout.entries_.push_back(std::move(e));
  };
  const bool no_decay = false;
  add("roberta.embeddings.word_embeddings.weight", {c.vocab_size, C});
  add("roberta.embeddings.position_embeddings.weight", {c.max_position_embeddings, C});
  add("roberta.embeddings.token_type_embeddings.weight", {c.type_vocab_size, C});
  add("roberta.embeddings.LayerNorm.weight", {C}, no_decay);
  add("roberta.embeddings.LayerNorm.bias", {C}, no_decay);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "roberta.encoder.layer." + std::to_string(l) + ".";
    // q, k, v weights then their biases: contiguous W_qkv (3C, C) and b_qkv (3C).
    add(p + "attention.self.query.weight", {C, C});
    add(p + "attention.self.key.weight", {C, C});
    add(p + "attention.self.value.weight", {C, C});
    add(p + "attention.self.query.bias", {C}, no_decay);
    add(p + "attention.self.key.bias", {C}, no_decay);
    add(p + "attention.self.value.bias", {C}, no_decay);
    add(p + "attention.output.dense.weight", {C, C});
    add(p + "attention.output.dense.bias", {C}, no_decay);
    add(p + "attention.output.LayerNorm.weight", {C}, no_decay);
    add(p + "attention.output.LayerNorm.bias", {C}, no_decay);
    add(p + "intermediate.dense.weight", {I, C});
    add(p + "intermediate.dense.bias", {I}, no_decay);
    add(p + "output.dense.weight", {C, I});
    add(p + "output.dense.bias", {C}, no_decay);
    add(p + "output.LayerNorm.weight", {C}, no_decay);
    add(p + "output.LayerNorm.bias", {C}, no_decay);
  }
  if (head == HeadKind::masked_lm) {
    add("lm_head.dense.weight", {C, C}, true, true);
    add("lm_head.dense.bias", {C}, no_decay, true);
    add("lm_head.layer_norm.weight", {C}, no_decay, true);
    add("lm_head.layer_norm.bias", {C}, no_decay, true);
    add("lm_head.bias", {c.vocab_size}, no_decay, true);
    return layout;
  }
  if (head == HeadKind::encoder_only) return layout;
  if (head == HeadKind::token_classifier) {
    add("classifier.weight", {K, C}, true, true);
    add("classifier.bias", {K}, no_decay, true);
    return layout;
  }
  add("classifier.dense.weight", {C, C}, true, true);
  add("classifier.dense.bias", {C}, no_decay, true);
  add("classifier.out_proj.weight", {K, C}, true, true);
  add("classifier.out_proj.bias", {K}, no_decay, true);
  return layout;
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

const ParamEntry* ParamLayout::find(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

ModelOffsets model_offsets(const ParamLayout& layout, const RobertaConfig& c) {
  auto at = [&](const std::string& name) {
    const ParamEntry* e = layout.find(name);
    RC_ASSERT(e != nullptr);
    return e->offset;
  };
  ModelOffsets o;
  o.wte = at("roberta.embeddings.word_embeddings.weight");
  o.wpe = at("roberta.embeddings.position_embeddings.weight");
  o.tte = at("roberta.embeddings.token_type_embeddings.weight");
  o.ln_emb_gamma = at("roberta.embeddings.LayerNorm.weight");
  o.ln_emb_beta = at("roberta.embeddings.LayerNorm.bias");
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "roberta.encoder.layer." + std::to_string(l) + ".";
    LayerOffsets L;
    L.qkv_w = at(p + "attention.self.query.weight");
    L.qkv_b = at(p + "attention.self.query.bias");
    // The fused views rely on adjacency (see the header); a layout change must keep it.
    RC_ASSERT(at(p + "attention.self.value.weight") == L.qkv_w + 2 * c.hidden_size * c.hidden_size);
    RC_ASSERT(at(p + "attention.self.value.bias") == L.qkv_b + 2 * c.hidden_size);
    L.attn_out_w = at(p + "attention.output.dense.weight");
    L.attn_out_b = at(p + "attention.output.dense.bias");
    L.ln_attn_gamma = at(p + "attention.output.LayerNorm.weight");
    L.ln_attn_beta = at(p + "attention.output.LayerNorm.bias");
    L.ffn_in_w = at(p + "intermediate.dense.weight");
    L.ffn_in_b = at(p + "intermediate.dense.bias");
    L.ffn_out_w = at(p + "output.dense.weight");
    L.ffn_out_b = at(p + "output.dense.bias");
    L.ln_ffn_gamma = at(p + "output.LayerNorm.weight");
    L.ln_ffn_beta = at(p + "output.LayerNorm.bias");
    o.layers.push_back(L);
  }
  if (layout.find("lm_head.bias")) {
    o.lm_dense_w = at("lm_head.dense.weight");
    o.lm_dense_b = at("lm_head.dense.bias");
    o.lm_ln_gamma = at("lm_head.layer_norm.weight");
    o.lm_ln_beta = at("lm_head.layer_norm.bias");
    o.lm_bias = at("lm_head.bias");
    return o;
  }
  if (!layout.find("classifier.out_proj.weight") && !layout.find("classifier.weight")) return o;  // encoder_only
  if (layout.find("classifier.weight")) {
    o.head_out_w = at("classifier.weight");
    o.head_out_b = at("classifier.bias");
    return o;
  }
  o.head_dense_w = at("classifier.dense.weight");
  o.head_dense_b = at("classifier.dense.bias");
  o.head_out_w = at("classifier.out_proj.weight");
  o.head_out_b = at("classifier.out_proj.bias");
  return o;
}

}  // namespace rc::model
