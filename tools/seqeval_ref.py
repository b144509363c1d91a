#!/usr/bin/env python3
"""Reference numbers for src/train/seqeval.cpp: seqeval's default mode, re-stated in plain
Python (no numpy / seqeval here) from chakki-works/seqeval 1.2.2:
  seqeval/metrics/sequence_labeling.py  get_entities, end_of_chunk, start_of_chunk,
      precision_recall_fscore_support (its extract_tp_actual_correct), classification_report,
      accuracy_score
  seqeval/metrics/v1.py  _precision_recall_fscore_support, _prf_divide (zero_division=0)
and the dict huggingface/evaluate's metrics/seqeval/seqeval.py builds from the report.

Writes tests/data/task_metrics/seqeval_cases.json: each case's gold and predicted tags and the
expected report. Run: python3 tools/seqeval_ref.py
"""
import json
import os

# Tag pairs that end the open chunk / start a new one (besides the type-change rules below).
ENDS = {('B', 'B'), ('B', 'S'), ('B', 'O'), ('I', 'B'), ('I', 'S'), ('I', 'O')}
STARTS = {('E', 'E'), ('E', 'I'), ('S', 'E'), ('S', 'I'), ('O', 'E'), ('O', 'I')}


def chunk_ends(prev_tag, tag, prev_type, type_):
    return (prev_tag in ('E', 'S') or (prev_tag, tag) in ENDS
            or (prev_tag not in ('O', '.') and prev_type != type_))


def chunk_starts(prev_tag, tag, prev_type, type_):
    return (tag in ('B', 'S') or (prev_tag, tag) in STARTS
            or (tag not in ('O', '.') and prev_type != type_))


def get_entities(sentences):
    # A list of sentences is flattened with one 'O' after each, and one more 'O' at the end.
    seq = [t for s in sentences for t in s + ['O']] + ['O']
    prev_tag, prev_type, begin, chunks = 'O', '', 0, []
    for i, chunk in enumerate(seq):
        tag = chunk[0]
        type_ = chunk[1:].split('-', maxsplit=1)[-1] or '_'
        if chunk_ends(prev_tag, tag, prev_type, type_):
            chunks.append((prev_type, begin, i - 1))
        if chunk_starts(prev_tag, tag, prev_type, type_):
            begin = i
        prev_tag, prev_type = tag, type_
    return chunks


def divide(num, den):  # _prf_divide, zero_division=0
    return num / den if den != 0 else 0.0


def f1(p, r):  # (1 + beta^2) p r / (beta^2 p + r), the denominator 1 where it is 0
    denom = p + r
    if denom == 0.0:
        denom = 1.0
    return 2.0 * p * r / denom


def report(gold, pred):
    assert len(gold) == len(pred) and all(len(g) == len(p) for g, p in zip(gold, pred))
    by_type_gold, by_type_pred = {}, {}
    for t, s, e in get_entities(gold):
        by_type_gold.setdefault(t, set()).add((s, e))
    for t, s, e in get_entities(pred):
        by_type_pred.setdefault(t, set()).add((s, e))
    names = sorted(set(by_type_gold) | set(by_type_pred))
    out, tp_all, pred_all, true_all = {}, 0, 0, 0
    for name in names:
        g, p = by_type_gold.get(name, set()), by_type_pred.get(name, set())
        tp = len(g & p)
        prec, rec = divide(tp, len(p)), divide(tp, len(g))
        out[name] = {'precision': prec, 'recall': rec, 'f1': f1(prec, rec), 'number': len(g),
                     'predicted': len(p), 'correct': tp}
        tp_all, pred_all, true_all = tp_all + tp, pred_all + len(p), true_all + len(g)
    prec, rec = divide(tp_all, pred_all), divide(tp_all, true_all)
    flat_g = [t for s in gold for t in s]
    flat_p = [t for s in pred for t in s]
    # accuracy_score divides by the token count; with none it raises, the C++ reports 0.
    acc = sum(a == b for a, b in zip(flat_g, flat_p)) / len(flat_g) if flat_g else 0.0
    return {'per_type': out, 'overall_precision': prec, 'overall_recall': rec, 'overall_f1': f1(prec, rec),
            'overall_accuracy': acc, 'support': true_all, 'predicted': pred_all, 'correct': tp_all,
            'entities_gold': [list(e) for e in get_entities(gold)],
            'entities_pred': [list(e) for e in get_entities(pred)]}


