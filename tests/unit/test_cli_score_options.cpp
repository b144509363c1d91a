// `roberta predict --function-to-apply` and `--preprocess tweet` as a user runs them: the
// scores are HF's function of the printed logits (pipelines/text_classification.py), and a
// preprocessed text answers exactly what its cardiffnlp-preprocessed form answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "support/golden.h"
#include "support/run_cli.h"

namespace rc {
namespace {
namespace fs = std::filesystem;

nlohmann::json one_line(const test::CmdResult& r) {
  EXPECT_EQ(r.code, 0) << r.err;
  std::istringstream in(r.out);
  std::string line;
  std::getline(in, line);
  return nlohmann::json::parse(line);
}

std::string predict(const std::string& flags, const std::string& text) {
  return "predict --model " + test::tiny_dir() + " --precision fp32 --logits " + flags + " '" + text + "'";
}

class CliScoreOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(test::roberta_binary())) GTEST_SKIP() << "roberta binary not built";
  }
};

TEST_F(CliScoreOptions, FunctionToApplyOverridesTheScores) {
  const std::vector<std::string> labels = {"negative", "neutral", "positive"};
  const std::string text = "Covid cases are increasing fast!";
  for (const std::string f : {"sigmoid", "none", "Softmax"}) {
    const nlohmann::json j = one_line(test::run_roberta(predict("--function-to-apply " + f, text)));
    std::vector<double> x;
    for (const auto& v : j["logits"]) x.push_back(v.get<double>());
    ASSERT_EQ(x.size(), 3u);
    const double mx = std::max({x[0], x[1], x[2]});
    const double sum = std::exp(x[0] - mx) + std::exp(x[1] - mx) + std::exp(x[2] - mx);
    for (size_t k = 0; k < 3; ++k) {
      const double want = f == "sigmoid" ? 1.0 / (1.0 + std::exp(-x[k]))
                          : f == "none"  ? x[k]
                                         : std::exp(x[k] - mx) / sum;
      EXPECT_NEAR(j["scores"][labels[k]].get<double>(), want, 1e-6) << f << " " << labels[k];
    }
  }
  const test::CmdResult bad = test::run_roberta(predict("--function-to-apply relu", text));
  EXPECT_EQ(bad.code, 2) << bad.err;  // a usage error, before the model loads
}

TEST_F(CliScoreOptions, PreprocessTweetPredictsThePreprocessedText) {
  const std::string raw = "@alice loved it https://t.co/xyz", cooked = "@user loved it http";
  const nlohmann::json plain = one_line(test::run_roberta(predict("", raw)));
  const nlohmann::json tweet = one_line(test::run_roberta(predict("--preprocess tweet", raw)));
  const nlohmann::json want = one_line(test::run_roberta(predict("", cooked)));
  EXPECT_EQ(tweet["logits"], want["logits"]);
  EXPECT_NE(plain["logits"], want["logits"]) << "the test needs a text that preprocessing changes";
  const nlohmann::json off = one_line(test::run_roberta(predict("--preprocess none", raw)));
  EXPECT_EQ(off["logits"], plain["logits"]);
  EXPECT_EQ(test::run_roberta(predict("--preprocess twitter", raw)).code, 2);
}

// `roberta package` records both options in code/serving.json, where a served package reads
// them (tests/serve/test_hf_endpoint.cpp serves such a package).
TEST_F(CliScoreOptions, PackageRecordsThemInServingJson) {
  const fs::path dir = fs::temp_directory_path() / ("rc-cli-score-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path archive = dir / "model.tar.gz";
  test::CmdResult r = test::run_roberta("package --model " + test::tiny_dir() + " --output " + archive.string() +
                                        " --preprocess tweet --function-to-apply SIGMOID");
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(std::system(("tar -xzf " + archive.string() + " -C " + dir.string() + " code/serving.json").c_str()), 0);
  std::ifstream in(dir / "code/serving.json");
  const nlohmann::json settings = nlohmann::json::parse(in);
  EXPECT_EQ(settings["preprocess"], "tweet") << settings.dump();
  EXPECT_EQ(settings["function_to_apply"], "sigmoid") << settings.dump();
  // Not given: not written, so the server's own rule (and flags) decide.
  r = test::run_roberta("package --model " + test::tiny_dir() + " --output " + archive.string() + " --preprocess none");
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(std::system(("tar -xzf " + archive.string() + " -C " + dir.string() + " code/serving.json").c_str()), 0);
  std::ifstream again(dir / "code/serving.json");
  const nlohmann::json plain = nlohmann::json::parse(again);
  EXPECT_FALSE(plain.contains("preprocess")) << plain.dump();
  EXPECT_FALSE(plain.contains("function_to_apply")) << plain.dump();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rc
