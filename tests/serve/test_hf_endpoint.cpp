// Hugging Face Inference Endpoints' POST / (hf_endpoint_routes.cpp), the server-wide
// --function-to-apply and --preprocess tweet, and their record in a package. Bodies and shapes
// are the ones @huggingface/inference sends and validates (providers/hf-inference.js); the
// client itself is run against `roberta serve` by tests/serve/hf-client (ctest serve_hf_client).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/tweet_text.h"
#include "roberta/classifier.h"
#include "roberta/fill_mask.h"
#include "serve/http_error.h"
#include "serve/package.h"
#include "serve/request.h"
#include "serve/serve_fixture.h"
#include "serve/serve_test_util.h"
#include "support/files.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using rc::test::kTiny;
const std::vector<std::string> kLabels = {"negative", "neutral", "positive"};

using rc::test::status_of;

// The error body of POST /: {"error": "..."} and nothing else, as the toolkit answers.
std::string hf_error(const HttpResult& r, int status) {
  EXPECT_EQ(r.status, status) << r.body;
  const json j = json::parse(r.body, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.size() == 1 && j.contains("error") && j["error"].is_string()) << r.body;
  return j.is_object() && j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>() : "";
}

// Every label of one input, as the classifier's own scores put them: best first.
void expect_all_labels_best_first(const json& got, const rc::Prediction& want, const std::string& what) {
  ASSERT_TRUE(got.is_array()) << what;
  ASSERT_EQ(got.size(), kLabels.size()) << what << ": every label's score";
  for (size_t i = 0; i < got.size(); ++i) {
    const size_t k = size_t(std::find(kLabels.begin(), kLabels.end(), got[i]["label"]) - kLabels.begin());
    ASSERT_LT(k, kLabels.size()) << got.dump();
    // Batched beside other rows vs. predict(): padding is masked (test_serve_live.cpp measured
    // max |d| = 0 on this fixture, fp32).
    EXPECT_NEAR(got[i]["score"].get<double>(), want.scores[k], 1e-5) << what << " " << kLabels[k];
    if (i > 0) {
      EXPECT_GE(got[i - 1]["score"].get<double>(), got[i]["score"].get<double>()) << what;
    }
  }
}

}  // namespace

TEST(HfEndpointBody, ParsesWhatTheClientSends) {
  ParsedInputs one = parse_hf_endpoint(R"({"inputs": "I love it"})");
  EXPECT_EQ(one.texts, std::vector<std::string>{"I love it"});
  EXPECT_TRUE(one.parameters.empty());
  EXPECT_EQ(one.function_to_apply, rc::ScoreFunction::model_default);
  ParsedInputs many = parse_hf_endpoint(
      R"({"inputs": ["a", "b"], "parameters": {"top_k": 2, "function_to_apply": "SIGMOID", "truncation": true}})");
  EXPECT_EQ(many.texts.size(), 2u);
  EXPECT_EQ(many.top_k, 2);
  EXPECT_EQ(many.function_to_apply, rc::ScoreFunction::sigmoid);  // ClassificationFunction[name.upper()]
  EXPECT_EQ(many.parameters, (std::vector<std::string>{"function_to_apply", "top_k", "truncation"}));
  ParsedInputs pair = parse_hf_endpoint(R"({"inputs": {"text": "a", "text_pair": "b"}, "parameters": null})");
  ASSERT_EQ(pair.pairs.size(), 1u);
  EXPECT_EQ(pair.pairs[0], std::optional<std::string>("b"));
  EXPECT_TRUE(parse_hf_endpoint(R"({"inputs": "a", "parameters": {"top_k": null}})").all_scores);
  EXPECT_EQ(parse_hf_endpoint(R"({"inputs": "a", "parameters": {"targets": ["x"]}})").parameters,
            std::vector<std::string>{"targets"});  // the route judges it, knowing the model's task
  for (const char* bad :
       {R"({"input": "a"})", R"(["a"])", R"("a")", "not json", R"({"inputs": []})", R"({"inputs": 3})",
        R"({"inputs": "a", "parameters": []})", R"({"inputs": "a", "parameters": {"function_to_apply": "relu"}})",
        R"({"inputs": "a", "parameters": {"function_to_apply": 1}})", R"({"inputs": "a", "parameters": {"top_k": 0}})",
        R"({"inputs": "a", "parameters": {"truncation": "yes"}})"})
    EXPECT_EQ(status_of([&] { parse_hf_endpoint(bad); }), 400) << bad;
}

