#!/usr/bin/env python3
"""Unlabelled pretraining corpus from TweetEval (issue #14): the train texts of every task,
de-duplicated, with every text equal to a sentiment val or test text removed — so a model
pretrained on it has never seen the texts its fine-tune is scored on.

  scripts/prepare_pretrain_corpus.py [--tweeteval DIR] [--output FILE] [--tasks a,b,...]

--tasks picks the tasks whose train texts go in (default: all seven). `--tasks sentiment` is the
task-adaptive corpus (Gururangan et al. 2020, "Don't Stop Pretraining": more masked-LM on the
fine-tune's own unlabelled texts); the held-out check is the same.

Writes one text a line (the line as in the TweetEval file, trailing space kept), in first-seen
order, then re-reads the output and checks the exclusion (exit 1 if any held-out text leaked).
"""
import argparse
import os
import sys

TASKS = ["emoji", "emotion", "hate", "irony", "offensive", "sentiment", "stance"]


def read_lines(path):
    with open(path, encoding="utf-8", newline="") as f:
        return [l[:-1] if l.endswith("\n") else l for l in f]


def train_files(root, tasks):
    for task in tasks:
        d = os.path.join(root, task)
        if os.path.exists(os.path.join(d, "train_text.txt")):
            yield os.path.join(d, "train_text.txt")
        elif os.path.isdir(d):  # stance has one folder per target
            for sub in sorted(os.listdir(d)):
                p = os.path.join(d, sub, "train_text.txt")
                if os.path.exists(p):
                    yield p


def key(text):  # "equal" ignores the trailing space / surrounding whitespace TweetEval lines carry
    return text.strip()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tweeteval", default=os.path.join(here, "..", "..", "shared", "data", "tweeteval"))
    ap.add_argument("--output", default="pretrain_tweets.txt")
    ap.add_argument("--tasks", default=",".join(TASKS), help="comma-separated, from " + ",".join(TASKS))
    a = ap.parse_args()
    tasks = [t for t in a.tasks.split(",") if t]
    unknown = [t for t in tasks if t not in TASKS]
    if unknown or not tasks:
        print(f"error: --tasks {a.tasks!r}: unknown task(s) {unknown} (hint: pick from {','.join(TASKS)})",
              file=sys.stderr)
        return 2
    held_out = set()
    for split in ("val", "test"):
        held_out.update(key(t) for t in read_lines(os.path.join(a.tweeteval, "sentiment", f"{split}_text.txt")))
    seen, out, dropped_held, dups = set(), [], 0, 0
    files = list(train_files(a.tweeteval, tasks))
    for path in files:
        for t in read_lines(path):
            k = key(t)
            if not k:
                continue
            if k in held_out:
                dropped_held += 1
                continue
            if k in seen:
                dups += 1
                continue
            seen.add(k)
            out.append(t)
    with open(a.output, "w", encoding="utf-8", newline="") as f:
        for t in out:
            f.write(t + "\n")
    # The test the issue asks for: re-read what was written and look for any held-out text.
    leaked = [t for t in read_lines(a.output) if key(t) in held_out]
    if leaked:
        print(f"error: {len(leaked)} sentiment val/test texts leaked into {a.output}", file=sys.stderr)
        return 1
    print(f"{a.output}: {len(out)} texts from {len(files)} files "
          f"({dups} duplicates and {dropped_held} sentiment val/test texts removed; leak check passed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
