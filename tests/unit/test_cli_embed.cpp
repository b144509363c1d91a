// `roberta embed` and `roberta rerank` as a user runs them: one JSON vector per input line
// equal to model::Embedder's (the folder's Normalize, --no-normalize, --dimensions, --prompt-name,
// --pooling), and a cross-encoder's documents best first with the sigmoid of rc::Classifier's
// logit (--raw-scores: the logit); usage errors exit 2.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/sentence_transformer.h"
#include "roberta/classifier.h"
#include "support/cross_encoder.h"
#include "support/files.h"
#include "support/run_cli.h"

namespace fs = std::filesystem;
using nlohmann::json;
using rc::test::run_roberta;

namespace {

const fs::path kSt = fs::path(RC_TEST_DATA_DIR) / "embed" / "st";
using rc::test::kTiny;

std::vector<json> json_lines(const std::string& out) {
  std::vector<json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(json::parse(line));
  return lines;
}

void expect_vector(const json& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what << ": " << got.dump();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i].get<float>(), want[i], 1e-6f) << what << " [" << i << "]";
}

std::string base(const std::string& extra = "") {
  return "embed --model " + kSt.string() + " --precision fp32 --threads 1 " + extra;
}

TEST(CliEmbed, OneVectorPerLineAsTheEngineComputesIt) {
  const auto e = rc::model::Embedder::load(kSt);
  const std::vector<std::string> texts{"hello", "Covid cases are increasing fast!"};
  const auto r = run_roberta(base(), "hello\nCovid cases are increasing fast!\n");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  const auto want = e->encode_texts(texts, "");  // the folder's Normalize module applies
  expect_vector(lines[0], want[0], "line 0");
  expect_vector(lines[1], want[1], "line 1");

  const auto raw = json_lines(run_roberta(base("--no-normalize hello")).out);
  ASSERT_EQ(raw.size(), 1u);
  expect_vector(raw[0], e->encode_texts(texts, "", 32, 0)[0], "--no-normalize");

  auto cut = e->encode_texts(texts, "", 32, 0)[0];
  rc::model::truncate_embedding(cut, 3, true);  // truncate, then renormalise
  const auto dims = json_lines(run_roberta(base("--dimensions 3 hello")).out);
  ASSERT_EQ(dims.size(), 1u);
  expect_vector(dims[0], cut, "--dimensions 3");

  const auto prompted = json_lines(run_roberta(base("--prompt-name query hello")).out);
  ASSERT_EQ(prompted.size(), 1u);
  expect_vector(prompted[0], e->encode_texts(texts, "query")[0], "--prompt-name query");

  rc::model::EmbedderOptions cls;
  cls.pooling = "cls";
  const auto ecls = rc::model::Embedder::load(kSt, cls);
  const auto pooled = json_lines(run_roberta(base("--pooling cls hello")).out);
  ASSERT_EQ(pooled.size(), 1u);
  expect_vector(pooled[0], ecls->encode_texts(texts, "")[0], "--pooling cls");
}

TEST(CliEmbed, RefusalsAreUsageErrors) {
  auto r = run_roberta(base("--dimensions 9 hello"));  // the model's dimension is 8
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--dimensions 9"), std::string::npos) << r.err;
  r = run_roberta(base("--prompt-name nope hello"));
  EXPECT_EQ(r.code, 2) << r.err;
  // A plain model folder needs --pooling (TEI's flag).
  r = run_roberta("embed --model " + kTiny.string() + " --threads 1 hello");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--pooling"), std::string::npos) << r.err;
  for (const char* cmd : {"embed --help", "rerank --help"}) {
    r = run_roberta(cmd);
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("--model"), std::string::npos) << r.out;
  }
}

TEST(CliRerank, DocumentsBestFirst) {
  const fs::path dir = fs::temp_directory_path() / ("rc_cli_rerank_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const fs::path ce = rc::test::write_cross_encoder(dir / "ce", 5);
  const std::vector<std::string> docs{"the weather is nice", "covid cases rise", "I love it", "stocks fell"};
  {
    std::ofstream f(dir / "docs.jsonl");
    for (const auto& d : docs) f << json({{"text", d}}).dump() << "\n";
  }
  rc::LoadOptions lo;
  lo.function_to_apply = rc::ScoreFunction::none;
  const auto model = rc::Classifier::load(ce, lo);
  const auto preds = model->predict_pairs(std::vector<std::string>(docs.size(), "weather today"), docs);
  const std::string args = "rerank --model " + ce.string() +
                           " --precision fp32 --threads 1 --query 'weather today' --input " +
                           (dir / "docs.jsonl").string();
  auto r = run_roberta(args + " --return-text");
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), docs.size()) << r.out;
  float last = 2;
  for (const json& l : lines) {
    const size_t i = l["index"].get<size_t>();
    EXPECT_NEAR(l["score"].get<float>(), 1.0f / (1.0f + std::exp(-preds[i].logits[0])), 1e-6f);
    EXPECT_EQ(l["text"], docs[i]);
    EXPECT_LE(l["score"].get<float>(), last);
    last = l["score"].get<float>();
  }
  r = run_roberta(args + " --raw-scores");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const json& l : json_lines(r.out))
    EXPECT_NEAR(l["score"].get<float>(), preds[l["index"].get<size_t>()].logits[0], 1e-5f);
  // A three-label classifier is no cross-encoder.
  r = run_roberta("rerank --model " + kTiny.string() + " --threads 1 --query q a b");
  EXPECT_EQ(r.code, 2) << r.err;
  // Nor is a token classifier, even with the shapes of BERT's sequence head: refused from its
  // config, before any weight loads (no warning about a freshly initialised pooler).
  r = run_roberta("rerank --model " + (fs::path(RC_SOURCE_DIR) / "tests/data/tiny_families/bert-token").string() +
                  " --threads 1 --query q a b");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("BertForTokenClassification"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("newly initialized"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

}  // namespace
