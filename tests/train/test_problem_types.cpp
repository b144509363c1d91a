// Sequence classification's three problem types end to end (issue 29): label parsing (lists,
// numbers, JSON-array cells), problem-type inference, fit() writing config.problem_type and the
// type's metrics, evaluate() agreeing with the run, the pipeline's score function on the
// result, and bad labels refused with file, line and field before anything is written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "roberta/classifier.h"
#include "roberta/trainer.h"
#include "train/dataset.h"
#include "train/label_mapping.h"
#include "support/files.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace rc;

namespace {

using rc::test::kTiny;

using rc::test::slurp;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class ProblemTypes : public ::testing::Test {
 protected:
  fs::path root;
  void SetUp() override {
    root = fs::temp_directory_path() / ("rc_problem_types_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root);
  }
  void write(const fs::path& p, const std::string& s) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << s;
  }
  // A small, learnable multi-label set: "joy" iff the text has "happy", "anger" iff "mad".
  void multi_label_set(const fs::path& dir) {
    const char* words[] = {"happy day", "mad world", "happy mad", "calm sea", "happy mad fun", "quiet"};
    for (const char* split : {"train", "val", "test"}) {
      std::string s;
      for (int i = 0; i < (std::string(split) == "train" ? 48 : 12); ++i) {
        const std::string t = words[i % 6];
        json labels = json::array();
        if (t.find("mad") != std::string::npos) labels.push_back("anger");
        if (t.find("happy") != std::string::npos) labels.push_back("joy");
        s += json{{"text", t}, {"labels", labels}}.dump() + "\n";
      }
      write(dir / (std::string(split) + ".jsonl"), s);
    }
  }
  TrainOptions options(const fs::path& data, const fs::path& out) {
    TrainOptions o;
    o.model_dir = kTiny;
    o.data = data;
    o.output_dir = out;
    o.max_steps = 12;
    o.batch_size = 8;
    o.lr = 3e-3;
    o.eval_every = 6;
    o.progress = 0;
    return o;
  }
};

}  // namespace

TEST_F(ProblemTypes, LabelsParseAsListsNumbersAndNames) {
  const std::string jsonl =
      "{\"text\": \"a\", \"label\": [\"joy\", \"optimism\"]}\n"
      "{\"text\": \"b\", \"label\": []}\n"
      "{\"text\": \"c\", \"label\": [0, 1, 0]}\n"
      "{\"text\": \"d\", \"label\": 0.25}\n"
      "{\"text\": \"e\", \"label\": 3}\n"
      "{\"text\": \"f\", \"label\": \"neutral\"}\n";
  const train::TextSplit s = train::parse_jsonl(jsonl, {}, "x.jsonl");
  ASSERT_EQ(s.labels.size(), 6u);
  EXPECT_TRUE(s.labels[0].is_list);
  EXPECT_EQ(s.labels[0].list_names, (std::vector<std::string>{"joy", "optimism"}));
  EXPECT_TRUE(s.labels[1].is_list);
  EXPECT_TRUE(s.labels[1].list_names.empty() && s.labels[1].list_numbers.empty());
  EXPECT_EQ(s.labels[2].list_numbers, (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(*s.labels[3].number, 0.25);
  EXPECT_EQ(*s.labels[4].id, 3);
  EXPECT_EQ(s.labels[5].name, "neutral");
  EXPECT_EQ(s.labels[5].line, 6);

  // CSV cells hold JSON arrays; a number that is not an integer is a regression target.
  const train::TextSplit c =
      train::parse_delimited("text,label\na,\"[\"\"joy\"\"]\"\nb,-1.5e0\nc,[]\n", ',', {}, "x.csv");
  EXPECT_EQ(c.labels[0].list_names, (std::vector<std::string>{"joy"}));
  EXPECT_EQ(*c.labels[1].number, -1.5);
  EXPECT_TRUE(c.labels[2].is_list);

  EXPECT_NE(error_of([&] {
              train::parse_jsonl("{\"text\": \"a\", \"label\": [\"joy\", 1]}\n", {}, "m.jsonl");
            }).find("m.jsonl:1: field 'label': a label list mixes names and numbers"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              train::parse_delimited("text,label\na,[joy\n", ',', {}, "b.csv");
            }).find("b.csv: record 2, column 'label': a label starting with '[' must be a JSON list"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              train::parse_jsonl("{\"text\": \"a\", \"label\": {\"x\": 1}}\n", {}, "o.jsonl");
            }).find("o.jsonl:1: field 'label'"),
            std::string::npos);
}

