#!/usr/bin/env python3
"""Reference numbers for src/train/multilabel_metrics.cpp, restated in plain Python (no numpy,
sklearn or scipy here) from:
  scikit-learn 1.5 sklearn/metrics/_classification.py: precision_recall_fscore_support on a
      multilabel-indicator matrix (per-label tp / pred / true counts, zero_division=0,
      F = 2 tp / (2 tp + fp + fn); micro sums the counts, macro averages the K labels),
      accuracy_score (subset accuracy)
  scikit-learn sklearn/metrics/_regression.py: mean_squared_error, mean_absolute_error
      (multioutput="uniform_average")
  SciPy 1.11 scipy/stats/_stats_py.py: pearsonr (constant input -> nan; n == 2 -> sign
      product; else dot of the normalised deviations, clipped), spearmanr (constant -> nan,
      nan -> nan, rankdata(method="average") then np.corrcoef, clipped)
and HF's examples' multi-label decision: sigmoid probability > threshold (logits > 0 at 0.5).

Inputs are rounded to float32 first (the C++ takes float). Writes
tests/data/task_metrics/multilabel_regression_cases.json. Run: python3 tools/multilabel_metrics_ref.py
"""
import json
import math
import os
import struct


def f32(x):
    return struct.unpack('f', struct.pack('f', x))[0]


def f32_rows(rows):
    return [[f32(v) for v in r] for r in rows]


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z))


def div0(a, b):
    return a / b if b != 0 else 0.0


def multilabel(targets, scores, kind, threshold):
    if kind == 'logits':
        pred = [[1 if sigmoid(z) > threshold else 0 for z in r] for r in scores]
    else:  # numpy: float32 array > Python float compares in float32
        pred = [[1 if p > f32(threshold) else 0 for p in r] for r in scores]
    K = len(targets[0]) if targets else 0
    tp = [sum(1 for t, p in zip(targets, pred) if t[k] == 1 and p[k] == 1) for k in range(K)]
    ps = [sum(p[k] for p in pred) for k in range(K)]
    ts = [sum(int(t[k]) for t in targets) for k in range(K)]
    prec = [div0(tp[k], ps[k]) for k in range(K)]
    rec = [div0(tp[k], ts[k]) for k in range(K)]
    f1 = [div0(2 * tp[k], ts[k] + ps[k]) for k in range(K)]
    TP, P, T = sum(tp), sum(ps), sum(ts)
    exact = sum(1 for t, p in zip(targets, pred) if all(int(a) == b for a, b in zip(t, p)))
    return {'predictions': pred, 'precision': prec, 'recall': rec, 'f1': f1, 'support': ts,
            'micro_precision': div0(TP, P), 'micro_recall': div0(TP, T), 'micro_f1': div0(2 * TP, T + P),
            'macro_precision': sum(prec) / K, 'macro_recall': sum(rec) / K, 'macro_f1': sum(f1) / K,
            'exact_match': div0(exact, len(targets))}


def mean(v):
    return sum(v) / len(v)


def pearsonr(x, y):
    n = len(x)
    if n < 2:
        return float('nan')  # scipy raises
    if all(a == x[0] for a in x) or all(b == y[0] for b in y):
        return float('nan')
    if n == 2:
        sign = lambda v: (v > 0) - (v < 0) if not math.isnan(v) else float('nan')
        return float(sign(x[1] - x[0]) * sign(y[1] - y[0]))
    xm = [a - mean(x) for a in x]
    ym = [b - mean(y) for b in y]
    nx = math.sqrt(sum(a * a for a in xm))
    ny = math.sqrt(sum(b * b for b in ym))
    r = sum((a / nx) * (b / ny) for a, b in zip(xm, ym))
    return r if math.isnan(r) else max(min(r, 1.0), -1.0)


def rankdata_average(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    ranks = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for r in range(i, j + 1):
            ranks[order[r]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearmanr(x, y):
    if len(x) <= 1:
        return float('nan')
    if all(a == x[0] for a in x) or all(b == y[0] for b in y):
        return float('nan')
    if any(math.isnan(a) for a in x + y):
        return float('nan')
    rx, ry = rankdata_average(x), rankdata_average(y)
    mx, my = mean(rx), mean(ry)
    f = 1.0 / (len(x) - 1)
    cxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry)) * f
    cxx = sum((a - mx) ** 2 for a in rx) * f
    cyy = sum((b - my) ** 2 for b in ry) * f
    r = cxy / math.sqrt(cyy) / math.sqrt(cxx)
    return max(min(r, 1.0), -1.0)


