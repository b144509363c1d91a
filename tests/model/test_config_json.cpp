// config.json as transformers writes it: float fields come back as the decimals that were
// written (0.1, 1e-05: Python floats are doubles), not as float32 round-trips
// (0.10000000149011612, 9.999999747378752e-06), and transformers_version is present.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/roberta_config.h"

namespace rc::test {
namespace {

TEST(ConfigJson, FloatsAreWrittenAsTheirShortestDecimal) {
  const std::string text = model::preset_config("tiny").to_json();
  EXPECT_NE(text.find("\"layer_norm_eps\": 1e-05,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"hidden_dropout_prob\": 0.1,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"attention_probs_dropout_prob\": 0.1,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"initializer_range\": 0.02,"), std::string::npos) << text;
  EXPECT_EQ(text.find("0000000"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["layer_norm_eps"].get<double>(), 1e-05);  // exactly the double Python reads
  EXPECT_EQ(j["hidden_dropout_prob"].get<double>(), 0.1);
  EXPECT_EQ(j["transformers_version"], "4.30.2");
}

TEST(ConfigJson, ValuesFromTheFileAreKeptAsWritten) {
  auto c = model::RobertaConfig::from_json(
      R"({"layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.15, "classifier_dropout": 0.3, "transformers_version": "4.44.0"})",
      "c");
  const auto j = nlohmann::json::parse(c.to_json());
  EXPECT_EQ(j["layer_norm_eps"].get<double>(), 1e-12);
  EXPECT_EQ(j["hidden_dropout_prob"].get<double>(), 0.15);
  EXPECT_EQ(j["classifier_dropout"].get<double>(), 0.3);
  EXPECT_EQ(j["transformers_version"], "4.44.0");
  // A value changed since loading is written as its own shortest decimal, not the old one.
  c.hidden_dropout_prob = 0.2f;
  EXPECT_EQ(nlohmann::json::parse(c.to_json())["hidden_dropout_prob"].get<double>(), 0.2);
}

}  // namespace
}  // namespace rc::test