TEST_F(ProblemTypes, TargetsAndTheirErrors) {
  const train::TextSplit s = train::parse_jsonl(
      "{\"text\": \"a\", \"label\": [\"joy\"]}\n{\"text\": \"b\", \"label\": []}\n{\"text\": \"c\", \"label\": "
      "[\"anger\", \"joy\"]}\n",
      {}, "t.jsonl");
  EXPECT_EQ(train::multi_hot_targets(s, {"anger", "joy"}), (std::vector<float>{0, 1, 0, 0, 1, 1}));
  EXPECT_NE(error_of([&] { train::multi_hot_targets(s, {"joy"}); }).find("t.jsonl:3: unknown label 'anger'"),
            std::string::npos);
  const train::TextSplit ragged =
      train::parse_jsonl("{\"text\": \"a\", \"label\": [1, 0]}\n{\"text\": \"b\", \"label\": [1]}\n", {}, "r.jsonl");
  EXPECT_NE(error_of([&] {
              train::multi_hot_targets(ragged, {"x", "y"});
            }).find("r.jsonl:2: a 0/1 row of 1 flags, but the model has 2 labels"),
            std::string::npos);
  const train::TextSplit two = train::parse_jsonl("{\"text\": \"a\", \"label\": [1, 2]}\n", {}, "two.jsonl");
  EXPECT_NE(error_of([&] { train::multi_hot_targets(two, {"x", "y"}); }).find("flag 1 is 2"), std::string::npos);

  const train::TextSplit r = train::parse_jsonl(
      "{\"text\": \"a\", \"label\": 0.5}\n{\"text\": \"b\", \"label\": 2}\n{\"text\": \"c\", \"label\": \"nan\"}\n", {},
      "n.jsonl");
  EXPECT_NE(error_of([&] { train::regression_targets(r); }).find("n.jsonl:3: regression target 'nan' is not a finite"),
            std::string::npos);
  train::TextSplit ok = r;
  ok.labels.pop_back();
  EXPECT_EQ(train::regression_targets(ok), (std::vector<float>{0.5f, 2.0f}));
}

TEST_F(ProblemTypes, MultiLabelFitsAndPredictsWithSigmoid) {
  multi_label_set(root / "data");
  TrainOptions o = options(root / "data", root / "out");
  o.label_column = "labels";
  o.max_steps = 36;
  const TrainSummary s = fit(o);
  const json cfg = json::parse(std::ifstream(root / "out/config.json"));
  EXPECT_EQ(cfg["problem_type"], "multi_label_classification");
  EXPECT_EQ(cfg["id2label"]["0"], "anger");  // sorted, as run_classification.py's label list
  EXPECT_EQ(cfg["id2label"]["1"], "joy");
  const json args = json::parse(std::ifstream(root / "out/training_args.json"));
  EXPECT_EQ(args["metric_for_best_model"], "micro_f1");
  const json results = json::parse(std::ifstream(root / "out/eval_results.json"));
  ASSERT_TRUE(results.contains("test_micro_f1") && results.contains("test_exact_match"));
  ASSERT_TRUE(s.test);
  EXPECT_GT(results["test_micro_f1"].get<double>(), 0.5);  // the rule is learnable in 12 steps

  EvalOptions eo;
  eo.model_dir = root / "out";
  eo.data = root / "data";
  eo.label_column = "labels";
  const EvalResult e = evaluate(eo);
  EXPECT_EQ(e.problem_type, "multi_label_classification");
  ASSERT_EQ(e.metrics.size(), s.test->metrics.size());
  for (size_t i = 0; i < e.metrics.size(); ++i) EXPECT_DOUBLE_EQ(e.metrics[i].second, s.test->metrics[i].second);

  // TextClassificationPipeline: multi_label_classification → sigmoid of every logit.
  auto c = Classifier::load(root / "out");
  const auto p = c->predict(std::vector<std::string>{"happy mad"});
  ASSERT_EQ(p[0].scores.size(), 2u);
  for (size_t k = 0; k < 2; ++k) EXPECT_FLOAT_EQ(p[0].scores[k], 1.0f / (1.0f + std::exp(-p[0].logits[k])));
}

