// Text pairs through the roberta command: predict (--text-pair, JSONL "text_pair") and eval
// on a JSONL dataset with a text_pair field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/golden.h"
#include "support/run_cli.h"

namespace rc {
namespace {
namespace fs = std::filesystem;

class CliPairs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(test::roberta_binary())) GTEST_SKIP() << "roberta binary not built";
    dir_ = fs::temp_directory_path() / ("rc_cli_pairs_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CliPairs, PredictArgumentsAndJsonlAgree) {
  std::ofstream(dir_ / "pairs.jsonl") << "{\"text\": \"good day\", \"text_pair\": \"bad night\"}\n"
                                         "{\"text\": \"meh\", \"text_pair\": \"fine\"}\n";
  const auto args = test::run_roberta("predict --logits --model " + test::tiny_dir() +
                                      " 'good day' meh --text-pair 'bad night' --text-pair fine");
  const auto jsonl =
      test::run_roberta("predict --logits --model " + test::tiny_dir() + " --input " + (dir_ / "pairs.jsonl").string());
  const auto singles = test::run_roberta("predict --logits --model " + test::tiny_dir() + " 'good day' meh");
  ASSERT_EQ(args.code, 0);
  ASSERT_EQ(jsonl.code, 0);
  EXPECT_EQ(args.out, jsonl.out);
  EXPECT_NE(args.out, singles.out);  // the second text changes the logits
  EXPECT_EQ(std::count(args.out.begin(), args.out.end(), '\n'), 2);
  // One --text-pair per text; a JSONL file mixing pairs and singles is bad input.
  EXPECT_EQ(test::run_roberta("predict --model " + test::tiny_dir() + " a b --text-pair x").code, 2);
  std::ofstream(dir_ / "mixed.jsonl") << "{\"text\": \"a\", \"text_pair\": \"b\"}\n{\"text\": \"c\"}\n";
  EXPECT_EQ(
      test::run_roberta("predict --model " + test::tiny_dir() + " --input " + (dir_ / "mixed.jsonl").string()).code, 3);
}

TEST_F(CliPairs, EvalOnAPairDataset) {
  std::ofstream(dir_ / "nli.jsonl")
      << "{\"text\": \"good day\", \"text_pair\": \"bad night\", \"label\": \"negative\"}\n"
         "{\"text\": \"meh\", \"text_pair\": \"fine\", \"label\": \"positive\"}\n"
         "{\"text\": \"ok\", \"text_pair\": \"so so\", \"label\": \"neutral\"}\n";
  const auto pairs = test::run_roberta("eval --model " + test::tiny_dir() + " --data " + (dir_ / "nli.jsonl").string());
  ASSERT_EQ(pairs.code, 0) << pairs.out;
  std::ofstream(dir_ / "singles.jsonl") << "{\"text\": \"good day\", \"label\": \"negative\"}\n"
                                           "{\"text\": \"meh\", \"label\": \"positive\"}\n"
                                           "{\"text\": \"ok\", \"label\": \"neutral\"}\n";
  const auto singles =
      test::run_roberta("eval --model " + test::tiny_dir() + " --data " + (dir_ / "singles.jsonl").string());
  ASSERT_EQ(singles.code, 0);
  const auto jp = nlohmann::json::parse(pairs.out), js = nlohmann::json::parse(singles.out);
  ASSERT_TRUE(jp.contains("test_loss") || jp.contains("eval_loss")) << pairs.out;
  const std::string key = jp.contains("test_loss") ? "test_loss" : "eval_loss";
  EXPECT_NE(jp[key].get<double>(), js[key].get<double>());  // the pairs reached the model
}

TEST_F(CliPairs, TrainOnAPairDataset) {
  {
    std::ofstream f(dir_ / "nli.jsonl");
    for (int i = 0; i < 6; ++i)
      f << "{\"text\": \"good day " << i << "\", \"text_pair\": \"bad night\", \"label\": \"negative\"}\n"
        << "{\"text\": \"meh " << i << "\", \"text_pair\": \"fine\", \"label\": \"positive\"}\n";
  }
  const auto r = test::run_roberta("train --model " + test::tiny_dir() + " --data " + (dir_ / "nli.jsonl").string() +
                                   " --output " + (dir_ / "out").string() + " --max-steps 2 --batch-size 4");
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(dir_ / "out/train_results.json");
  const auto j = nlohmann::json::parse(in);
  // Tokens per example: pairs are <s> a </s></s> b </s> (7-9 ids here); the first texts
  // alone would be <s> a </s> (4-5 ids).
  const double per_example = j["train_tokens_per_second"].get<double>() / j["train_samples_per_second"].get<double>();
  EXPECT_GT(per_example, 6.5);
  EXPECT_LT(per_example, 9.5);
}

}  // namespace
}  // namespace rc
