// The family list and the name lookups of family.h.
#include "model/family.h"

#include "core/check.h"

namespace rc::model {

// One function per family, each in its own file under model/families/.
const EncoderFamily& roberta_family();
const EncoderFamily& xlm_roberta_family();
const EncoderFamily& camembert_family();
const EncoderFamily& bert_family();
const EncoderFamily& distilbert_family();

const std::vector<const EncoderFamily*>& all_families() {
  static const std::vector<const EncoderFamily*> families = {&roberta_family(), &xlm_roberta_family(),
                                                             &camembert_family(), &bert_family(), &distilbert_family()};
  return families;
}

std::string supported_model_types() {
  std::string s;
  for (const EncoderFamily* f : all_families()) s += (s.empty() ? "" : ", ") + std::string(f->model_type);
  return s;
}

void set_bert_layer_names(EncoderFamily& f) {
  auto set = [&](Role r, const char* n) { f.names[int(r)] = n; };
  set(Role::query_weight, "attention.self.query.weight");
  set(Role::key_weight, "attention.self.key.weight");
  set(Role::value_weight, "attention.self.value.weight");
  set(Role::query_bias, "attention.self.query.bias");
  set(Role::key_bias, "attention.self.key.bias");
  set(Role::value_bias, "attention.self.value.bias");
  set(Role::attention_out_weight, "attention.output.dense.weight");
  set(Role::attention_out_bias, "attention.output.dense.bias");
  set(Role::attention_ln_weight, "attention.output.LayerNorm.weight");
  set(Role::attention_ln_bias, "attention.output.LayerNorm.bias");
  set(Role::ffn_in_weight, "intermediate.dense.weight");
  set(Role::ffn_in_bias, "intermediate.dense.bias");
  set(Role::ffn_out_weight, "output.dense.weight");
  set(Role::ffn_out_bias, "output.dense.bias");
  set(Role::ffn_ln_weight, "output.LayerNorm.weight");
  set(Role::ffn_ln_bias, "output.LayerNorm.bias");
}

const EncoderFamily& family_of(std::string_view model_type) {
  for (const EncoderFamily* f : all_families())
    if (model_type == f->model_type) return *f;
  RC_THROW(Errc::unsupported, "model_type '", model_type, "' is not supported (supported: ", supported_model_types(),
           ")\nHINT: roberta.cpp runs the encoder families listed; others need a family description (model/families/)");
}

std::string EncoderFamily::tensor_name(Role role, int64_t layer) const {
  const char* name = names[int(role)];
  if (!name) return {};
  if (is_layer_role(role)) return layer_prefix + std::to_string(layer) + "." + name;
  return name;
}

bool is_supported_activation(std::string_view name) {
  return name == "gelu" || name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "relu";
}

Activation activation_by_name(std::string_view name) {
  RC_ASSERT(is_supported_activation(name));
  if (name == "relu") return Activation::relu;
  return name == "gelu" ? Activation::gelu : Activation::gelu_new;
}

}  // namespace rc::model
