// The real engine (tests/data/tiny) behind the TEI and KServe v2 routes: text pairs through
// /predict, /invocations and /v2/.../infer give Classifier::predict_pairs's answers, and
// /decode gives the tokenizer's text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "roberta/classifier.h"
#include "serve/serve_fixture.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;

TEST(ServeLivePairs, TeiKServeAndInvocationsMatchPredictPairs) {
  const std::filesystem::path tiny = std::filesystem::path(RC_TEST_DATA_DIR) / "tiny";
  auto direct = rc::Classifier::load(tiny);
  const std::vector<std::string> a = {"A man is playing a guitar.", "ok"}, b = {"Someone makes music.", "fine then"};
  const auto want = direct->predict_pairs(a, b);
  const auto singles = direct->predict(a);
  ASSERT_NE(want[0].logits, singles[0].logits);  // the pair is not the first text alone

  ServerConfig c;
  c.host = "127.0.0.1";
  c.port = 0;
  c.management_port = -1;
  c.compute_threads = 1;
  c.registry.backend.precision = "fp32";
  Server server(c, make_classifier_backend);
  server.start();
  ModelSpec spec;
  spec.name = "tiny";
  spec.path = tiny;
  server.registry().load(spec);
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  const auto& labels = direct->labels();
  auto logit_of = [&](size_t i, const std::string& label) {
    return want[i].logits[size_t(std::find(labels.begin(), labels.end(), label) - labels.begin())];
  };

  auto tei =
      call("POST", base + "/predict",
           json{{"inputs", json::array({json::array({a[0], b[0]}), json::array({a[1], b[1]})})}, {"raw_scores", true}}
               .dump());
  ASSERT_EQ(tei.status, 200) << tei.body;
  json t = json::parse(tei.body);
  for (size_t i = 0; i < 2; ++i)
    for (const auto& e : t[i]) EXPECT_NEAR(e["score"].get<double>(), logit_of(i, e["label"]), 1e-5);

  const json req = {{"inputs",
                     {{{"name", "text"}, {"shape", {2}}, {"datatype", "BYTES"}, {"data", a}},
                      {{"name", "text_pair"}, {"shape", {2}}, {"datatype", "BYTES"}, {"data", b}}}}};
  auto ks = call("POST", base + "/v2/models/tiny/infer", req.dump());
  ASSERT_EQ(ks.status, 200) << ks.body;
  json k = json::parse(ks.body);
  for (size_t i = 0; i < 2; ++i) {
    for (size_t j = 0; j < labels.size(); ++j)
      EXPECT_NEAR(k["outputs"][0]["data"][i * labels.size() + j].get<double>(), want[i].logits[j], 1e-5);
    EXPECT_EQ(k["outputs"][2]["data"][i], want[i].label);
  }

  auto inv = call("POST", base + "/invocations", json{{"inputs", {{{"text", a[0]}, {"text_pair", b[0]}}}}}.dump());
  ASSERT_EQ(inv.status, 200) << inv.body;
  EXPECT_EQ(json::parse(inv.body)[0]["label"], want[0].label);
  EXPECT_NEAR(json::parse(inv.body)[0]["score"].get<double>(), want[0].score, 1e-5);

  const auto ids = direct->tokenizer().encode_pair(a[0], b[0]);
  auto dec = call("POST", base + "/decode", json{{"ids", ids}, {"skip_special_tokens", false}}.dump());
  ASSERT_EQ(dec.status, 200) << dec.body;
  EXPECT_EQ(json::parse(dec.body)[0], "<s>" + a[0] + "</s></s>" + b[0] + "</s>");
}
