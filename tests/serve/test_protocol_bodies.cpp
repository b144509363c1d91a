// Request and answer bodies of TEI's /predict and /decode, KServe v2's infer, the
// invocation formats' text pairs, and the SageMaker environment variables, without a socket.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "serve/http_error.h"
#include "serve/kserve.h"
#include "serve/request.h"
#include "serve/sagemaker_env.h"
#include "serve/serve_test_util.h"

using namespace rc;
using namespace rc::serve;
using nlohmann::json;

namespace {

using rc::test::status_of;

}  // namespace

TEST(TeiPredictBody, StringPairAndBatch) {
  ParsedInputs one = parse_tei_predict(R"({"inputs": "a"})");
  EXPECT_TRUE(one.single);
  EXPECT_EQ(one.texts, std::vector<std::string>{"a"});
  EXPECT_TRUE(one.pairs.empty());

  // ["a", "b"] is ONE pair (TEI's Sequence::Pair), answered unwrapped.
  ParsedInputs pair = parse_tei_predict(R"({"inputs": ["a", "b"]})");
  EXPECT_TRUE(pair.single);
  ASSERT_EQ(pair.texts.size(), 1u);
  ASSERT_EQ(pair.pairs.size(), 1u);
  EXPECT_EQ(pair.texts[0], "a");
  EXPECT_EQ(pair.pairs[0], std::optional<std::string>("b"));

  ParsedInputs solo = parse_tei_predict(R"({"inputs": ["a"]})");
  EXPECT_TRUE(solo.single);
  EXPECT_TRUE(solo.pairs.empty());

  ParsedInputs batch = parse_tei_predict(R"({"inputs": [["a"], ["b", "c"]], "raw_scores": true,
                                           "truncate": true, "truncation_direction": "Left"})");
  EXPECT_FALSE(batch.single);
  ASSERT_EQ(batch.texts.size(), 2u);
  ASSERT_EQ(batch.pairs.size(), 2u);
  EXPECT_FALSE(batch.pairs[0].has_value());
  EXPECT_EQ(batch.pairs[1], std::optional<std::string>("c"));
  EXPECT_TRUE(batch.raw_scores);
  EXPECT_EQ(batch.truncate, std::optional<bool>(true));
  EXPECT_EQ(batch.side, TruncationSide::left);
  EXPECT_TRUE(batch.all_scores);
}

TEST(TeiPredictBody, MalformedIs422Or400) {
  EXPECT_EQ(status_of([] { parse_tei_predict(R"({"inputs": ["a", "b", "c"]})"); }), 422);  // > 2 strings
  EXPECT_EQ(status_of([] { parse_tei_predict(R"({"inputs": []})"); }), 422);
  EXPECT_EQ(status_of([] { parse_tei_predict(R"({"inputs": [["a", "b", "c"]]})"); }), 422);
  EXPECT_EQ(status_of([] { parse_tei_predict(R"({"inputs": [["a"], "b"]})"); }), 422);
  EXPECT_EQ(status_of([] { parse_tei_predict(R"({"inputs": 5})"); }), 422);
  EXPECT_EQ(status_of([] { parse_tei_predict(R"({"input": "a"})"); }), 422);
  EXPECT_EQ(status_of([] { parse_tei_predict(R"({"inputs": "a", "truncation_direction": "middle"})"); }), 422);
  EXPECT_EQ(status_of([] { parse_tei_predict(R"({"inputs": "a", "raw_scores": "yes"})"); }), 422);
  EXPECT_EQ(status_of([] { parse_tei_predict(R"({"inputs": )"); }), 400);
}

TEST(TeiDecodeBody, SingleAndBatch) {
  DecodeRequest one = parse_tei_decode(R"({"ids": [0, 31414, 2]})");
  EXPECT_TRUE(one.single);
  EXPECT_TRUE(one.skip_special_tokens);  // TEI's default
  EXPECT_EQ(one.ids, (std::vector<std::vector<int32_t>>{{0, 31414, 2}}));
  DecodeRequest two = parse_tei_decode(R"({"ids": [[1], [2, 3]], "skip_special_tokens": false})");
  EXPECT_FALSE(two.single);
  EXPECT_FALSE(two.skip_special_tokens);
  EXPECT_EQ(two.ids.size(), 2u);
  EXPECT_EQ(status_of([] { parse_tei_decode(R"({"ids": [-1]})"); }), 422);
  EXPECT_EQ(status_of([] { parse_tei_decode(R"({"ids": "x"})"); }), 422);
}

TEST(InvocationBody, PairObjects) {
  ParsedInputs p = parse_invocation(R"({"inputs": [{"text": "a", "text_pair": "b"}, "c"]})", "application/json");
  ASSERT_EQ(p.texts.size(), 2u);
  ASSERT_EQ(p.pairs.size(), 2u);
  EXPECT_EQ(p.pairs[0], std::optional<std::string>("b"));
  EXPECT_FALSE(p.pairs[1].has_value());
  ParsedInputs bare = parse_invocation(R"({"text": "a", "text_pair": "b"})", "application/json");
  EXPECT_TRUE(bare.single);
  EXPECT_EQ(bare.pairs.at(0), std::optional<std::string>("b"));
}

