// Request parsing and answer rendering (pure functions, no socket), and the batcher's
// length split.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "serve/batcher.h"
#include "serve/http_error.h"
#include "serve/request.h"
#include "serve/serve_test_util.h"

using namespace rc::serve;
using nlohmann::json;

namespace {

using rc::test::status_of;

rc::Prediction pred(int id, std::vector<float> scores, std::vector<std::string> labels) {
  rc::Prediction p;
  p.label_id = id;
  p.label = labels[size_t(id)];
  p.scores = scores;
  p.score = scores[size_t(id)];
  for (float s : scores) p.logits.push_back(s * 10);
  return p;
}

}  // namespace

TEST(ParseInvocation, JsonForms) {
  auto a = parse_invocation(R"({"inputs": "hello"})", "application/json");
  EXPECT_EQ(a.texts, std::vector<std::string>{"hello"});
  EXPECT_TRUE(a.single);
  auto b = parse_invocation(R"({"inputs": ["a", "b"], "parameters": {"return_all_scores": true}})",
                            "application/json; charset=utf-8");
  EXPECT_EQ(b.texts, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(b.single);
  EXPECT_TRUE(b.all_scores);
  auto c = parse_invocation(R"("bare")", "application/json");
  EXPECT_EQ(c.texts, std::vector<std::string>{"bare"});
  auto d = parse_invocation(R"(["x","y","z"])", "");
  EXPECT_EQ(d.texts.size(), 3u);
  auto e =
      parse_invocation(R"({"inputs": "t", "top_k": null, "raw_scores": true, "truncate": false})", "application/json");
  EXPECT_TRUE(e.all_scores);
  EXPECT_TRUE(e.raw_scores);
  ASSERT_TRUE(e.truncate.has_value());
  EXPECT_FALSE(*e.truncate);
}

TEST(ParseInvocation, PlainAndCsv) {
  auto p = parse_invocation("one text, with a comma", "text/plain");
  EXPECT_EQ(p.texts, std::vector<std::string>{"one text, with a comma"});
  auto c = parse_invocation("first\n\"second, quoted\"\n\"with \"\"quotes\"\"\"\r\nlast", "text/csv");
  EXPECT_EQ(c.texts, (std::vector<std::string>{"first", "second, quoted", "with \"quotes\"", "last"}));
}

TEST(ParseInvocation, MalformedIs400) {
  EXPECT_EQ(status_of([] { parse_invocation("{\"inputs\": ", "application/json"); }), 400);
  EXPECT_EQ(status_of([] { parse_invocation("{\"txt\": \"a\"}", "application/json"); }), 400);
  // {"text": ...} alone is the pipeline's dict form (a text, maybe with "text_pair"); a
  // non-string text_pair is not.
  EXPECT_EQ(status_of([] { parse_invocation("{\"text\": \"a\"}", "application/json"); }), 0);
  EXPECT_EQ(
      status_of([] { parse_invocation("{\"inputs\": [{\"text\": \"a\", \"text_pair\": 3}]}", "application/json"); }),
      400);
  EXPECT_EQ(status_of([] { parse_invocation("{\"inputs\": []}", "application/json"); }), 400);
  EXPECT_EQ(status_of([] { parse_invocation("{\"inputs\": [1, 2]}", "application/json"); }), 400);
  EXPECT_EQ(status_of([] { parse_invocation("{\"inputs\": \"a\", \"top_k\": -3}", "application/json"); }), 400);
  EXPECT_EQ(status_of([] { parse_invocation("\"\xC3\x28\"", "application/json"); }), 400);
  EXPECT_EQ(status_of([] { parse_invocation("abc\xFF", "text/plain"); }), 400);
  EXPECT_EQ(status_of([] { parse_invocation("\"open", "text/csv"); }), 400);
  EXPECT_EQ(status_of([] { parse_invocation("a,b\n", "text/csv"); }), 400);
  EXPECT_EQ(status_of([] { parse_invocation("", "text/csv"); }), 400);
  EXPECT_EQ(status_of([] { parse_invocation("say \"hi\"\n", "text/csv"); }), 400);  // strict: stray quote
  EXPECT_EQ(status_of([] { parse_invocation("\"a\"b\n", "text/csv"); }), 400);      // text after a quote
  EXPECT_EQ(status_of([] { parse_invocation("x", "image/png"); }), 415);
  // Past the JSON depth bound: a 400 HttpError like every other refusal, not an rc::Error
  // (found by the fuzz_multipart smoke: the harness, as the routes, expects HttpError).
  EXPECT_EQ(status_of([] { parse_invocation(std::string(200, '{'), "application/json"); }), 400);
  EXPECT_EQ(status_of([] { parse_invocation("{\"inputs\": " + std::string(150, '['), ""); }), 400);
}

TEST(Utf8, ValidatorFollowsTable37) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));          // truncated
}

