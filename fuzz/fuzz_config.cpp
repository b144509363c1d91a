// config.json (RobertaConfig::from_json) and a package's code/serving.json
// (settings_from_json) on the same bytes. What is accepted must save and load back to the
// same values (the config through to_json, as `train` and `init` write it).
#include "fuzz/fuzz_util.h"
#include "model/roberta_config.h"
#include "serve/package.h"

using namespace rc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::as_view(data, size);
  model::RobertaConfig c;
  if (fuzz::expect_rc_error([&] { c = model::RobertaConfig::from_json(text, "config.json"); })) {
    RC_FUZZ_REQUIRE(c.num_labels() >= 1 && c.hidden_size % c.num_attention_heads == 0 && c.max_tokens() >= 3);
    const std::string saved = c.to_json();
    model::RobertaConfig back;
    RC_FUZZ_REQUIRE(fuzz::expect_rc_error([&] { back = model::RobertaConfig::from_json(saved, "saved config.json"); }));
    RC_FUZZ_REQUIRE(
        back.vocab_size == c.vocab_size && back.hidden_size == c.hidden_size &&
        back.num_hidden_layers == c.num_hidden_layers && back.num_attention_heads == c.num_attention_heads &&
        back.intermediate_size == c.intermediate_size && back.max_position_embeddings == c.max_position_embeddings &&
        back.pad_token_id == c.pad_token_id && back.id2label == c.id2label && back.problem_type == c.problem_type);
  }
  serve::ServingSettings s;
  if (fuzz::expect_rc_error([&] { s = serve::settings_from_json(text, "code/serving.json"); })) {
    const serve::ServingSettings back = serve::settings_from_json(serve::settings_to_json(s), "saved serving.json");
    RC_FUZZ_REQUIRE(back.name == s.name && back.version == s.version && back.max_length == s.max_length &&
                    back.max_batch_size == s.max_batch_size && back.max_batch_delay_ms == s.max_batch_delay_ms &&
                    back.labels == s.labels && back.precision == s.precision);
  }
  return 0;
}
