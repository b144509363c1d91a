// Evaluation metrics of the multi-label and regression problem types, with the definitions of
// scikit-learn and SciPy (HF's text-classification examples report these):
// - multi-label: sklearn.metrics.precision_recall_fscore_support on a multilabel-indicator
//   matrix (zero_division=0): per-label precision / recall / F1 / support, micro F1 (counts
//   summed over labels) and macro F1 (the unweighted mean over all K labels); and
//   accuracy_score's subset accuracy (a row counts only when all K labels match).
//   Source: scikit-learn 1.5, sklearn/metrics/_classification.py (F from counts,
//   2 tp / (2 tp + fp + fn), as sklearn >= 1.3 computes it).
// - regression: mean_squared_error / mean_absolute_error (multioutput="uniform_average": the
//   mean over columns of each column's mean), scipy.stats.pearsonr and spearmanr per column.
//   Source: scikit-learn sklearn/metrics/_regression.py; SciPy 1.11 scipy/stats/_stats_py.py
//   (pearsonr: a constant column gives NaN, two points give the sign product; spearmanr:
//   average ranks for ties, then np.corrcoef of the ranks; a constant column gives NaN).
// tools/multilabel_metrics_ref.py restates these in plain Python for the tests.
//
// NaN (an undefined correlation) is reported as JSON null: JSON has no NaN, and Python's
// json.dumps would write the non-standard token NaN that strict parsers refuse.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rc::train {

enum class ScoreKind { logits, probabilities };

struct MultiLabelMetrics {
  std::vector<double> precision, recall, f1;  // (K)
  std::vector<int64_t> support;               // (K) positive targets per label
  double micro_precision = 0, micro_recall = 0, micro_f1 = 0;
  double macro_precision = 0, macro_recall = 0, macro_f1 = 0;
  double exact_match = 0;  // subset accuracy; 0 for N = 0
  int64_t count = 0;       // N
};

// A label is predicted when its probability is > threshold (strictly, as HF's examples'
// `logits > 0` is at 0.5). Logits are compared as sigmoid(z) > t, i.e. z > log(t / (1 - t)),
// which at t = 0.5 is exactly z > 0; probabilities as numpy compares a float32 array with a
// Python float, in float32. targets and scores: (N, K) row-major; targets hold 0 or 1
// (float multi-hot rows); anything else, a shape mismatch or t outside [0, 1] throws
// invalid_argument.
std::vector<uint8_t> multilabel_predictions(std::span<const float> scores, int64_t K, ScoreKind kind,
                                            double threshold = 0.5);
MultiLabelMetrics multilabel_metrics(std::span<const float> targets, std::span<const float> scores, int64_t K,
                                     ScoreKind kind, double threshold = 0.5);

struct RegressionMetrics {
  double mse = 0, mae = 0;                // uniform average over the K columns
  std::vector<double> pearson, spearman;  // (K); NaN where SciPy gives NaN
  int64_t count = 0;                      // N
};

// targets, predictions: (N, K) row-major. N = 0 gives NaN errors and correlations (sklearn
// and SciPy refuse empty input); N = 1 gives NaN correlations.
RegressionMetrics regression_metrics(std::span<const float> targets, std::span<const float> predictions, int64_t K);

// SciPy's pearsonr / spearmanr statistic of two equal-length columns.
double pearson_r(std::span<const double> x, std::span<const double> y);
double spearman_rho(std::span<const double> x, std::span<const double> y);
// scipy.stats.rankdata(method="average"): 1-based ranks, ties share their mean rank.
std::vector<double> average_ranks(std::span<const double> values);

// {"micro_f1", "macro_f1", "micro_precision", "micro_recall", "macro_precision",
//  "macro_recall", "exact_match", "per_label": {name: {precision, recall, f1, support}}}.
// label_names: K names (id2label), or empty for "0".."K-1".
nlohmann::ordered_json multilabel_to_json(const MultiLabelMetrics& m, std::span<const std::string> label_names = {});
// {"mse", "mae", "pearson", "spearman"}: numbers for K = 1, lists per column otherwise; NaN -> null.
nlohmann::ordered_json regression_to_json(const RegressionMetrics& m);

}  // namespace rc::train
