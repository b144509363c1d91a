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

// BYTES the way tritonclient.http sends them by default (binary_data=True): the JSON header,
// then each binary input's elements as a little-endian u32 length and the bytes, in input order.
std::string triton_bytes(const std::vector<std::string>& elements) {
  std::string out;
  for (const std::string& e : elements) {
    const uint32_t n = uint32_t(e.size());
    for (int i = 0; i < 4; ++i) out += char((n >> (8 * i)) & 0xff);
    out += e;
  }
  return out;
}

TEST(KServeBody, BinaryTensorDataAsTritonClientSendsIt) {
  const std::string texts = triton_bytes({"good", "", std::string(300, 'x')});
  const std::string pairs = triton_bytes({"a", "b", "c"});
  const std::string header =
      R"({"inputs": [{"name": "text", "shape": [3, 1], "datatype": "BYTES", "parameters": {"binary_data_size": )" +
      std::to_string(texts.size()) +
      R"(}}, {"name": "text_pair", "shape": [3], "datatype": "BYTES", "parameters": {"binary_data_size": )" +
      std::to_string(pairs.size()) + R"(}}], "parameters": {"binary_data_output": true}})";
  const KServeRequest r = parse_kserve_infer(header + texts + pairs, header.size());
  EXPECT_EQ(r.inputs.texts, (std::vector<std::string>{"good", "", std::string(300, 'x')}));
  ASSERT_EQ(r.inputs.pairs.size(), 3u);
  EXPECT_EQ(r.inputs.pairs[2], std::optional<std::string>("c"));

  // A JSON input beside a binary one, and the header alone (no binary data at all).
  const std::string one = triton_bytes({"b"});
  const std::string mixed =
      R"({"inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": ["a"]}, {"name": "text_pair", "shape": [1], "datatype": "BYTES", "parameters": {"binary_data_size": 5}}]})";
  EXPECT_EQ(parse_kserve_infer(mixed + one, mixed.size()).inputs.pairs.at(0), std::optional<std::string>("b"));
  const std::string plain = R"({"inputs": [{"name": "t", "shape": [1], "datatype": "BYTES", "data": ["a"]}]})";
  EXPECT_EQ(parse_kserve_infer(plain, plain.size()).inputs.texts.at(0), "a");

  const auto body_with = [](const std::string& size, const std::string& bin) {
    return R"({"inputs": [{"name": "t", "shape": [1], "datatype": "BYTES", "parameters": {"binary_data_size": )" +
           size + "}}]}" + bin;
  };
  const std::string hello = triton_bytes({"hello"});  // 9 bytes
  EXPECT_EQ(parse_kserve_infer(body_with("9", hello), body_with("9", "").size()).inputs.texts.at(0), "hello");
  struct Bad {
    std::string size, binary;
    long json_delta = 0;  // the header's length against the JSON's own
    const char* what;
  };
  for (const Bad& b :
       std::vector<Bad>{{"9", hello.substr(0, 8), 0, "binary_data_size past the binary data"},
                        {"9", hello + "z", 0, "bytes that belong to no input"},
                        {"3", hello.substr(0, 3), 0, "an element's 4-byte length cut short"},
                        {"9", std::string("\xff\xff\xff\x7f", 4) + "hello", 0, "an element's length past the data"},
                        {"9", hello, 100, "the header's length past the body"},
                        {"9", hello, -1, "the JSON cut short"},
                        {"-1", "", 0, "a negative binary_data_size"},
                        {"10", triton_bytes({"a", "b"}), 0, "2 elements for shape [1]"},
                        {"6", triton_bytes({"\xff\xfe"}), 0, "an element that is not UTF-8"}}) {
    const std::string body = body_with(b.size, b.binary);
    const size_t json_length = size_t(long(body_with(b.size, "").size()) + b.json_delta);
    EXPECT_EQ(status_of([&] { parse_kserve_infer(body, json_length); }), 400) << b.what;
  }
  const std::string both =
      R"({"inputs": [{"name": "t", "shape": [1], "datatype": "BYTES", "data": ["a"], "parameters": {"binary_data_size": 0}}]})";
  EXPECT_EQ(status_of([&] { parse_kserve_infer(both, both.size()); }), 400);

  // The element count is bounded by the shape while reading: 100,000 empty elements for
  // shape [1] stop at the second, not after a string per 4 bytes.
  const std::string empties(400000, '\0');
  const std::string many = body_with(std::to_string(empties.size()), empties);
  try {
    parse_kserve_infer(many, body_with(std::to_string(empties.size()), "").size());
    ADD_FAILURE() << "accepted 100,000 elements for shape [1]";
  } catch (const HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("more than the shape's 1 elements"), std::string::npos) << e.what();
  }
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
