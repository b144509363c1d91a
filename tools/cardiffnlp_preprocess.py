#!/usr/bin/env python3
"""cardiffnlp's tweet preprocessing, as on the model card of
cardiffnlp/twitter-roberta-base-sentiment-latest (and tweetnlp before it predicts), transcribed
verbatim. The reference for src/core/tweet_text.cpp: prints one JSON line {"in": ..., "out": ...}
per argument (or per stdin line), which tests/unit/test_tweet_text.cpp's cases were taken from.
"""
import json
import sys


def preprocess(text):
    new_text = []
    for t in text.split(" "):
        t = '@user' if t.startswith('@') and len(t) > 1 else t
        t = 'http' if t.startswith('http') else t
        new_text.append(t)
    return " ".join(new_text)


if __name__ == "__main__":
    texts = sys.argv[1:] or [line.rstrip("\n") for line in sys.stdin]
    for text in texts:
        print(json.dumps({"in": text, "out": preprocess(text)}, ensure_ascii=False))
