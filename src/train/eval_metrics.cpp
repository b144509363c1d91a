// Metric arithmetic (see eval_metrics.h). Done in double; these are sums over at most a
// few hundred thousand examples.
#include "train/eval_metrics.h"

#include <cmath>

#include "core/check.h"

namespace rc::train {

ClassMetrics classification_metrics(std::span<const int32_t> labels, std::span<const int32_t> predictions, int64_t K) {
  RC_CHECK(labels.size() == predictions.size(), Errc::internal, "metrics: ", labels.size(), " labels vs ",
           predictions.size(), " predictions");
  ClassMetrics m;
  m.count = int64_t(labels.size());
  m.confusion.assign(size_t(K), std::vector<int64_t>(size_t(K), 0));
  int64_t correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    RC_CHECK(labels[i] >= 0 && labels[i] < K && predictions[i] >= 0 && predictions[i] < K, Errc::internal,
             "metrics: id out of range at ", i);
    m.confusion[size_t(labels[i])][size_t(predictions[i])]++;
    correct += labels[i] == predictions[i];
  }
  m.accuracy = m.count ? double(correct) / double(m.count) : 0.0;
  m.precision.assign(size_t(K), 0);
  m.recall.assign(size_t(K), 0);
  m.f1.assign(size_t(K), 0);
  m.support.assign(size_t(K), 0);
  for (int64_t k = 0; k < K; ++k) {
    int64_t tp = m.confusion[size_t(k)][size_t(k)], row = 0, col = 0;
    for (int64_t j = 0; j < K; ++j) {
      row += m.confusion[size_t(k)][size_t(j)];
      col += m.confusion[size_t(j)][size_t(k)];
    }
    m.support[size_t(k)] = row;
    const double p = col ? double(tp) / double(col) : 0.0, r = row ? double(tp) / double(row) : 0.0;
    m.precision[size_t(k)] = p;
    m.recall[size_t(k)] = r;
    m.f1[size_t(k)] = (p + r) > 0 ? 2 * p * r / (p + r) : 0.0;
    m.macro_precision += p / double(K);
    m.macro_recall += r / double(K);
    m.macro_f1 += m.f1[size_t(k)] / double(K);
  }
  return m;
}

CrossEntropyTotal cross_entropy_total(std::span<const float> logits, std::span<const int32_t> labels, int64_t K) {
  RC_CHECK(int64_t(logits.size()) == int64_t(labels.size()) * K, Errc::internal, "cross_entropy_total: shapes");
  CrossEntropyTotal t;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0) continue;
    const float* z = logits.data() + i * size_t(K);
    double mx = z[0];
    for (int64_t k = 1; k < K; ++k) mx = std::max(mx, double(z[k]));
    double s = 0;
    for (int64_t k = 0; k < K; ++k) s += std::exp(double(z[k]) - mx);
    t.sum += std::log(s) + mx - double(z[labels[i]]);
    ++t.count;
  }
  return t;
}

double cross_entropy_mean(std::span<const float> logits, std::span<const int32_t> labels, int64_t K) {
  const CrossEntropyTotal t = cross_entropy_total(logits, labels, K);
  return t.count > 0 ? t.sum / double(t.count) : 0.0;
}

std::vector<int32_t> argmax_rows(std::span<const float> logits, int64_t K) {
  std::vector<int32_t> out(logits.size() / size_t(K));
  for (size_t i = 0; i < out.size(); ++i) {
    const float* z = logits.data() + i * size_t(K);
    int32_t best = 0;
    for (int64_t k = 1; k < K; ++k)
      if (z[k] > z[best]) best = int32_t(k);
    out[i] = best;
  }
  return out;
}

}  // namespace rc::train