TEST(HfEndpointBody, EveryLabelBestFirstInOneListPerInput) {
  rc::Prediction p;
  p.logits = {0.5f, 2.0f, 0.5f};  // a tie between ids 0 and 2: Python's stable sort keeps id order
  p.scores = rc::apply_score_function(rc::ScoreFunction::softmax, p.logits);
  ParsedInputs req;
  json got = json::parse(render_hf_text_classification({p}, req, kLabels));
  ASSERT_EQ(got.size(), 1u) << "one input still answers [[...]]: the client takes answer[0]";
  ASSERT_EQ(got[0].size(), 3u);
  EXPECT_EQ(got[0][0]["label"], "neutral");
  EXPECT_EQ(got[0][1]["label"], "negative");
  EXPECT_EQ(got[0][2]["label"], "positive");
  EXPECT_EQ(got[0][0]["score"].get<float>(), p.scores[1]);
  req.top_k = 2;
  req.function_to_apply = rc::ScoreFunction::sigmoid;  // from the logits, whatever the scores were
  got = json::parse(render_hf_text_classification({p, p}, req, kLabels));
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(got[1].size(), 2u);
  EXPECT_NEAR(got[1][0]["score"].get<double>(), 1.0 / (1.0 + std::exp(-2.0)), 1e-7);
  EXPECT_NEAR(got[1][1]["score"].get<double>(), 1.0 / (1.0 + std::exp(-0.5)), 1e-7);
  EXPECT_EQ(got[1][1]["label"], "negative");
}

