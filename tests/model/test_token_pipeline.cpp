// TokenClassificationPipeline post-processing against tools/token_pipeline_ref.py, a Python
// restatement of transformers' pipelines/token_classification.py fed the same hand-built
// inputs: tests/data/task_metrics/token_pipeline_cases.json (ids, tokens and character
// offsets from HF's Rust tokenizers on roberta-base; logits chosen by hand; the expected
// answer for every aggregation strategy, with ["O"] ignored and with nothing ignored).
// Strings, labels, indices and offsets must match exactly; scores are float32 and must agree
// within 4 ulp (EXPECT_FLOAT_EQ): the reference's exp is correctly rounded, std::exp(float)
// is glibc's, which may differ by an ulp (measured here with EXPECT_EQ: every score bit-equal).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/token_pipeline.h"
#include "roberta/error.h"
#include "roberta/tokenizer.h"

using namespace rc::model;

namespace {

const nlohmann::json& cases() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::string(RC_TEST_DATA_DIR) + "/task_metrics/token_pipeline_cases.json");
    EXPECT_TRUE(in.good()) << "HINT: regenerate with npm ci --prefix tools && python3 tools/token_pipeline_ref.py";
    return nlohmann::json::parse(in);
  }();
  return j;
}

const rc::Tokenizer& roberta_tokenizer() {
  static const auto tok =
      rc::Tokenizer::from_dir(std::filesystem::path(RC_SOURCE_DIR) / "assets/tokenizer/roberta-base");
  return *tok;
}

// A case's inputs, owned.
struct CaseInput {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<std::pair<int64_t, int64_t>> offsets;
  std::vector<uint8_t> special;
  std::vector<float> logits;
  TokenClassifierInput view() const { return {text, ids, offsets, special, logits}; }
};

CaseInput input_of(const nlohmann::json& c) {
  CaseInput in;
  in.text = c["text"].get<std::string>();
  in.ids = c["ids"].get<std::vector<int32_t>>();
  for (const auto& o : c["offsets"]) in.offsets.emplace_back(o[0].get<int64_t>(), o[1].get<int64_t>());
  in.special = c["special_tokens_mask"].get<std::vector<uint8_t>>();
  for (const auto& row : c["logits"])
    for (const auto& v : row) in.logits.push_back(v.get<float>());
  return in;
}

std::vector<std::string> id2label() { return cases()["id2label"].get<std::vector<std::string>>(); }

// got (our JSON) against want (the reference's list of dicts): same keys in the same order,
// equal values, scores within 4 float ulp.
void expect_same_answer(const nlohmann::ordered_json& got, const nlohmann::json& want) {
  ASSERT_EQ(got.size(), want.size()) << "got " << got.dump() << "\nwant " << want.dump();
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("entity " + std::to_string(i));
    const auto& g = got[i];
    const auto& w = want[i];
    std::vector<std::string> keys;
    for (const auto& [k, _] : g.items()) keys.push_back(k);
    const std::vector<std::string> want_keys =
        w.contains("entity") ? std::vector<std::string>{"entity", "score", "index", "word", "start", "end"}
                             : std::vector<std::string>{"entity_group", "score", "word", "start", "end"};
    EXPECT_EQ(keys, want_keys);
    for (const std::string& k : want_keys) {
      if (k == "score") {
        EXPECT_FLOAT_EQ(g[k].get<float>(), w[k].get<float>());
      } else {
        EXPECT_EQ(g[k].dump(), w[k].dump()) << k;
      }
    }
  }
}

}  // namespace

