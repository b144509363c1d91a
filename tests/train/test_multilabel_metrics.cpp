// Multi-label and regression metrics against tools/multilabel_metrics_ref.py (plain-Python
// restatements of sklearn's and SciPy's formulas): tests/data/task_metrics/
// multilabel_regression_cases.json. Counts and ratios are compared exactly (4 ulp); the
// correlations within 1e-14 (the C++ and the script sum in the same order; measured max
// difference 0).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "roberta/error.h"
#include "train/multilabel_metrics.h"

using namespace rc::train;

namespace {

nlohmann::json load_cases() {
  std::ifstream in(std::string(RC_TEST_DATA_DIR) + "/task_metrics/multilabel_regression_cases.json");
  EXPECT_TRUE(in.good()) << "HINT: regenerate with python3 tools/multilabel_metrics_ref.py";
  return nlohmann::json::parse(in);
}

std::vector<float> flatten(const nlohmann::json& rows, int64_t* K) {
  std::vector<float> out;
  *K = int64_t(rows.at(0).size());
  for (const auto& r : rows)
    for (const auto& v : r) out.push_back(v.is_null() ? std::nanf("") : v.get<float>());
  return out;
}

void expect_number(double got, const nlohmann::json& want, const char* what) {
  if (want.is_null())
    EXPECT_TRUE(std::isnan(got)) << what << " = " << got << ", want NaN";
  else
    EXPECT_NEAR(got, want.get<double>(), 1e-14) << what;
}

}  // namespace

TEST(MultiLabelMetrics, MatchesSklearnDefinitions) {
  const nlohmann::json cases = load_cases();
  ASSERT_EQ(cases["multilabel"].size(), 4u);
  for (const auto& c : cases["multilabel"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    int64_t K = 0, K2 = 0;
    const std::vector<float> targets = flatten(c["targets"], &K), scores = flatten(c["scores"], &K2);
    const ScoreKind kind = c["kind"] == "logits" ? ScoreKind::logits : ScoreKind::probabilities;
    const double threshold = c["threshold"].get<double>();
    const auto& want = c["expected"];

    std::vector<uint8_t> want_pred;
    for (const auto& r : want["predictions"])
      for (const auto& v : r) want_pred.push_back(v.get<uint8_t>());
    EXPECT_EQ(multilabel_predictions(scores, K, kind, threshold), want_pred);

    const MultiLabelMetrics m = multilabel_metrics(targets, scores, K, kind, threshold);
    EXPECT_EQ(m.count, int64_t(c["targets"].size()));
    EXPECT_EQ(m.support, want["support"].get<std::vector<int64_t>>());
    for (int64_t k = 0; k < K; ++k) {
      EXPECT_DOUBLE_EQ(m.precision[size_t(k)], want["precision"][size_t(k)].get<double>()) << k;
      EXPECT_DOUBLE_EQ(m.recall[size_t(k)], want["recall"][size_t(k)].get<double>()) << k;
      EXPECT_DOUBLE_EQ(m.f1[size_t(k)], want["f1"][size_t(k)].get<double>()) << k;
    }
    EXPECT_DOUBLE_EQ(m.micro_precision, want["micro_precision"].get<double>());
    EXPECT_DOUBLE_EQ(m.micro_recall, want["micro_recall"].get<double>());
    EXPECT_DOUBLE_EQ(m.micro_f1, want["micro_f1"].get<double>());
    EXPECT_DOUBLE_EQ(m.macro_precision, want["macro_precision"].get<double>());
    EXPECT_DOUBLE_EQ(m.macro_recall, want["macro_recall"].get<double>());
    EXPECT_DOUBLE_EQ(m.macro_f1, want["macro_f1"].get<double>());
    EXPECT_DOUBLE_EQ(m.exact_match, want["exact_match"].get<double>());
  }
}

TEST(MultiLabelMetrics, RefusesBadTargetsShapesAndThresholds) {
  const std::vector<float> targets{1, 0, 0.5f, 1}, scores{1, -1, 1, 1};
  EXPECT_THROW(multilabel_metrics(targets, scores, 2, ScoreKind::logits), rc::Error);  // 0.5 is not 0/1
  const std::vector<float> ok{1, 0, 0, 1};
  EXPECT_THROW(multilabel_metrics(ok, scores, 3, ScoreKind::logits), rc::Error);  // 4 values, rows of 3
  EXPECT_THROW(multilabel_metrics(ok, std::vector<float>{1, 2}, 2, ScoreKind::logits), rc::Error);
  EXPECT_THROW(multilabel_predictions(scores, 2, ScoreKind::probabilities, 1.5), rc::Error);
}

TEST(MultiLabelMetrics, JsonNamesLabels) {
  const std::vector<float> targets{1, 0, 0, 1}, scores{2, -1, 1, 1};
  const std::vector<std::string> names{"joy", "anger"};
  const auto j = multilabel_to_json(multilabel_metrics(targets, scores, 2, ScoreKind::logits), names);
  EXPECT_EQ(j["per_label"]["joy"]["precision"], 0.5);  // predicted in both rows, true in one
  EXPECT_EQ(j["per_label"]["anger"]["precision"], 1.0);
  EXPECT_EQ(j["per_label"]["joy"]["support"], 1);
  EXPECT_EQ(j.begin().key(), "micro_f1");
}

TEST(RegressionMetrics, MatchesSklearnAndScipyDefinitions) {
  const nlohmann::json cases = load_cases();
  ASSERT_EQ(cases["regression"].size(), 6u);
  for (const auto& c : cases["regression"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    int64_t K = 0, K2 = 0;
    const std::vector<float> targets = flatten(c["targets"], &K), predictions = flatten(c["predictions"], &K2);
    const RegressionMetrics m = regression_metrics(targets, predictions, K);
    const auto& want = c["expected"];
    expect_number(m.mse, want["mse"], "mse");
    expect_number(m.mae, want["mae"], "mae");
    ASSERT_EQ(m.pearson.size(), size_t(K));
    for (int64_t k = 0; k < K; ++k) {
      expect_number(m.pearson[size_t(k)], want["pearson"][size_t(k)], "pearson");
      expect_number(m.spearman[size_t(k)], want["spearman"][size_t(k)], "spearman");
    }
  }
}

TEST(RegressionMetrics, AverageRanksShareTies) {
  const std::vector<double> v{3, 1, 2, 2, 5, 2};
  EXPECT_EQ(average_ranks(v), (std::vector<double>{5, 1, 3, 3, 6, 3}));
}

TEST(RegressionMetrics, JsonWritesNanAsNull) {
  const std::vector<float> targets{1, 2, 3}, constant{0.5f, 0.5f, 0.5f};
  const auto j = regression_to_json(regression_metrics(targets, constant, 1));
  EXPECT_EQ(j.dump(), R"({"mse":2.9166666666666665,"mae":1.5,"pearson":null,"spearman":null})");
}
