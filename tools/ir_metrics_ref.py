#!/usr/bin/env python3
"""Reference numbers for src/train/ir_metrics.cpp, restated in plain Python (no numpy, torch or
sentence-transformers here) from sentence-transformers:
  sentence_transformers/evaluation/InformationRetrievalEvaluator.py compute_metrics: per query
      the hits sorted by score (descending; equal scores keep corpus order, as Python's stable
      sort), recall@k = correct in top k / len(relevant), MRR@k = 1 / (rank + 1) of the first
      relevant hit in the top k, NDCG@k = compute_dcg_at_k(predicted 0/1 relevances, k) /
      compute_dcg_at_k([1] * len(relevant), k) with dcg = sum rel_i / log2(i + 2); each the
      mean over queries;
  sentence_transformers/evaluation/EmbeddingSimilarityEvaluator.py: cosine scores
      1 - paired_cosine_distances(e1, e2), spearman_cosine = spearmanr(labels, scores),
      pearson_cosine = pearsonr(labels, scores) (SciPy, as tools/multilabel_metrics_ref.py).
Inputs are rounded to float32 first (the C++ takes float). Writes
tests/data/task_metrics/ir_cases.json. Run: python3 tools/ir_metrics_ref.py
"""
import json
import math
import os
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from multilabel_metrics_ref import pearsonr, spearmanr  # noqa: E402


def f32(x):
    return struct.unpack('f', struct.pack('f', x))[0]


def dcg_at_k(relevances, k):
    return sum(relevances[i] / math.log2(i + 2) for i in range(min(len(relevances), k)))


def ir_metrics(scores, relevant):
    mrr, ndcg, recall = 0.0, [], {1: [], 5: [], 10: []}
    for q, row in enumerate(scores):
        top = sorted(range(len(row)), key=lambda d: row[d], reverse=True)[:10]
        rel = set(relevant[q])
        for k in recall:
            recall[k].append(sum(1 for d in top[:k] if d in rel) / len(rel))
        for rank, d in enumerate(top[:10]):
            if d in rel:
                mrr += 1.0 / (rank + 1)
                break
        predicted = [1 if d in rel else 0 for d in top[:10]]
        ndcg.append(dcg_at_k(predicted, 10) / dcg_at_k([1] * len(rel), 10))
    n = len(scores)
    return {'mrr@10': mrr / n, 'ndcg@10': sum(ndcg) / n, 'recall@1': sum(recall[1]) / n,
            'recall@5': sum(recall[5]) / n, 'recall@10': sum(recall[10]) / n}


def cosine(a, b):
    # util.cos_sim / F.normalize: x / max(||x||, 1e-12)
    na = max(math.sqrt(sum(x * x for x in a)), 1e-12)
    nb = max(math.sqrt(sum(x * x for x in b)), 1e-12)
    return sum((x / na) * (y / nb) for x, y in zip(a, b))


def main():
    rng = random.Random(31)
    cases = []
    for Q, D, max_rel in [(3, 4, 1), (7, 25, 3), (12, 8, 2), (5, 40, 4)]:
        scores = [[f32(rng.uniform(-1, 1)) for _ in range(D)] for _ in range(Q)]
        relevant = [sorted(rng.sample(range(D), rng.randint(1, max_rel))) for _ in range(Q)]
        cases.append({'kind': 'ir', 'scores': scores, 'relevant': relevant,
                      'want': ir_metrics(scores, relevant)})
    # ties: equal scores keep corpus order
    scores = [[0.5, 0.5, 0.5, 0.1], [0.2, 0.9, 0.9, 0.9]]
    relevant = [[2], [3, 0]]
    cases.append({'kind': 'ir', 'scores': scores, 'relevant': relevant, 'want': ir_metrics(scores, relevant)})
    for n, dim in [(6, 4), (20, 8)]:
        a = [[f32(rng.gauss(0, 1)) for _ in range(dim)] for _ in range(n)]
        b = [[f32(x + rng.gauss(0, 0.7)) for x in row] for row in a]
        gold = [float(rng.randint(0, 5)) for _ in range(n)]
        cos = [cosine(x, y) for x, y in zip(a, b)]
        cases.append({'kind': 'similarity', 'a': a, 'b': b, 'dim': dim, 'gold': gold,
                      'want': {'spearman_cosine': spearmanr(gold, cos), 'pearson_cosine': pearsonr(gold, cos)}})
    path = os.path.join(os.path.dirname(HERE), 'tests', 'data', 'task_metrics', 'ir_cases.json')
    with open(path, 'w') as f:
        json.dump({'generator': 'tools/ir_metrics_ref.py', 'cases': cases}, f, indent=1)
        f.write('\n')
    print(f'ir_metrics_ref: wrote {path} ({len(cases)} cases)')


if __name__ == '__main__':
    main()
