// Classification metrics as scikit-learn computes them (zero_division = 0): accuracy,
// macro precision / recall / F1 (TweetEval's sentiment metric is macro recall), per-class
// precision / recall / F1 / support, and the confusion matrix (rows: true, columns: predicted).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rc::train {

struct ClassMetrics {
  double accuracy = 0, macro_precision = 0, macro_recall = 0, macro_f1 = 0;
  std::vector<double> precision, recall, f1;
  std::vector<int64_t> support;
  std::vector<std::vector<int64_t>> confusion;  // [true][pred]
  int64_t count = 0;
};

// labels, predictions: ids in [0, K). Macro averages run over all K classes.
ClassMetrics classification_metrics(std::span<const int32_t> labels, std::span<const int32_t> predictions, int64_t K);

// Mean cross-entropy of logits (N, K) against labels, in double; and argmax predictions.
// The sum and count behind it, for a mean over several calls: rows labelled < 0 (HF's -100,
// token classification) are left out, as torch's ignore_index.
struct CrossEntropyTotal {
  double sum = 0;
  int64_t count = 0;
};
CrossEntropyTotal cross_entropy_total(std::span<const float> logits, std::span<const int32_t> labels, int64_t K);
double cross_entropy_mean(std::span<const float> logits, std::span<const int32_t> labels, int64_t K);
std::vector<int32_t> argmax_rows(std::span<const float> logits, int64_t K);

}  // namespace rc::train
