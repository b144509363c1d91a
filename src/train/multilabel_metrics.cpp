// Multi-label and regression metrics (definitions and sources in multilabel_metrics.h).
#include "train/multilabel_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/check.h"

namespace rc::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double divide_or_zero(int64_t numerator, int64_t denominator) {
  return denominator == 0 ? 0.0 : double(numerator) / double(denominator);
}

void check_shape(size_t size, int64_t K, const char* what) {
  RC_CHECK(K > 0, Errc::invalid_argument, what, ": K must be positive, got ", K);
  RC_CHECK(size % size_t(K) == 0, Errc::invalid_argument, what, ": ", size, " values are not rows of ", K);
}

double mean(std::span<const double> v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }

nlohmann::ordered_json number_or_null(double v) {
  return std::isnan(v) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v);
}

}  // namespace

std::vector<uint8_t> multilabel_predictions(std::span<const float> scores, int64_t K, ScoreKind kind,
                                            double threshold) {
  check_shape(scores.size(), K, "multilabel_predictions");
  RC_CHECK(threshold >= 0.0 && threshold <= 1.0, Errc::invalid_argument, "threshold ", threshold,
           " is not a probability in [0, 1]");
  std::vector<uint8_t> out(scores.size());
  if (kind == ScoreKind::probabilities) {
    // numpy compares a float32 array with a Python float in float32 (probs > 0.3 is false for
    // a probability of float32(0.3)), so the threshold is rounded to float first.
    const float t = float(threshold);
    for (size_t i = 0; i < scores.size(); ++i) out[i] = scores[i] > t ? 1 : 0;
    return out;
  }
  // sigmoid(z) > t  <=>  z > log(t) - log(1 - t): exactly HF's `logits > 0` at t = 0.5, and
  // +-inf (all / none) at t = 0 and 1.
  const double bound = std::log(threshold) - std::log1p(-threshold);
  for (size_t i = 0; i < scores.size(); ++i) out[i] = double(scores[i]) > bound ? 1 : 0;
  return out;
}

MultiLabelMetrics multilabel_metrics(std::span<const float> targets, std::span<const float> scores, int64_t K,
                                     ScoreKind kind, double threshold) {
  check_shape(targets.size(), K, "multilabel_metrics");
  RC_CHECK(targets.size() == scores.size(), Errc::invalid_argument, "multilabel_metrics: ", targets.size(),
           " targets but ", scores.size(), " scores");
  const std::vector<uint8_t> pred = multilabel_predictions(scores, K, kind, threshold);
  const size_t N = targets.size() / size_t(K), k_labels = size_t(K);
  std::vector<int64_t> tp(k_labels, 0), pred_sum(k_labels, 0), true_sum(k_labels, 0);
  int64_t exact = 0;
  for (size_t n = 0; n < N; ++n) {
    bool row_matches = true;
    for (size_t k = 0; k < k_labels; ++k) {
      const float t = targets[n * k_labels + k];
      RC_CHECK(t == 0.0f || t == 1.0f, Errc::invalid_argument, "multilabel_metrics: target (", n, ", ", k, ") is ", t,
               ", not 0 or 1");
      const bool truth = t == 1.0f, guess = pred[n * k_labels + k] != 0;
      tp[k] += truth && guess;
      pred_sum[k] += guess;
      true_sum[k] += truth;
      row_matches = row_matches && truth == guess;
    }
    exact += row_matches;
  }
  MultiLabelMetrics m;
  m.count = int64_t(N);
  m.exact_match = divide_or_zero(exact, int64_t(N));
  m.support = true_sum;
  int64_t tp_all = 0, pred_all = 0, true_all = 0;
  for (size_t k = 0; k < k_labels; ++k) {
    m.precision.push_back(divide_or_zero(tp[k], pred_sum[k]));
    m.recall.push_back(divide_or_zero(tp[k], true_sum[k]));
    m.f1.push_back(divide_or_zero(2 * tp[k], true_sum[k] + pred_sum[k]));
    tp_all += tp[k];
    pred_all += pred_sum[k];
    true_all += true_sum[k];
  }
  m.micro_precision = divide_or_zero(tp_all, pred_all);
  m.micro_recall = divide_or_zero(tp_all, true_all);
  m.micro_f1 = divide_or_zero(2 * tp_all, true_all + pred_all);
  m.macro_precision = mean(m.precision);
  m.macro_recall = mean(m.recall);
  m.macro_f1 = mean(m.f1);
  return m;
}

std::vector<double> average_ranks(std::span<const double> values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    const double rank = 0.5 * double(i + j) + 1.0;  // mean of the 1-based ranks i+1 .. j+1
    for (size_t r = i; r <= j; ++r) ranks[order[r]] = rank;
    i = j + 1;
  }
  return ranks;
}