TEST_F(ProblemTypes, RegressionFitsWithMseAndScoresAreLogits) {
  std::string s;
  for (int i = 0; i < 40; ++i)
    s += json{{"text", i % 2 ? "big number" : "small"}, {"label", i % 2 ? 2.5 : -0.5}}.dump() + "\n";
  write(root / "reg/train.jsonl", s);
  write(root / "reg/val.jsonl", s);
  TrainOptions o = options(root / "reg", root / "out");
  const TrainSummary r = fit(o);
  EXPECT_NE(slurp(root / "out/report.html").find("<th>spearman</th>"), std::string::npos);
  const json cfg = json::parse(std::ifstream(root / "out/config.json"));
  EXPECT_EQ(cfg["problem_type"], "regression");
  EXPECT_EQ(cfg["id2label"].size(), 1u);
  ASSERT_TRUE(r.best_eval);
  double mse = -1;
  for (const auto& [k, v] : r.best_eval->metrics)
    if (k == "mse") mse = v;
  EXPECT_DOUBLE_EQ(mse, r.best_eval->loss);  // MSE is the trained loss
  const json args = json::parse(std::ifstream(root / "out/training_args.json"));
  EXPECT_EQ(args["metric_for_best_model"], "mse");
  EXPECT_FALSE(args["greater_is_better"].get<bool>());
  auto c = Classifier::load(root / "out");
  const auto p = c->predict(std::vector<std::string>{"big number"});
  EXPECT_EQ(p[0].scores, p[0].logits);  // problem_type regression: no function
}

TEST_F(ProblemTypes, BadTargetsWriteNothing) {
  write(root / "bad/train.jsonl", "{\"text\": \"a\", \"label\": 0.5}\n{\"text\": \"b\", \"label\": \"nan\"}\n");
  TrainOptions o = options(root / "bad/train.jsonl", root / "out");
  EXPECT_NE(error_of([&] { fit(o); }).find("train.jsonl:2: regression target 'nan' is not a finite number"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(root / "out/config.json"));
  EXPECT_TRUE(!fs::exists(root / "out") || fs::is_empty(root / "out"));

  write(root / "ml/train.jsonl", "{\"text\": \"a\", \"label\": [1, 0, 1]}\n{\"text\": \"b\", \"label\": [0, 1]}\n");
  o = options(root / "ml/train.jsonl", root / "out2");
  EXPECT_NE(error_of([&] { fit(o); }).find("train.jsonl:2: a 0/1 row of 2 flags, but the model has 3 labels"),
            std::string::npos);
  EXPECT_TRUE(!fs::exists(root / "out2") || fs::is_empty(root / "out2"));

  o = options(root / "ml/train.jsonl", root / "out3");
  o.problem_type = "multi-label";
  EXPECT_NE(error_of([&] { fit(o); }).find("unknown problem type 'multi-label'"), std::string::npos);
}

// --label-smoothing-factor reaches the loss: a single-label run's first logged loss changes with
// it (same data, seed and weights), training_args.json records it, and a regression or
// multi-label run refuses it before writing anything.
TEST_F(ProblemTypes, LabelSmoothingReachesTheLossAndIsRefusedWithoutCrossEntropy) {
  std::string s;
  for (int i = 0; i < 32; ++i) s += json{{"text", i % 2 ? "good day" : "bad day"}, {"label", i % 2}}.dump() + "\n";
  write(root / "cls/train.jsonl", s);
  write(root / "cls/val.jsonl", s);
  auto first_loss = [&](const fs::path& out) {
    std::ifstream f(out / "metrics.jsonl");
    std::string line;
    std::getline(f, line);
    return json::parse(line).at("loss").get<double>();
  };
  TrainOptions o = options(root / "cls", root / "plain");
  o.max_steps = 2;
  fit(o);
  o.output_dir = root / "smoothed";
  o.label_smoothing_factor = 0.3;
  fit(o);
  EXPECT_NE(first_loss(root / "plain"), first_loss(root / "smoothed"));
  const json args = json::parse(std::ifstream(root / "smoothed/training_args.json"));
  EXPECT_DOUBLE_EQ(args["label_smoothing_factor"].get<double>(), 0.3);

  multi_label_set(root / "ml");
  TrainOptions m = options(root / "ml", root / "ml-out");
  m.label_column = "labels";
  m.label_smoothing_factor = 0.1;
  EXPECT_THROW(fit(m), Error);
  EXPECT_FALSE(fs::exists(root / "ml-out/config.json"));
}
