// A token classifier (RobertaForTokenClassification) on the server: POST / answers as the
// Inference API's token-classification (entity groups, aggregation "simple" unless asked),
// POST /invocations as the HF inference toolkit's pipeline (no aggregation unless asked), both
// equal to model::TokenClassifier's answer; TEI's /predict refuses it, and another task's
// parameters or a bad aggregation_strategy are 400s naming what is wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/token_classifier.h"
#include "serve/serve_fixture.h"
#include "support/files.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using rc::test::kTiny;

// The tiny body with a fresh 5-label token head (random: most tokens get an entity).
fs::path write_tagger_model(const fs::path& dir) {
  rc::model::CheckpointLoadOptions lo;
  lo.head = rc::model::HeadKind::token_classifier;
  lo.init_head = true;
  lo.labels = {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"};
  lo.seed = 3;
  auto m = rc::model::load_checkpoint(kTiny, lo);
  for (float& w : m->param("classifier.weight")) w *= 200.0f;  // decisive scores, away from ties
  rc::model::save_checkpoint(dir, *m);
  rc::model::copy_tokenizer_files(kTiny, dir);
  return dir;
}

struct TaggerFolder {
  TempDir models;
  fs::path model = write_tagger_model(models.path() / "tagger");
};
struct TaggerServer : TaggerFolder, RealModelServer {
  TaggerServer() : RealModelServer(model) {}
};

json expected(const rc::model::TokenClassifier& t, const std::string& text, rc::model::Aggregation a) {
  return rc::model::token_classification_to_json(t.predict(std::vector<std::string>{text}, a)[0]);
}

}  // namespace

TEST(TokenServe, HfEndpointAndInvocationsAnswerAsThePipeline) {
  TaggerServer s;
  rc::LoadOptions lo;
  lo.precision = rc::Precision::fp32;
  auto tagger = rc::model::TokenClassifier::load(s.model, lo);
  const std::string a = "Ann went to Rome today", b = "the city saw Bob";
  const json simple_a = expected(*tagger, a, rc::model::Aggregation::simple);
  ASSERT_FALSE(simple_a.empty()) << "the fixture tags nothing: the test would prove little";

  HttpResult r = s.post("/", {{"inputs", a}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), simple_a);
  for (const json& e : json::parse(r.body)) EXPECT_TRUE(e.contains("entity_group")) << e;  // what the client checks

  r = s.post("/", {{"inputs", {a, b}}, {"parameters", {{"aggregation_strategy", "first"}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), json::array({expected(*tagger, a, rc::model::Aggregation::first),
                                              expected(*tagger, b, rc::model::Aggregation::first)}));

  r = s.post("/invocations", {{"inputs", a}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), expected(*tagger, a, rc::model::Aggregation::none));
  r = s.post("/invocations", {{"inputs", a}, {"parameters", {{"aggregation_strategy", "max"}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), expected(*tagger, a, rc::model::Aggregation::max));
  // TorchServe's inference API takes the same bodies.
  r = s.post("/predictions/m", {{"inputs", a}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body), expected(*tagger, a, rc::model::Aggregation::none));
}

TEST(TokenServe, OtherTasksAndBadParametersAreRefused) {
  TaggerServer s;
  HttpResult r = s.post("/predict", {{"inputs", "Ann went to Rome"}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("token classifier"), std::string::npos) << r.body;

  r = s.post("/", {{"inputs", "Ann"}, {"parameters", {{"function_to_apply", "softmax"}}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("text-classification"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("serves token-classification"), std::string::npos) << r.body;

  r = s.post("/", {{"inputs", "Ann"}, {"parameters", {{"aggregation_strategy", "longest"}}}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("aggregation_strategy"), std::string::npos) << r.body;

  r = s.post("/invocations", {{"inputs", {{"text", "a"}, {"text_pair", "b"}}}});
  EXPECT_EQ(r.status, 400) << r.body;

  // KServe v2's outputs are a sequence classifier's: refused up front naming both tasks (the
  // batch itself failed with "answers token-classification only" before).
  r = s.post("/v2/models/m/infer",
             {{"inputs", json::array({{{"name", "text"}, {"shape", {1}}, {"datatype", "BYTES"}, {"data", {"Ann"}}}})}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("token-classification"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("text-classification"), std::string::npos) << r.body;
}
