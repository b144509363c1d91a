#!/usr/bin/env python3
"""A second, out-of-distribution yardstick for issue 32's sentiment models, with no sentiment test text.

TweetEval's sentiment test split (SemEval-2017) is not drawn like its train and val splits: its
tweets keep their emojis and typographic punctuation (21% have a non-ASCII character; train and
val have none), and they are a year or more newer. Val therefore says little about how a model
carries over to test. This scores a 3-class sentiment model on another held-out set that shares
test's traits: TweetEval emotion's val and test tweets (SemEval-2018, emojis kept; their train
texts are in the pretraining corpus, these are not), mapped to polarity: anger and sadness ->
negative, joy and optimism -> positive. Neither split is used for training anything.

Prints one JSON line:
  pos_vs_neg_macro_recall   mean recall of negative and positive when only those two scores
                            are compared (how well the model orders polarity; steady across
                            fine-tuning seeds: 0.713-0.737 over 13 runs, 2026-12-03);
  polar_macro_recall_3way   the same with the model's own 3-way answer (neutral counts wrong);
  recall_*, neutral_share.

  tools/ood_polarity_proxy.py ROBERTA_BIN MODEL_DIR [--emotion DIR] [--threads N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

POLARITY = {'anger': 'negative', 'sadness': 'negative', 'joy': 'positive', 'optimism': 'positive'}


def load(emotion_dir):
    names = {}
    with open(os.path.join(emotion_dir, 'mapping.txt'), encoding='utf-8') as f:
        for line in f:
            if line.strip():
                idx, name = line.split()
                names[idx] = name
    texts, gold = [], []
    for split in ('val', 'test'):
        with open(os.path.join(emotion_dir, f'{split}_text.txt'), encoding='utf-8') as f:
            split_texts = f.read().split('\n')
        with open(os.path.join(emotion_dir, f'{split}_labels.txt'), encoding='utf-8') as f:
            split_labels = f.read().split('\n')
        for text, label in zip(split_texts, split_labels):
            if text.strip() and label.strip():
                texts.append(text.strip())
                gold.append(POLARITY[names[label.strip()]])
    return texts, gold


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('roberta_bin')
    ap.add_argument('model_dir')
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument('--emotion', default=os.path.join(here, '..', '..', 'shared', 'data', 'tweeteval', 'emotion'),
                    help='TweetEval emotion folder (mapping.txt, {val,test}_{text,labels}.txt)')
    ap.add_argument('--threads', type=int, default=1)
    a = ap.parse_args()
    texts, gold = load(a.emotion)
    with tempfile.NamedTemporaryFile('w', suffix='.jsonl', delete=False, encoding='utf-8') as f:
        for text in texts:
            f.write(json.dumps({'text': text}) + '\n')
    try:
        out = subprocess.run([a.roberta_bin, 'predict', '--model', a.model_dir, '--input', f.name, '--threads',
                              str(a.threads), '--precision', 'fp32'], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if out.returncode != 0:
        sys.exit(f'ood_polarity_proxy: predict failed: {out.stderr.strip()}')
    rows = [json.loads(line) for line in out.stdout.split('\n') if line.strip()]
    if len(rows) != len(texts):
        sys.exit(f'ood_polarity_proxy: {len(rows)} answers for {len(texts)} texts')
    result = {'model': a.model_dir, 'texts': len(rows)}
    recall, pairwise = {}, {}
    for cls, other in (('negative', 'positive'), ('positive', 'negative')):
        idx = [i for i, g in enumerate(gold) if g == cls]
        recall[cls] = sum(rows[i]['label'] == cls for i in idx) / len(idx)
        pairwise[cls] = sum(rows[i]['scores'][cls] > rows[i]['scores'][other] for i in idx) / len(idx)
    result['pos_vs_neg_macro_recall'] = round((pairwise['negative'] + pairwise['positive']) / 2, 4)
    result['polar_macro_recall_3way'] = round((recall['negative'] + recall['positive']) / 2, 4)
    result['recall_negative'] = round(recall['negative'], 4)
    result['recall_positive'] = round(recall['positive'], 4)
    result['neutral_share'] = round(sum(r['label'] == 'neutral' for r in rows) / len(rows), 4)
    print(json.dumps(result))


if __name__ == '__main__':
    main()