def regression(targets, preds):
    K = len(targets[0])
    col = lambda m, k: [r[k] for r in m]
    mse = mean([mean([(t - p) ** 2 for t, p in zip(col(targets, k), col(preds, k))]) for k in range(K)])
    mae = mean([mean([abs(t - p) for t, p in zip(col(targets, k), col(preds, k))]) for k in range(K)])
    return {'mse': mse, 'mae': mae,
            'pearson': [pearsonr(col(preds, k), col(targets, k)) for k in range(K)],
            'spearman': [spearmanr(col(preds, k), col(targets, k)) for k in range(K)]}


def nan_to_none(v):
    if isinstance(v, list):
        return [nan_to_none(x) for x in v]
    if isinstance(v, dict):
        return {k: nan_to_none(x) for k, x in v.items()}
    return None if isinstance(v, float) and math.isnan(v) else v


ML_CASES = [
    # label 2 has no positive target and no prediction (0/0 -> 0); z == 0 is not positive
    ('logits_mixed', 'logits', 0.5,
     [[1, 0, 0, 1], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 0, 1]],
     [[2.5, -1.0, -3.0, 0.7], [0.0, 1.2, -0.5, 3.1], [1.1, -0.2, -2.0, -0.1], [-1.0, -1.0, -4.0, -0.3],
      [0.3, 0.1, -1.0, 2.0]]),
    ('logits_threshold_0_8', 'logits', 0.8,  # sigmoid(1.3) = 0.786 < 0.8 < sigmoid(1.5) = 0.818
     [[1, 0, 1], [1, 1, 0], [0, 1, 1]],
     [[1.5, 1.3, 2.0], [1.3, 1.6, -0.2], [-2.0, 4.0, 1.39]]),
    ('probabilities_threshold_0_3', 'probabilities', 0.3,  # float32(0.3) itself is not > 0.3
     [[1, 0], [0, 1], [1, 1], [0, 0]],
     [[0.3, 0.1], [0.31, 0.9], [0.95, 0.2999], [0.05, 0.3]]),
    ('empty_rows_all_correct', 'logits', 0.5,  # empty label sets predicted empty: exact matches
     [[0, 0, 0], [0, 0, 0]],
     [[-1.0, -2.0, -0.5], [-0.1, -3.0, -9.0]]),
]

REG_CASES = [
    ('ties_in_both', [[3.0], [1.0], [2.0], [2.0], [5.0], [4.0]],
     [[2.5], [0.5], [2.0], [2.5], [4.75], [4.75]]),
    ('constant_prediction', [[1.0], [2.0], [3.0]], [[0.5], [0.5], [0.5]]),
    ('two_points', [[1.0], [2.0]], [[3.0], [2.5]]),
    ('two_columns', [[0.1, 10.0], [0.4, 12.0], [0.35, 9.0], [0.8, 15.0], [0.6, 11.0]],
     [[0.2, 11.0], [0.3, 11.5], [0.5, 9.5], [0.7, 14.0], [0.65, 10.0]]),
    ('nan_prediction', [[1.0], [2.0], [3.0]], [[1.0], [float('nan')], [2.0]]),
    ('one_row', [[1.0]], [[2.0]]),
]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ml = []
    for name, kind, thr, t, s in ML_CASES:
        s = f32_rows(s)
        ml.append({'name': name, 'kind': kind, 'threshold': thr, 'targets': t, 'scores': s,
                   'expected': multilabel(t, s, kind, thr)})
    reg = []
    for name, t, p in REG_CASES:
        t, p = f32_rows(t), f32_rows(p)
        reg.append({'name': name, 'targets': t, 'predictions': nan_to_none(p),
                    'expected': nan_to_none(regression(t, p))})
    out = {'generator': 'tools/multilabel_metrics_ref.py', 'nan': 'written as null',
           'multilabel': ml, 'regression': reg}
    path = os.path.join(root, 'tests', 'data', 'task_metrics', 'multilabel_regression_cases.json')
    with open(path, 'w') as f:
        json.dump(out, f, indent=1)
        f.write('\n')
    print('wrote', path)


if __name__ == '__main__':
    main()
