// Retrieval and similarity metrics of an embedding model's held-out split, as
// sentence-transformers' evaluators define them:
//   - InformationRetrievalEvaluator (sentence_transformers/evaluation/InformationRetrievalEvaluator.py,
//     compute_metrics): per query the corpus sorted by score (descending); recall@k = relevant
//     documents in the top k / the query's relevant documents; MRR@k = 1 / rank of the first
//     relevant document in the top k (0 when none); NDCG@k = DCG of the top k (binary gains,
//     1 / log2(rank + 1)) / DCG of the ideal list (min(k, relevant) ones); each averaged over
//     the queries.
//   - EmbeddingSimilarityEvaluator: Spearman (and Pearson) of the gold scores against the
//     pairs' cosine similarities (scipy.stats.spearmanr / pearsonr).
// Ties in score keep corpus order (the lower index first).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rc::train {

using NamedMetrics = std::vector<std::pair<std::string, double>>;

// scores: (queries, docs) row-major; relevant[q]: the corpus indices relevant to query q (each
// query needs at least one). Returns mrr@10, ndcg@10, recall@1, recall@5, recall@10.
NamedMetrics information_retrieval_metrics(std::span<const float> scores, int64_t queries, int64_t docs,
                                           const std::vector<std::vector<int64_t>>& relevant);

// information_retrieval_metrics of embeddings: queries (Q, dim) against docs (D, dim) by cosine
// similarity (util.cos_sim), the score matrix made a chunk of queries at a time, at most
// max_scores floats (each metric is a mean over queries: the chunks' means weighted by size).
NamedMetrics embedding_retrieval_metrics(std::span<const float> queries, std::span<const float> docs, int64_t dim,
                                         const std::vector<std::vector<int64_t>>& relevant,
                                         int64_t max_scores = int64_t(1) << 24);

// Reranking (cross_encoder/evaluation/CERerankingEvaluator.py): row i is a (query, text) pair
// of query group_of[i] scored scores[i] (a cross-encoder's logit); texts with label >= 0.5 are
// relevant. Each query's texts are ranked by score; a query without a relevant or without an
// irrelevant text is skipped, as there. information_retrieval_metrics' five per query,
// averaged over the counted queries; empty when none counts.
NamedMetrics reranking_metrics(std::span<const float> scores, std::span<const int64_t> group_of,
                               std::span<const float> labels);

// The cosine similarity of each pair (a[i], b[i]) of dim-long vectors against gold[i]:
// spearman_cosine and pearson_cosine (NaN where SciPy gives NaN: a constant column).
NamedMetrics similarity_metrics(std::span<const float> a, std::span<const float> b, int64_t dim,
                                std::span<const double> gold);

}  // namespace rc::train
