// config.json is user input: its sizes are checked before anything is built (issue #10
// findings 3, 13 and 14). A config describing a model that cannot fit is a bad file
// (format, exit 3), refused in microseconds, not after 3 GB and minutes of building a
// parameter table.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "model/roberta_config.h"
#include "roberta/error.h"

namespace {

using rc::Errc;
using rc::model::RobertaConfig;

// Expects from_json to refuse `json` with a format error mentioning `needle`, fast.
void expect_refused(const std::string& json, const std::string& needle) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    RobertaConfig::from_json(json, "config.json");
    ADD_FAILURE() << "accepted: " << json;
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), Errc::format) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5) << json;
}

TEST(ConfigLimits, SizesAreIntegersNotFloats) {
  expect_refused(R"({"hidden_size": 128.5, "num_attention_heads": 2})", "hidden_size");
  expect_refused(R"({"num_hidden_layers": 2.0})", "num_hidden_layers");
  expect_refused(R"({"vocab_size": "50265"})", "vocab_size");
  expect_refused(R"({"num_labels": 3.7})", "num_labels");
  expect_refused(R"({"pad_token_id": 1.5})", "pad_token_id");
}

TEST(ConfigLimits, HugeSizesAreRefusedBeforeBuilding) {
  expect_refused(R"({"num_hidden_layers": 1000000})", "num_hidden_layers");
  expect_refused(R"({"hidden_size": 1048576, "num_attention_heads": 1})", "hidden_size");
  expect_refused(R"({"num_attention_heads": 100000, "hidden_size": 100000})", "num_attention_heads");
  expect_refused(R"({"vocab_size": 4000000000})", "vocab_size");
  expect_refused(R"({"max_position_embeddings": 100000000})", "max_position_embeddings");
  expect_refused(R"({"intermediate_size": 10000000})", "intermediate_size");
  expect_refused(R"({"type_vocab_size": 1000000})", "type_vocab_size");
  expect_refused(R"({"num_labels": 10000000})", "num_labels");
  expect_refused(R"({"vocab_size": 9223372036854775807})", "vocab_size");
  // Each size within its bound, the product not: the parameter count (finding 13: this
  // exited 1 from an overflow check deep in the model; bad input is 3).
  expect_refused(R"({"num_hidden_layers": 256, "hidden_size": 16384, "num_attention_heads": 16,
                     "intermediate_size": 65536})",
                 "parameters");
}

TEST(ConfigLimits, RealConfigsStillLoad) {
  const auto base = RobertaConfig::from_json(
      R"({"model_type": "roberta", "vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12,
          "num_attention_heads": 12, "intermediate_size": 3072, "max_position_embeddings": 514,
          "type_vocab_size": 1, "pad_token_id": 1})",
      "config.json");
  EXPECT_EQ(base.hidden_size, 768);
  // roberta-large and xlm-roberta-large sizes fit.
  const auto large = RobertaConfig::from_json(
      R"({"vocab_size": 250002, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
          "intermediate_size": 4096, "max_position_embeddings": 514})",
      "config.json");
  EXPECT_EQ(large.num_hidden_layers, 24);
}

}  // namespace
