// Metrics against values worked out by hand (the same as sklearn's classification_report).
#include <gtest/gtest.h>

#include <cmath>

#include "train/eval_metrics.h"

using namespace rc::train;

TEST(EvalMetrics, HandWorkedExample) {
  // true:  0 0 0 1 1 2 2 2 2 ; pred: 0 1 0 1 2 2 2 0 2
  const std::vector<int32_t> y{0, 0, 0, 1, 1, 2, 2, 2, 2}, p{0, 1, 0, 1, 2, 2, 2, 0, 2};
  const ClassMetrics m = classification_metrics(y, p, 3);
  EXPECT_EQ(m.confusion, (std::vector<std::vector<int64_t>>{{2, 1, 0}, {0, 1, 1}, {1, 0, 3}}));
  EXPECT_DOUBLE_EQ(m.accuracy, 6.0 / 9.0);
  // recall: 2/3, 1/2, 3/4 ; precision: 2/3, 1/2, 3/4
  EXPECT_NEAR(m.macro_recall, (2.0 / 3 + 0.5 + 0.75) / 3, 1e-15);
  EXPECT_NEAR(m.recall[2], 0.75, 1e-15);
  EXPECT_NEAR(m.precision[0], 2.0 / 3, 1e-15);
  EXPECT_NEAR(m.macro_f1, (2.0 / 3 + 0.5 + 0.75) / 3, 1e-15);  // p == r per class here
  EXPECT_EQ(m.support, (std::vector<int64_t>{3, 2, 4}));
}

TEST(EvalMetrics, ZeroDivisionIsZero) {
  const std::vector<int32_t> y{0, 0}, p{0, 0};
  const ClassMetrics m = classification_metrics(y, p, 2);
  EXPECT_DOUBLE_EQ(m.recall[1], 0.0);
  EXPECT_DOUBLE_EQ(m.precision[1], 0.0);
  EXPECT_DOUBLE_EQ(m.macro_recall, 0.5);  // sklearn macro averages over every class
}

TEST(EvalMetrics, CrossEntropyAndArgmax) {
  const std::vector<float> logits{0, 0, 0, 2, 1, 0};
  const std::vector<int32_t> labels{1, 0};
  const double want = (std::log(3.0) + (std::log(std::exp(2.0) + std::exp(1.0) + 1.0) - 2.0)) / 2;
  EXPECT_NEAR(cross_entropy_mean(logits, labels, 3), want, 1e-12);
  // A row labelled -100 (token classification's ignore_index) is left out of sum and count.
  const std::vector<float> three{0, 0, 0, 9, -9, 5, 2, 1, 0};
  const std::vector<int32_t> with_ignored{1, -100, 0};
  const CrossEntropyTotal t = cross_entropy_total(three, with_ignored, 3);
  EXPECT_EQ(t.count, 2);
  EXPECT_NEAR(t.sum / double(t.count), want, 1e-12);
  EXPECT_NEAR(cross_entropy_mean(three, with_ignored, 3), want, 1e-12);
  EXPECT_EQ(argmax_rows(logits, 3), (std::vector<int32_t>{0, 0}));
}
