// The engine a folder is served with follows config.json's architecture in its family
// (issue 31's review: a BertForTokenClassification folder and a bare BertModel folder went to
// the sequence classifier). Every family's <Prefix>Model embeds, <Prefix>ForTokenClassification
// tags tokens, *ForMaskedLM fills masks, anything else classifies sequences; and a BERT /
// DistilBERT token classifier answers /invocations as model::TokenClassifier does.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/token_classifier.h"
#include "serve/serve_fixture.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(RC_TEST_DATA_DIR);

struct FamilyCase {
  const char* config;  // a config.json of the family, under tests/data
  const char* prefix;  // transformers' class prefix
};
const FamilyCase kFamilies[] = {
    {"tiny/config.json", "Roberta"},
    {"tiny_families/xlm-roberta-seq/config.json", "XLMRoberta"},
    {"tiny_families/camembert-mlm/config.json", "Camembert"},
    {"tiny_families/bert-seq/config.json", "Bert"},
    {"tiny_families/distilbert-seq/config.json", "DistilBert"},
};

// A folder holding only the family's config.json with `architecture`: backend_kind reads no more.
fs::path config_folder(const fs::path& root, const FamilyCase& f, const std::string& architecture) {
  const fs::path dir = root / (std::string(f.prefix) + architecture);
  fs::create_directories(dir);
  std::ifstream in(kData / f.config);
  json c = json::parse(in);
  c["architectures"] = {std::string(f.prefix) + architecture};
  std::ofstream(dir / "config.json") << c.dump(2);
  return dir;
}

const char* kind_name(BackendKind k) {
  switch (k) {
    case BackendKind::classifier:
      return "classifier";
    case BackendKind::token_classifier:
      return "token_classifier";
    case BackendKind::fill_mask:
      return "fill_mask";
    case BackendKind::embedder:
      return "embedder";
  }
  return "?";
}

}  // namespace

TEST(ServeFamilyRouting, EveryFamilysArchitectureGetsItsEngine) {
  TempDir tmp;
  const std::pair<const char*, BackendKind> heads[] = {
      {"Model", BackendKind::embedder},
      {"ForTokenClassification", BackendKind::token_classifier},
      {"ForMaskedLM", BackendKind::fill_mask},
      {"ForSequenceClassification", BackendKind::classifier},
  };
  for (const FamilyCase& f : kFamilies)
    for (const auto& [head, want] : heads) {
      const fs::path dir = config_folder(tmp.path(), f, head);
      EXPECT_STREQ(kind_name(backend_kind(dir, {})), kind_name(want)) << f.prefix << head;
      BackendOptions pooled;
      pooled.pooling = "mean";  // TEI's --pooling embeds whatever the head
      EXPECT_EQ(backend_kind(dir, pooled), BackendKind::embedder) << f.prefix << head;
    }
}

TEST(ServeFamilyRouting, ABareBaseModelAsksForAPooling) {
  // What the embedder says for a bare model without modules.json (its hint: pass --pooling, as
  // TEI asks), not the sequence classifier's "no classification head".
  TempDir tmp;
  for (const FamilyCase& f : kFamilies) {
    const fs::path dir = config_folder(tmp.path(), f, "Model");
    try {
      make_classifier_backend(dir, {});
      ADD_FAILURE() << f.prefix << "Model: served without a pooling";
    } catch (const rc::Error& e) {
      EXPECT_NE(std::string(e.what()).find("the pooling is not known"), std::string::npos)
          << f.prefix << ": " << e.what();
    }
  }
}

namespace {

// A WordPiece masked-LM fixture's body with a fresh token head, saved as transformers saves
// <Prefix>ForTokenClassification, its tokenizer beside it.
fs::path write_tagger(const fs::path& from, const fs::path& dir) {
  rc::model::CheckpointLoadOptions lo;
  lo.head = rc::model::HeadKind::token_classifier;
  lo.init_head = true;
  lo.labels = {"O", "B-PER", "I-PER"};
  lo.seed = 5;
  auto m = rc::model::load_checkpoint(from, lo);
  for (float& w : m->param("classifier.weight")) w *= 200.0f;  // decisive scores, away from ties
  rc::model::save_checkpoint(dir, *m);
  fs::copy_file(from / "tokenizer.json", dir / "tokenizer.json");
  return dir;
}

}  // namespace

TEST(ServeFamilyRouting, BertAndDistilBertTokenClassifiersTagOnInvocations) {
  for (const char* name : {"bert-mlm-fill", "distilbert-mlm-fill"}) {
    TempDir models;
    const fs::path dir = write_tagger(kData / "tiny_families" / name, models.path() / "tagger");
    std::ifstream in(dir / "config.json");
    const std::string arch = json::parse(in).at("architectures").at(0);
    ASSERT_TRUE(arch.ends_with("ForTokenClassification")) << arch;
    rc::LoadOptions lo;
    lo.precision = rc::Precision::fp32;
    const auto tagger = rc::model::TokenClassifier::load(dir, lo);
    const std::string text = "the man played the guitar in paris.";
    const json want = rc::model::token_classification_to_json(
        tagger->predict(std::vector<std::string>{text}, rc::model::Aggregation::none)[0]);
    ASSERT_FALSE(want.empty()) << name << ": the fixture tags nothing, the test would prove little";
    RealModelServer server(dir);
    const HttpResult r = call("POST", server.url("/invocations"), json{{"inputs", text}}.dump());
    ASSERT_EQ(r.status, 200) << arch << ": " << r.body;
    EXPECT_EQ(json::parse(r.body), want) << arch;
  }
}

// What the server reports for a model (TorchServe's description, the load log) names the
// folder's own class: it said RobertaForTokenClassification / RobertaForMaskedLM whatever the
// family.
TEST(ServeFamilyRouting, EnginesDescribeTheirFamilysClass) {
  TempDir models;
  const fs::path tagger = write_tagger(kData / "tiny_families" / "bert-mlm-fill", models.path() / "tagger");
  EXPECT_EQ(make_classifier_backend(tagger, {})->describe(), "BertForTokenClassification (token-classification)");
  const fs::path mlm = kData / "tiny_families" / "distilbert-mlm-fill";
  EXPECT_EQ(make_classifier_backend(mlm, {})->describe(), "DistilBertForMaskedLM (fill-mask)");
  BackendOptions splade;
  splade.pooling = "splade";
  EXPECT_EQ(make_classifier_backend(mlm, splade)->describe(), "DistilBertForMaskedLM pooling=splade");
}