CASES = [
    ('docstring_report',  # seqeval's classification_report docstring: MISC 0, PER 1, micro 0.5
     [['O', 'O', 'O', 'B-MISC', 'I-MISC', 'I-MISC', 'O'], ['B-PER', 'I-PER', 'O']],
     [['O', 'O', 'B-MISC', 'I-MISC', 'I-MISC', 'I-MISC', 'O'], ['B-PER', 'I-PER', 'O']]),
    ('docstring_f1',  # f1_score docstring: micro 2/3
     [['O', 'O', 'B-MISC', 'I-MISC', 'B-MISC', 'O', 'O'], ['B-PER', 'I-PER', 'O']],
     [['O', 'O', 'B-MISC', 'I-MISC', 'B-MISC', 'I-MISC', 'O'], ['B-PER', 'I-PER', 'O']]),
    ('iob1_i_after_o',  # an I- after O starts an entity, as a B- would
     [['I-PER', 'I-PER', 'O', 'I-LOC'], ['O', 'I-ORG']],
     [['B-PER', 'I-PER', 'O', 'B-LOC'], ['O', 'B-ORG']]),
    ('type_change_mid_entity',  # I-LOC after I-PER closes PER and opens LOC
     [['B-PER', 'I-PER', 'I-LOC', 'O', 'B-ORG', 'I-MISC']],
     [['B-PER', 'I-PER', 'B-LOC', 'O', 'B-ORG', 'B-MISC']]),
    ('iobes_tags',  # E- and S- tags, read as seqeval's default mode reads them
     [['S-PER', 'O', 'B-LOC', 'E-LOC', 'E-LOC', 'I-ORG', 'S-ORG']],
     [['B-PER', 'O', 'B-LOC', 'I-LOC', 'E-LOC', 'I-ORG', 'B-ORG']]),
    ('empty_sentences',
     [[], ['B-PER'], [], ['O', 'B-LOC']],
     [[], ['O'], [], ['O', 'B-LOC']]),
    ('no_predictions',  # precision 0/0 -> 0 (zero_division=0), F1 0
     [['B-PER', 'I-PER', 'O'], ['B-LOC']],
     [['O', 'O', 'O'], ['O']]),
    ('no_entities_at_all',
     [['O', 'O'], ['O']],
     [['O', 'O'], ['O']]),
    ('predicted_only_type',  # ORG appears only in predictions: support 0, recall 0
     [['B-PER', 'O', 'O']],
     [['B-PER', 'B-ORG', 'I-ORG']]),
    ('sentence_boundary_splits',  # I- at the start of the next sentence is a new entity
     [['B-PER', 'I-PER'], ['I-PER', 'O']],
     [['B-PER', 'I-PER'], ['B-PER', 'O']]),
    ('odd_tags',  # bare B, no prefix, '.', two dashes, non-ASCII and lower-case types
     [['B', 'I', 'PER', 'O', 'B-PER-X', 'I-PER-X', '.', 'B-ÖRT', 'I-ÖRT', 'B-loc', 'B-LOC']],
     [['B', 'B', 'PER', 'O', 'B-PER-X', 'I-PER', '.', 'B-ÖRT', 'I-ÖRT', 'B-loc', 'I-loc']]),
    ('no_sentences', [], []),
]


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = {'generator': 'tools/seqeval_ref.py', 'source': 'chakki-works/seqeval 1.2.2 default mode',
           'cases': [{'name': n, 'gold': g, 'pred': p, 'expected': report(g, p)} for n, g, p in CASES]}
    path = os.path.join(root, 'tests', 'data', 'task_metrics', 'seqeval_cases.json')
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write('\n')
    print('wrote', path)


if __name__ == '__main__':
    main()