TEST(KServeBody, TextsPairsAndOutputs) {
  KServeRequest r = parse_kserve_infer(R"({"id": "42", "inputs": [{"name": "text", "shape": [2], "datatype": "BYTES",
                                             "data": ["good", "bad"]}], "outputs": [{"name": "labels"}]})");
  EXPECT_EQ(r.id, "42");
  EXPECT_EQ(r.inputs.texts, (std::vector<std::string>{"good", "bad"}));
  EXPECT_TRUE(r.inputs.pairs.empty());
  EXPECT_EQ(r.outputs, std::vector<std::string>{"labels"});

  KServeRequest nested = parse_kserve_infer(
      R"({"inputs": [{"name": "t", "shape": [2, 2], "datatype": "BYTES", "data": [["a", "b"], ["c", "d"]]}]})");
  EXPECT_EQ(nested.inputs.texts, (std::vector<std::string>{"a", "c"}));
  ASSERT_EQ(nested.inputs.pairs.size(), 2u);
  EXPECT_EQ(nested.inputs.pairs[1], std::optional<std::string>("d"));

  KServeRequest two = parse_kserve_infer(R"({"inputs": [
      {"name": "text", "shape": [1], "datatype": "BYTES", "data": ["a"]},
      {"name": "text_pair", "shape": [1], "datatype": "BYTES", "data": ["b"]}]})");
  EXPECT_EQ(two.inputs.pairs.at(0), std::optional<std::string>("b"));

  for (const char* bad :
       {R"({"inputs": []})", R"({"inputs": [{"name": "t", "shape": [1], "datatype": "FP32", "data": [1]}]})",
        R"({"inputs": [{"name": "t", "shape": [3], "datatype": "BYTES", "data": ["a"]}]})",
        R"({"inputs": [{"name": "t", "shape": [1], "datatype": "BYTES", "data": [1]}]})",
        R"({"inputs": [{"name": "t", "shape": [1], "datatype": "BYTES", "data": ["a"]}], "outputs": [{"name": "x"}]})",
        R"(nope)"})
    EXPECT_EQ(status_of([&] { parse_kserve_infer(bad); }), 400) << bad;
}

TEST(KServeBody, RenderedAsTheProtocolsTensors) {
  Prediction p;
  p.label_id = 1;
  p.label = "positive";
  p.logits = {-1.f, 2.f};
  p.scores = {0.25f, 0.75f};
  KServeRequest r;
  r.id = "7";
  const json out = json::parse(render_kserve_infer({p, p}, r, "sentiment", "1.0"));
  EXPECT_EQ(out["model_name"], "sentiment");
  EXPECT_EQ(out["model_version"], "1.0");
  EXPECT_EQ(out["id"], "7");
  ASSERT_EQ(out["outputs"].size(), 3u);
  EXPECT_EQ(out["outputs"][0]["name"], "logits");
  EXPECT_EQ(out["outputs"][0]["datatype"], "FP32");
  EXPECT_EQ(out["outputs"][0]["shape"], json({2, 2}));
  EXPECT_EQ(out["outputs"][0]["data"], json({-1.0, 2.0, -1.0, 2.0}));
  EXPECT_EQ(out["outputs"][1]["name"], "probabilities");
  EXPECT_EQ(out["outputs"][1]["data"][1], 0.75);
  EXPECT_EQ(out["outputs"][2]["datatype"], "BYTES");
  EXPECT_EQ(out["outputs"][2]["shape"], json({2}));
  EXPECT_EQ(out["outputs"][2]["data"], json({"positive", "positive"}));
  r.outputs = {"probabilities"};
  EXPECT_EQ(json::parse(render_kserve_infer({p}, r, "m", "1"))["outputs"].size(), 1u);
}

TEST(SageMakerEnv, FlagsAndSafePortRange) {
  for (const char* t : {"true", "True", "TRUE", " true\n", "1"}) EXPECT_TRUE(env_flag_is_true(t)) << t;
  for (const char* f : {"", "false", "False", "0", "no-way"}) EXPECT_FALSE(env_flag_is_true(f)) << f;
  EXPECT_EQ(pick_second_port("", 8081, false, 8080), 8081);
  EXPECT_EQ(pick_second_port("29000-29999", 8081, false, 8080), 29000);
  EXPECT_EQ(pick_second_port("8080-8090", 8081, false, 8080), 8081);  // skips the inference port
  EXPECT_EQ(pick_second_port("29000-29999", 29005, true, 8080), 29005);
  EXPECT_EQ(pick_second_port("29000-29999", -1, true, 8080), -1);
  EXPECT_THROW(pick_second_port("29000-29999", 8081, true, 8080), Error);
  EXPECT_THROW(pick_second_port("8080-8080", 8081, false, 8080), Error);
  EXPECT_THROW(pick_second_port("29999-29000", 8081, false, 8080), Error);
  EXPECT_THROW(pick_second_port("lots", 8081, false, 8080), Error);
}
