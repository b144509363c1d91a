#!/usr/bin/env python3
"""Label alignment goldens for token classification, from transformers' own logic.

Transcribes examples/pytorch/token-classification/run_ner.py (huggingface/transformers):
get_label_list, the b_to_i_label map and tokenize_and_align_labels, and runs them on the
word_ids that Hugging Face's Rust tokenizers gave for tokenizer(words,
is_split_into_words=True, add_prefix_space=True) in tests/data/tokenizer/words.jsonl (made by
tools/make_offset_goldens.mjs). transformers itself is not installed here; the three
functions below are copied from run_ner.py with only the dataset plumbing removed.

Writes, read by tests/train/test_token_data.cpp:
  tests/data/ner/align_train.jsonl     {"tokens": [...], "ner_tags": [...]} per sentence (the
                                       words of words.jsonl, tags drawn with a fixed seed)
  tests/data/ner/align_expected.jsonl  first line {"label_list": [...]}, then per sentence
                                       {"max_length": n | null, "input_ids": [...],
                                        "labels": [...], "labels_all_tokens": [...]}
Run: /usr/bin/python3 tools/make_ner_align_golden.py   (deterministic)
"""
import json
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = os.path.join(ROOT, "tests/data/tokenizer/words.jsonl")
OUT = os.path.join(ROOT, "tests/data/ner")

# Tags as tweetner7 / conll2003 spell them, plus cases for b_to_i_label's corners: a B- with
# no I- twin (B-MISC), and a name with "B-" twice (str.replace changes both: B-B-X -> I-I-X).
TAGS = ["O", "O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC",
        "B-corporation", "I-corporation", "B-B-X", "I-I-X"]


# run_ner.py: get_label_list
def get_label_list(labels):
    unique_labels = set()
    for label in labels:
        unique_labels = unique_labels | set(label)
    label_list = list(unique_labels)
    label_list.sort()
    return label_list


# run_ner.py: the map that sends B-Xxx label to its I-Xxx counterpart
def b_to_i_label_of(label_list):
    b_to_i_label = []
    for idx, label in enumerate(label_list):
        if label.startswith("B-") and label.replace("B-", "I-") in label_list:
            b_to_i_label.append(label_list.index(label.replace("B-", "I-")))
        else:
            b_to_i_label.append(idx)
    return b_to_i_label


# run_ner.py: tokenize_and_align_labels, the part after the tokenizer call, for one example
# (word_ids is tokenized_inputs.word_ids(batch_index=i)).
def align(word_ids, label, label_to_id, b_to_i_label, label_all_tokens):
    previous_word_idx = None
    label_ids = []
    for word_idx in word_ids:
        if word_idx is None:
            label_ids.append(-100)
        elif word_idx != previous_word_idx:
            label_ids.append(label_to_id[label[word_idx]])
        else:
            if label_all_tokens:
                label_ids.append(b_to_i_label[label_to_id[label[word_idx]]])
            else:
                label_ids.append(-100)
        previous_word_idx = word_idx
    return label_ids


def main():
    rng = random.Random(20261202)
    cases = [json.loads(line) for line in open(WORDS, encoding="utf-8") if line.strip()]
    for c in cases:
        c["tags"] = [rng.choice(TAGS) for _ in c["words"]]
    label_list = get_label_list([c["tags"] for c in cases])
    label_to_id = {l: i for i, l in enumerate(label_list)}
    b_to_i_label = b_to_i_label_of(label_list)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "align_train.jsonl"), "w", encoding="utf-8") as f:
        for c in cases:
            f.write(json.dumps({"tokens": c["words"], "ner_tags": c["tags"]}, ensure_ascii=False) + "\n")
    with open(os.path.join(OUT, "align_expected.jsonl"), "w", encoding="utf-8") as f:
        f.write(json.dumps({"label_list": label_list, "b_to_i_label": b_to_i_label}, ensure_ascii=False) + "\n")
        for c in cases:
            f.write(json.dumps({
                "max_length": c.get("max_length"),
                "input_ids": c["ids"],
                "labels": align(c["word_ids"], c["tags"], label_to_id, b_to_i_label, False),
                "labels_all_tokens": align(c["word_ids"], c["tags"], label_to_id, b_to_i_label, True),
            }) + "\n")
    print(f"{len(cases)} sentences, {len(label_list)} labels")


if __name__ == "__main__":
    main()