TEST(ResponseFormat, AcceptHeader) {
  EXPECT_EQ(response_format(""), ResponseFormat::json);
  EXPECT_EQ(response_format("*/*"), ResponseFormat::json);
  EXPECT_EQ(response_format("text/csv"), ResponseFormat::csv);
  EXPECT_EQ(response_format("image/png, text/csv;q=0.5"), ResponseFormat::csv);
  EXPECT_EQ(status_of([] { response_format("image/png"); }), 406);
}

TEST(Render, InvocationJsonAndCsv) {
  const std::vector<std::string> labels{"negative", "positive"};
  std::vector<rc::Prediction> preds{pred(0, {0.75f, 0.25f}, labels), pred(1, {0.125f, 0.875f}, labels)};
  ParsedInputs req;
  json top = json::parse(render_invocation_json(preds, req, labels));
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0]["label"], "negative");
  EXPECT_DOUBLE_EQ(top[0]["score"].get<double>(), 0.75);
  EXPECT_EQ(top[1]["label"], "positive");
  req.all_scores = true;
  json all = json::parse(render_invocation_json(preds, req, labels));
  ASSERT_EQ(all[1].size(), 2u);
  EXPECT_EQ(all[1][0]["label"], "positive");  // best first
  EXPECT_EQ(all[1][1]["label"], "negative");
  req.all_scores = false;
  req.raw_scores = true;
  json raw = json::parse(render_invocation_json(preds, req, labels));
  EXPECT_DOUBLE_EQ(raw[0]["score"].get<double>(), 7.5);  // the logit, not the probability
  req.raw_scores = false;
  EXPECT_EQ(render_invocation_csv(preds, req, labels), "negative,0.75\npositive,0.875\n");
}

TEST(Render, TeiPredictUnwrapsSingleInput) {
  const std::vector<std::string> labels{"negative", "positive"};
  std::vector<rc::Prediction> preds{pred(1, {0.25f, 0.75f}, labels)};
  ParsedInputs req;
  req.single = true;
  json one = json::parse(render_tei_predict(preds, req, labels));
  ASSERT_TRUE(one.is_array());
  EXPECT_EQ(one[0]["label"], "positive");
  req.single = false;
  json many = json::parse(render_tei_predict(preds, req, labels));
  EXPECT_TRUE(many[0].is_array());
}

TEST(ErrorBody, HasCodeTypeMessage) {
  json j = json::parse(error_body(429, "TooManyRequests", "queue full \xFF"));
  EXPECT_EQ(j["code"], 429);
  EXPECT_EQ(j["type"], "TooManyRequests");
  EXPECT_TRUE(j["message"].is_string());
}

TEST(SplitByLength, KeepsSimilarLengthsTogether) {
  // Similar lengths: one chunk.
  std::vector<int64_t> same(32, 30);
  EXPECT_EQ(split_by_length(same), std::vector<size_t>{32});
  // 16 short rows then 16 long ones: splitting saves (512-16)*16 padded tokens.
  std::vector<int64_t> mixed;
  for (int i = 0; i < 16; ++i) mixed.push_back(20);
  for (int i = 0; i < 16; ++i) mixed.push_back(512);
  EXPECT_EQ(split_by_length(mixed), (std::vector<size_t>{16, 32}));
  // Tiny batches stay whole even when lengths differ (a small GEMM wastes more).
  std::vector<int64_t> tiny{5, 9, 40};
  EXPECT_EQ(split_by_length(tiny), std::vector<size_t>{3});
  // Tweet-like spread (14..60 tokens, 32 rows): one batch, not a handful of small ones.
  std::vector<int64_t> tweets;
  for (int i = 0; i < 32; ++i) tweets.push_back(14 + (i * 46) / 31);
  EXPECT_EQ(split_by_length(tweets), std::vector<size_t>{32});
  // ...but a long tail of many short rows does split once it holds enough tokens.
  std::vector<int64_t> many;
  for (int i = 0; i < 64; ++i) many.push_back(20);
  for (int i = 0; i < 8; ++i) many.push_back(120);
  EXPECT_EQ(split_by_length(many), (std::vector<size_t>{64, 72}));
  EXPECT_TRUE(split_by_length({}).empty());
}
