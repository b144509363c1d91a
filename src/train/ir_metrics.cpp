// Retrieval and similarity metrics (ir_metrics.h).
#include "train/ir_metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "core/check.h"
#include "model/pooling.h"
#include "train/multilabel_metrics.h"

namespace rc::train {

NamedMetrics information_retrieval_metrics(std::span<const float> scores, int64_t queries, int64_t docs,
                                           const std::vector<std::vector<int64_t>>& relevant) {
  RC_CHECK(queries > 0 && docs > 0 && int64_t(scores.size()) == queries * docs && int64_t(relevant.size()) == queries,
           Errc::invalid_argument, "retrieval metrics: ", queries, " queries x ", docs, " documents do not match ",
           scores.size(), " scores and ", relevant.size(), " relevance lists");
  constexpr int64_t kMaxK = 10;
  const int64_t top = std::min(kMaxK, docs);
  double mrr = 0, ndcg = 0, r1 = 0, r5 = 0, r10 = 0;
  std::vector<int64_t> order(static_cast<size_t>(docs));
  std::vector<char> is_relevant(static_cast<size_t>(docs));
  for (int64_t q = 0; q < queries; ++q) {
    const float* s = scores.data() + q * docs;
    const std::vector<int64_t>& rel = relevant[size_t(q)];
    RC_CHECK(!rel.empty(), Errc::invalid_argument, "retrieval metrics: query ", q, " has no relevant document");
    std::fill(is_relevant.begin(), is_relevant.end(), 0);
    for (int64_t d : rel) {
      RC_CHECK(d >= 0 && d < docs, Errc::invalid_argument, "retrieval metrics: document ", d, " out of range");
      is_relevant[size_t(d)] = 1;
    }
    const double n_rel = double(std::count(is_relevant.begin(), is_relevant.end(), 1));
    std::iota(order.begin(), order.end(), int64_t(0));
    std::partial_sort(order.begin(), order.begin() + top, order.end(),
                      [&](int64_t x, int64_t y) { return s[x] != s[y] ? s[x] > s[y] : x < y; });
    double hits_at[kMaxK + 1] = {0};  // relevant documents among the first k
    double dcg = 0, rr = 0;
    for (int64_t rank = 0; rank < top; ++rank) {
      const bool hit = is_relevant[size_t(order[size_t(rank)])] != 0;
      hits_at[rank + 1] = hits_at[rank] + (hit ? 1 : 0);
      if (hit) {
        dcg += 1.0 / std::log2(double(rank) + 2.0);
        if (rr == 0) rr = 1.0 / double(rank + 1);
      }
    }
    for (int64_t k = top + 1; k <= kMaxK; ++k) hits_at[k] = hits_at[top];
    double ideal = 0;
    for (int64_t i = 0; i < std::min<int64_t>(kMaxK, int64_t(n_rel)); ++i) ideal += 1.0 / std::log2(double(i) + 2.0);
    mrr += rr;
    ndcg += dcg / ideal;
    r1 += hits_at[1] / n_rel;
    r5 += hits_at[5] / n_rel;
    r10 += hits_at[10] / n_rel;
  }
  const double n = double(queries);
  return {
      {"mrr@10", mrr / n}, {"ndcg@10", ndcg / n}, {"recall@1", r1 / n}, {"recall@5", r5 / n}, {"recall@10", r10 / n}};
}

NamedMetrics embedding_retrieval_metrics(std::span<const float> queries, std::span<const float> docs, int64_t dim,
                                         const std::vector<std::vector<int64_t>>& relevant, int64_t max_scores) {
  RC_CHECK(
      dim > 0 && queries.size() % size_t(dim) == 0 && docs.size() % size_t(dim) == 0 && !docs.empty() && max_scores > 0,
      Errc::invalid_argument, "retrieval metrics: ", queries.size(), " and ", docs.size(), " values are not rows of ",
      dim);
  const int64_t C = dim, Q = int64_t(queries.size()) / C, D = int64_t(docs.size()) / C;
  RC_CHECK(int64_t(relevant.size()) == Q, Errc::invalid_argument, "retrieval metrics: ", Q, " queries, ",
           relevant.size(), " relevance lists");
  std::vector<float> q(queries.begin(), queries.end()), d(docs.begin(), docs.end());
  for (int64_t i = 0; i < Q; ++i) model::l2_normalize(std::span<float>(q.data() + i * C, size_t(C)));
  for (int64_t j = 0; j < D; ++j) model::l2_normalize(std::span<float>(d.data() + j * C, size_t(C)));
  const int64_t chunk = std::max<int64_t>(1, max_scores / D);
  NamedMetrics out;
  std::vector<float> scores;
  for (int64_t q0 = 0; q0 < Q; q0 += chunk) {
    const int64_t n = std::min(chunk, Q - q0);
    scores.assign(size_t(n * D), 0.0f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < D; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < C; ++c) dot += double(q[size_t((q0 + i) * C + c)]) * d[size_t(j * C + c)];
        scores[size_t(i * D + j)] = float(dot);
      }
    const std::vector<std::vector<int64_t>> rel(relevant.begin() + q0, relevant.begin() + q0 + n);
    const NamedMetrics m = information_retrieval_metrics(scores, n, D, rel);
    if (out.empty())
      for (const auto& [name, v] : m) out.emplace_back(name, 0.0);
    for (size_t k = 0; k < m.size(); ++k) out[k].second += m[k].second * double(n) / double(Q);
  }
  return out;
}

