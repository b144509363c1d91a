// The flat parameter table (STYLE.md 7.1.3): every parameter of
// RobertaForSequenceClassification lives in ONE fp32 buffer, described by
// {HF name, shape, offset}. The same table drives loading, saving, AdamW (decay mask),
// gradient buffers and all-reduce.
//
// Order matters in one place: within each layer the query, key and value weights are
// adjacent, then their biases, so W_qkv (3C, C) and b_qkv (3C) are contiguous views and
// Q/K/V run as one GEMM with no copy (split again for free at save).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/family.h"
#include "model/roberta_config.h"

namespace rc::model {

// Which head follows the encoder (names are RoBERTa's; each family's are in its description,
// model/families/):
//   - classifier: RobertaForSequenceClassification's classifier.{dense,out_proj} on <s>
//     (BERT: bert.pooler.dense + classifier; DistilBERT: pre_classifier + classifier);
//   - masked_lm: RobertaForMaskedLM's lm_head.* (dense → GELU → LayerNorm → decoder tied to
//     the word embeddings + lm_head.bias; the tied decoder has no entry of its own, as HF saves it);
//   - token_classifier: RobertaForTokenClassification's classifier.{weight,bias}, one Linear
//     on every token's final hidden state (after dropout);
//   - encoder_only: a bare RobertaModel (sentence-transformers' Transformer module): no head,
//     the final hidden states are the output; pooler.* in the file is ignored.
enum class HeadKind { classifier, masked_lm, token_classifier, encoder_only };
// transformers' class name of a head ("RobertaForSequenceClassification", ...), and back from
// config.json's architectures (a sequence classifier when none names another head).
const char* head_architecture(HeadKind head) noexcept;  // RoBERTa's
std::string head_architecture(HeadKind head, const EncoderFamily& family);
HeadKind head_kind_of(const std::vector<std::string>& architectures) noexcept;

struct ParamEntry {
  std::string name;  // Hugging Face name, e.g. roberta.encoder.layer.3.attention.self.query.weight
  std::vector<int64_t> shape;
  int64_t offset = 0;  // in floats, into the flat buffer
  int64_t numel = 0;
  bool decay = true;     // HF Trainer: no weight decay for biases and LayerNorm weights
  bool is_head = false;  // classifier.* or lm_head.* (re-initialised by --init-head)
  Role role = Role::count;
  int64_t layer = -1;  // for layer roles
  // May be absent from a checkpoint and then gets HF's init (BERT's pooler, which a
  // BertForMaskedLM or BertForTokenClassification save lacks), as is_head entries.
  bool may_be_missing = false;
  enum class Init { normal, zeros, ones } init = Init::normal;  // HF's _init_weights
};

class ParamLayout {
 public:
  static ParamLayout build(const RobertaConfig& config, HeadKind head = HeadKind::classifier);
  const std::vector<ParamEntry>& entries() const { return entries_; }
  int64_t total() const { return total_; }
  const ParamEntry* find(std::string_view name) const;  // nullptr when absent
  const ParamEntry* find(Role role, int64_t layer = 0) const;

 private:
  std::vector<ParamEntry> entries_;
  int64_t total_ = 0;
};

// Offsets (floats) of one encoder layer's tensors in the flat buffer.
struct LayerOffsets {
  int64_t qkv_w, qkv_b, attn_out_w, attn_out_b, ln_attn_gamma, ln_attn_beta;
  int64_t ffn_in_w, ffn_in_b, ffn_out_w, ffn_out_b, ln_ffn_gamma, ln_ffn_beta;
};
struct ModelOffsets {
  int64_t wte, wpe, tte, ln_emb_gamma, ln_emb_beta;  // tte -1: the family has no token types
  std::vector<LayerOffsets> layers;
  // classifier.* (-1 for a masked-LM layout). A token classifier has no dense layer: its
  // classifier.{weight,bias} are head_out_{w,b}.
  int64_t head_dense_w = -1, head_dense_b = -1, head_out_w = -1, head_out_b = -1;
  // lm_head.* (-1 for a classifier layout); the decoder weight is wte.
  int64_t lm_dense_w = -1, lm_dense_b = -1, lm_ln_gamma = -1, lm_ln_beta = -1, lm_bias = -1;
};
ModelOffsets model_offsets(const ParamLayout& layout, const RobertaConfig& config);

}  // namespace rc::model