double pearson_r(std::span<const double> x, std::span<const double> y) {
  RC_CHECK(x.size() == y.size(), Errc::invalid_argument, "pearson_r: ", x.size(), " vs ", y.size(), " values");
  const size_t n = x.size();
  if (n < 2) return kNaN;  // SciPy raises ValueError
  // A constant input: NaN (ConstantInputWarning). NaN != x[0], so a NaN column is not constant.
  const auto constant = [](std::span<const double> v) {
    return std::all_of(v.begin(), v.end(), [&](double a) { return a == v[0]; });
  };
  if (constant(x) || constant(y)) return kNaN;
  if (n == 2) {
    const auto sign = [](double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : v == 0 ? 0.0 : kNaN; };
    return sign(x[1] - x[0]) * sign(y[1] - y[0]);
  }
  const double xmean = mean(x), ymean = mean(y);
  std::vector<double> xm(n), ym(n);
  double xx = 0, yy = 0;
  for (size_t i = 0; i < n; ++i) {
    xm[i] = x[i] - xmean;
    ym[i] = y[i] - ymean;
    xx += xm[i] * xm[i];
    yy += ym[i] * ym[i];
  }
  const double normx = std::sqrt(xx), normy = std::sqrt(yy);
  double r = 0;
  for (size_t i = 0; i < n; ++i) r += (xm[i] / normx) * (ym[i] / normy);
  return std::isnan(r) ? r : std::max(std::min(r, 1.0), -1.0);
}

double spearman_rho(std::span<const double> x, std::span<const double> y) {
  RC_CHECK(x.size() == y.size(), Errc::invalid_argument, "spearman_rho: ", x.size(), " vs ", y.size(), " values");
  const size_t n = x.size();
  if (n <= 1) return kNaN;
  const auto constant = [](std::span<const double> v) {
    return std::all_of(v.begin(), v.end(), [&](double a) { return a == v[0]; });
  };
  if (constant(x) || constant(y)) return kNaN;
  const auto has_nan = [](std::span<const double> v) {
    return std::any_of(v.begin(), v.end(), [](double a) { return std::isnan(a); });
  };
  if (has_nan(x) || has_nan(y)) return kNaN;  // nan_policy="propagate"
  const std::vector<double> rx = average_ranks(x), ry = average_ranks(y);
  // np.corrcoef: cov / (n - 1), divided by each standard deviation in turn, clipped to [-1, 1].
  const double mx = mean(rx), my = mean(ry);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  const double f = 1.0 / double(n - 1);
  const double r = sxy * f / std::sqrt(syy * f) / std::sqrt(sxx * f);
  return std::max(std::min(r, 1.0), -1.0);
}

RegressionMetrics regression_metrics(std::span<const float> targets, std::span<const float> predictions, int64_t K) {
  check_shape(targets.size(), K, "regression_metrics");
  RC_CHECK(targets.size() == predictions.size(), Errc::invalid_argument, "regression_metrics: ", targets.size(),
           " targets but ", predictions.size(), " predictions");
  const size_t N = targets.size() / size_t(K), k_cols = size_t(K);
  RegressionMetrics m;
  m.count = int64_t(N);
  std::vector<double> x(N), y(N), squared(k_cols), absolute(k_cols);
  for (size_t k = 0; k < k_cols; ++k) {
    double se = 0, ae = 0;
    for (size_t n = 0; n < N; ++n) {
      y[n] = targets[n * k_cols + k];
      x[n] = predictions[n * k_cols + k];
      se += (y[n] - x[n]) * (y[n] - x[n]);
      ae += std::abs(y[n] - x[n]);
    }
    squared[k] = N ? se / double(N) : kNaN;
    absolute[k] = N ? ae / double(N) : kNaN;
    m.pearson.push_back(pearson_r(x, y));
    m.spearman.push_back(spearman_rho(x, y));
  }
  m.mse = mean(squared);
  m.mae = mean(absolute);
  return m;
}

nlohmann::ordered_json multilabel_to_json(const MultiLabelMetrics& m, std::span<const std::string> label_names) {
  RC_CHECK(label_names.empty() || label_names.size() == m.f1.size(), Errc::invalid_argument,
           "multilabel_to_json: ", label_names.size(), " names for ", m.f1.size(), " labels");
  nlohmann::ordered_json j;
  j["micro_f1"] = m.micro_f1;
  j["macro_f1"] = m.macro_f1;
  j["micro_precision"] = m.micro_precision;
  j["micro_recall"] = m.micro_recall;
  j["macro_precision"] = m.macro_precision;
  j["macro_recall"] = m.macro_recall;
  j["exact_match"] = m.exact_match;
  nlohmann::ordered_json per_label = nlohmann::ordered_json::object();
  for (size_t k = 0; k < m.f1.size(); ++k)
    per_label[label_names.empty() ? std::to_string(k) : label_names[k]] = {
        {"precision", m.precision[k]}, {"recall", m.recall[k]}, {"f1", m.f1[k]}, {"support", m.support[k]}};
  j["per_label"] = std::move(per_label);
  return j;
}

nlohmann::ordered_json regression_to_json(const RegressionMetrics& m) {
  const auto values = [](const std::vector<double>& v) {
    if (v.size() == 1) return number_or_null(v[0]);
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (double x : v) a.push_back(number_or_null(x));
    return a;
  };
  nlohmann::ordered_json j;
  j["mse"] = number_or_null(m.mse);
  j["mae"] = number_or_null(m.mae);
  j["pearson"] = values(m.pearson);
  j["spearman"] = values(m.spearman);
  return j;
}

}  // namespace rc::train