TEST(HfEndpointLive, TextClassificationEqualsTheClassifier) {
  const std::vector<std::string> texts = {"Covid cases are increasing fast!", "I love this", ""};
  auto direct = rc::Classifier::load(kTiny);
  const auto want = direct->predict(texts);
  RealModelServer s(kTiny);
  HttpResult r = s.post("/", {{"inputs", texts[0]}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/json");
  json got = json::parse(r.body);
  ASSERT_EQ(got.size(), 1u);
  expect_all_labels_best_first(got[0], want[0], "one text");
  got = json::parse(s.post("/", {{"inputs", texts}}).body);
  ASSERT_EQ(got.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) expect_all_labels_best_first(got[i], want[i], "text " + std::to_string(i));

  rc::LoadOptions sigmoid;
  sigmoid.function_to_apply = rc::ScoreFunction::sigmoid;
  const auto want_sigmoid = rc::Classifier::load(kTiny, sigmoid)->predict(texts);
  r = s.post("/", {{"inputs", texts[1]}, {"parameters", {{"function_to_apply", "sigmoid"}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  expect_all_labels_best_first(json::parse(r.body)[0], want_sigmoid[1], "sigmoid");
  r = s.post("/", {{"inputs", texts[1]}, {"parameters", {{"top_k", 1}}}});
  got = json::parse(r.body);
  ASSERT_EQ(got[0].size(), 1u) << r.body;
  EXPECT_EQ(got[0][0]["label"], want[1].label);
  // The routes that were there answer as before: SageMaker's top label for one text.
  got = json::parse(s.post("/invocations", {{"inputs", texts[1]}}).body);
  EXPECT_EQ(got[0]["label"], want[1].label);
  EXPECT_NEAR(got[0]["score"].get<double>(), want[1].score, 1e-5);
  // ... and take function_to_apply under "parameters", as the HF toolkit hands it to the pipeline.
  got = json::parse(
      s.post("/invocations", {{"inputs", texts[1]}, {"parameters", {{"function_to_apply", "sigmoid"}}}}).body);
  EXPECT_EQ(got[0]["label"], want_sigmoid[1].label);
  EXPECT_NEAR(got[0]["score"].get<double>(), want_sigmoid[1].score, 1e-5);
  got = json::parse(s.post("/invocations", {{"inputs", texts[1]},
                                            {"parameters", {{"function_to_apply", "sigmoid"}, {"top_k", nullptr}}}})
                        .body);
  expect_all_labels_best_first(got[0], want_sigmoid[1], "/invocations sigmoid, every label");
  EXPECT_EQ(s.post("/invocations", {{"inputs", "a"}, {"parameters", {{"function_to_apply", "relu"}}}}).status, 400);
}

TEST(HfEndpointLive, AnotherTasksRequestIsRefusedNamingBoth) {
  RealModelServer s(kTiny);
  std::string e = hf_error(s.post("/", {{"inputs", "a"}, {"parameters", {{"targets", {"x"}}}}}), 400);
  EXPECT_NE(e.find("fill-mask"), std::string::npos) << e;
  EXPECT_NE(e.find("serves text-classification"), std::string::npos) << e;
  e = hf_error(s.post("/", {{"inputs", "a"}, {"parameters", {{"aggregation_strategy", "simple"}}}}), 400);
  EXPECT_NE(e.find("token-classification"), std::string::npos) << e;
  e = hf_error(s.post("/", {{"inputs", "a"}, {"parameters", {{"temperature", 1}}}}), 400);
  EXPECT_NE(e.find("unknown text-classification parameter 'temperature'"), std::string::npos) << e;
  e = hf_error(s.post("/", {{"text", "a"}}), 400);
  EXPECT_NE(e.find("\"inputs\""), std::string::npos) << e;
  hf_error(s.post("/", {{"inputs", "a"}, {"parameters", {{"function_to_apply", "relu"}}}}), 400);

  TempDir tmp;
  RealModelServer mlm(write_tiny_mlm(tmp.path() / "mlm"));
  e = hf_error(mlm.post("/", {{"inputs", "a <mask>"}, {"parameters", {{"function_to_apply", "sigmoid"}}}}), 400);
  EXPECT_NE(e.find("text-classification"), std::string::npos) << e;
  EXPECT_NE(e.find("serves fill-mask"), std::string::npos) << e;
  e = hf_error(mlm.post("/", {{"inputs", "a text to classify"}}), 400);
  EXPECT_NE(e.find("no <mask>"), std::string::npos) << e;
  EXPECT_NE(e.find("text-classification"), std::string::npos) << e;
  e = hf_error(mlm.post("/", {{"inputs", "a <mask>"}, {"parameters", {{"targets", {1, 2}}}}}), 400);
  EXPECT_NE(e.find("\"targets\" must be a string or a non-empty list of strings"), std::string::npos) << e;
}

TEST(HfEndpointLive, FillMaskEqualsTheFillMasker) {
  TempDir tmp;
  const fs::path dir = write_tiny_mlm(tmp.path() / "mlm");
  auto fm = rc::FillMasker::load(dir);
  RealModelServer s(dir);
  const std::string text = "the cat <mask> on the mat";
  HttpResult r = s.post("/", {{"inputs", text}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, fm->fill_json({text}, 5, true));  // the pipeline's default top_k
  EXPECT_EQ(json::parse(r.body).size(), 5u);
  r = s.post("/", {{"inputs", {text, "<mask> is good"}}, {"parameters", {{"top_k", 2}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, fm->fill_json({text, "<mask> is good"}, 2, false));
  // targets, as a list on POST / and as one string on /invocations.
  const std::vector<std::string> targets = {"sat", "Ġran", "dog"};
  r = s.post("/", {{"inputs", text}, {"parameters", {{"targets", targets}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, fm->fill_json({text}, 5, true, 0, targets));
  EXPECT_EQ(json::parse(r.body).size(), 3u);  // top_k capped at the targets' count
  r = s.post("/invocations", {{"inputs", text}, {"parameters", {{"targets", "Ġsat"}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, fm->fill_json({text}, 5, true, 0, {"Ġsat"}));
  r = s.post("/invocations", {{"inputs", text}, {"parameters", {{"targets", std::vector<std::string>(5000, "x")}}}});
  EXPECT_EQ(r.status, 400) << r.body;
}

// --function-to-apply and --preprocess tweet on the server: every route's raw text is the
// preprocessed one, every classifier score the chosen function.
TEST(HfEndpointLive, ServerOptionsApplyOnEveryRoute) {
  const std::string raw = "@alice loved it https://t.co/xyz", cooked = rc::preprocess_tweet(raw);
  ASSERT_EQ(cooked, "@user loved it http");
  rc::LoadOptions sigmoid;
  sigmoid.function_to_apply = rc::ScoreFunction::sigmoid;
  auto direct = rc::Classifier::load(kTiny, sigmoid);
  const rc::Prediction want = direct->predict(std::vector<std::string>{cooked})[0];
  const rc::Prediction unprocessed = direct->predict(std::vector<std::string>{raw})[0];
  ASSERT_GT(std::abs(want.logits[0] - unprocessed.logits[0]), 1e-4) << "the test needs a text preprocessing changes";
  RealModelServer s(kTiny, [](ServerConfig& c) {
    c.registry.backend.function_to_apply = "sigmoid";
    c.registry.backend.preprocess = "tweet";
  });
  expect_all_labels_best_first(json::parse(s.post("/", {{"inputs", raw}}).body)[0], want, "POST /");
  json got = json::parse(s.post("/invocations", {{"inputs", raw}, {"parameters", {{"top_k", nullptr}}}}).body);
  expect_all_labels_best_first(got[0], want, "/invocations");
  expect_all_labels_best_first(json::parse(s.post("/predict", {{"inputs", raw}}).body), want, "TEI /predict");
  got = json::parse(s.post("/tokenize", {{"inputs", raw}}).body)[0];
  const auto ids = direct->tokenizer().encode(cooked);
  ASSERT_EQ(got.size(), ids.size()) << got.dump();
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(got[i]["id"], ids[i]) << i;
}

TEST(HfEndpointLive, PackageRecordsTheServingOptions) {
  TempDir tmp;
  PackageOptions options;
  options.function_to_apply = "none";
  options.preprocess = "tweet";
  const fs::path archive = tmp.path() / "model.tar.gz";
  write_package(kTiny, archive, options);
  extract_package(archive, tmp.path() / "x");
  const ServingSettings settings = read_settings(tmp.path() / "x");
  EXPECT_EQ(settings.function_to_apply, "none");
  EXPECT_EQ(settings.preprocess, "tweet");

  const std::string raw = "@alice loved it https://t.co/xyz";
  rc::LoadOptions none;
  none.function_to_apply = rc::ScoreFunction::none;
  auto direct = rc::Classifier::load(kTiny, none);
  RealModelServer packaged(archive);
  expect_all_labels_best_first(json::parse(packaged.post("/", {{"inputs", raw}}).body)[0],
                               direct->predict(std::vector<std::string>{rc::preprocess_tweet(raw)})[0], "packaged");
  // A flag given to `serve` wins over the package's setting.
  RealModelServer overridden(archive, [](ServerConfig& c) { c.registry.backend.preprocess = "none"; });
  expect_all_labels_best_first(json::parse(overridden.post("/", {{"inputs", raw}}).body)[0],
                               direct->predict(std::vector<std::string>{raw})[0], "--preprocess none");
}

TEST(HfEndpointLive, BadServingOptionsInAPackageAreRefusedNamingTheFile) {
  for (const char* body : {R"({"function_to_apply": "relu"})", R"({"preprocess": "twitter"})"}) {
    try {
      settings_from_json(body, "pkg/code/serving.json");
      ADD_FAILURE() << body << " was accepted";
    } catch (const rc::Error& e) {
      EXPECT_EQ(e.errc(), rc::Errc::format) << e.what();
      EXPECT_NE(std::string(e.what()).find("pkg/code/serving.json"), std::string::npos) << e.what();
    }
  }
  ServingSettings tweet;
  tweet.preprocess = "tweet";
  EXPECT_EQ(settings_from_json(settings_to_json(tweet), "x").preprocess, "tweet");
}