TEST(TokenPipeline, FixtureTokensAreOurTokenizers) {
  const rc::Tokenizer& tok = roberta_tokenizer();
  for (const auto& c : cases()["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const CaseInput in = input_of(c);
    if (c["ids_from_tokenizer"].get<bool>()) {
      EXPECT_EQ(tok.encode(in.text), in.ids);
    }
    const auto tokens = c["tokens"].get<std::vector<std::string>>();
    for (size_t i = 0; i < in.ids.size(); ++i) EXPECT_EQ(tok.id_to_token(in.ids[i]), tokens[i]) << i;
  }
}

TEST(TokenPipeline, EveryStrategyMatchesTheReference) {
  ASSERT_EQ(cases()["cases"].size(), 10u);
  for (const auto& c : cases()["cases"]) {
    const CaseInput in = input_of(c);
    const auto labels = c.contains("id2label") ? c["id2label"].get<std::vector<std::string>>() : id2label();
    for (const char* strategy : {"none", "simple", "first", "average", "max"}) {
      SCOPED_TRACE(c["name"].get<std::string>() + " / " + strategy);
      const TokenClassification r =
          token_classification_postprocess(in.view(), labels, roberta_tokenizer(), parse_aggregation(strategy));
      expect_same_answer(token_classification_to_json(r), c["expected"][strategy]);
      const TokenClassification all =
          token_classification_postprocess(in.view(), labels, roberta_tokenizer(), parse_aggregation(strategy), {});
      expect_same_answer(token_classification_to_json(all), c["expected_ignoring_nothing"][strategy]);
    }
  }
}

TEST(TokenPipeline, ByteLevelDecodeOfTokens) {
  const auto decode = [](std::vector<std::string> t) { return byte_level_tokens_to_string(t); };
  EXPECT_EQ(decode({"ĠNew", "ĠYork"}), " New York");
  EXPECT_EQ(decode({"æĿ", "±"}), "東");  // one character split over two tokens
  EXPECT_EQ(decode({"æĿ"}), "\xEF\xBF\xBD");
  // A decoded word decoded again, as the word strategies do: every character of "Zoë" is in
  // the byte map (ë = byte 0xEB), so it turns into invalid UTF-8; " Zoë" has a space, which is
  // not in the map, so it stays as it is.
  EXPECT_EQ(decode({"Zoë"}), "Zo\xEF\xBF\xBD");
  EXPECT_EQ(decode({" Zoë"}), " Zoë");
}

TEST(TokenPipeline, CodePointOffsetsToBytes) {
  const std::string text = "Zoë 東京 🗽!";
  const std::vector<size_t> starts = code_point_byte_offsets(text);
  ASSERT_EQ(starts.size(), 10u);                                                           // 9 code points
  EXPECT_EQ(code_point_range_to_bytes(starts, 4, 6), (std::pair<size_t, size_t>{5, 11}));  // 東京
  EXPECT_EQ(text.substr(12, 4), "🗽");
  EXPECT_EQ(code_point_range_to_bytes(starts, 7, 8), (std::pair<size_t, size_t>{12, 16}));
  EXPECT_EQ(code_point_range_to_bytes(starts, 9, 9), (std::pair<size_t, size_t>{17, 17}));
  EXPECT_THROW(code_point_range_to_bytes(starts, 3, 10), rc::Error);
  EXPECT_THROW(code_point_range_to_bytes(starts, 5, 4), rc::Error);
  EXPECT_THROW(code_point_byte_offsets("ab\xC3"), rc::Error);
}

TEST(TokenPipeline, AggregationNames) {
  EXPECT_EQ(parse_aggregation("FIRST"), Aggregation::first);
  EXPECT_EQ(parse_aggregation("average"), Aggregation::average);
  EXPECT_STREQ(aggregation_name(Aggregation::max), "max");
  EXPECT_THROW(parse_aggregation("mean"), rc::Error);
}

TEST(TokenPipeline, RefusesInconsistentInputs) {
  const CaseInput good = input_of(cases()["cases"][0]);
  const auto labels = id2label();
  CaseInput short_logits = good;
  short_logits.logits.pop_back();
  EXPECT_THROW(token_classification_postprocess(short_logits.view(), labels, roberta_tokenizer(), Aggregation::none),
               rc::Error);
  CaseInput far_offset = good;
  far_offset.offsets[2].second = 400;
  EXPECT_THROW(token_classification_postprocess(far_offset.view(), labels, roberta_tokenizer(), Aggregation::simple),
               rc::Error);
  CaseInput fewer_flags = good;
  fewer_flags.special.pop_back();
  EXPECT_THROW(token_classification_postprocess(fewer_flags.view(), labels, roberta_tokenizer(), Aggregation::none),
               rc::Error);
}

TEST(TokenPipeline, JsonIsHfsShapeWithFloat32Scores) {
  // Expected text: Python's json.dumps of the pipeline's dicts, whose scores are
  // float(np.float32(...)): 0.9968f prints as 0.9968000054359436, not 0.9968.
  TokenClassification grouped;
  grouped.aggregation = Aggregation::simple;
  grouped.groups.push_back({"PER", 0.9968f, " Wolfgang", 11, 19});
  EXPECT_EQ(token_classification_to_json(grouped).dump(),
            R"([{"entity_group":"PER","score":0.9968000054359436,"word":" Wolfgang","start":11,"end":19}])");
  TokenClassification tokens;
  tokens.tokens.push_back({"B-LOC", 0.5f, 9, "ĠBerlin", 34, 40});
  EXPECT_EQ(token_classification_to_json(tokens).dump(),
            R"([{"entity":"B-LOC","score":0.5,"index":9,"word":"ĠBerlin","start":34,"end":40}])");
  EXPECT_EQ(token_classification_to_json(TokenClassification{}).dump(), "[]");
}