NamedMetrics reranking_metrics(std::span<const float> scores, std::span<const int64_t> group_of,
                               std::span<const float> labels) {
  RC_CHECK(scores.size() == group_of.size() && scores.size() == labels.size(), Errc::invalid_argument,
           "reranking metrics: ", scores.size(), " scores, ", group_of.size(), " groups, ", labels.size(), " labels");
  std::map<int64_t, std::vector<size_t>> rows;  // by query, rows in input order
  for (size_t i = 0; i < group_of.size(); ++i) rows[group_of[i]].push_back(i);
  NamedMetrics sum;
  int64_t counted = 0;
  std::vector<float> s;
  std::vector<std::vector<int64_t>> relevant(1);
  for (const auto& [query, r] : rows) {
    s.clear();
    relevant[0].clear();
    for (size_t k = 0; k < r.size(); ++k) {
      s.push_back(scores[r[k]]);
      if (labels[r[k]] >= 0.5f) relevant[0].push_back(int64_t(k));
    }
    if (relevant[0].empty() || relevant[0].size() == r.size()) continue;
    const NamedMetrics m = information_retrieval_metrics(s, 1, int64_t(r.size()), relevant);
    if (sum.empty())
      for (const auto& [name, v] : m) sum.emplace_back(name, 0.0);
    for (size_t k = 0; k < m.size(); ++k) sum[k].second += m[k].second;
    ++counted;
  }
  for (auto& [name, v] : sum) v /= double(counted);
  return sum;
}

NamedMetrics similarity_metrics(std::span<const float> a, std::span<const float> b, int64_t dim,
                                std::span<const double> gold) {
  RC_CHECK(dim > 0 && a.size() == b.size() && int64_t(a.size()) == dim * int64_t(gold.size()), Errc::invalid_argument,
           "similarity metrics: ", gold.size(), " scores for ", a.size(), " and ", b.size(), " values of dim ", dim);
  std::vector<double> cos(gold.size());
  for (size_t i = 0; i < gold.size(); ++i)
    cos[i] = double(
        model::cosine_similarity(a.subspan(i * size_t(dim), size_t(dim)), b.subspan(i * size_t(dim), size_t(dim))));
  return {{"spearman_cosine", spearman_rho(gold, cos)}, {"pearson_cosine", pearson_r(gold, cos)}};
}

}  // namespace rc::train
