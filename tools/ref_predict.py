"""Prints the reference's logits for an HF model folder, so C++ slow tests can compare at test time.

    /usr/bin/python3 tools/ref_predict.py --model DIR --ids-json FILE
    /usr/bin/python3 tools/ref_predict.py --model DIR --texts-json FILE [--max-length 512]

--ids-json FILE: a JSON list of token-id lists (ragged; each is padded with the config's
  pad_token_id and masked), or {"input_ids": [[...]], "attention_mask": [[...]]} used as is.
--texts-json FILE: a JSON list of strings, tokenized by HF's Rust tokenizer (node
  tools/hf_tokenize.mjs, needs `npm install` in tools/) from DIR/tokenizer.json, else from
  assets/tokenizer/roberta-base/tokenizer.json, truncated to --max-length (default
  max_position_embeddings - 2).
FILE may be "-" for stdin. Output (stdout, one JSON object):
  {"logits": [[...], ...], "labels": ["positive", ...], "input_ids": [[...], ...]}
Runs in fp32, eval mode; --threads N sets torch's thread count (default 1: reproducible).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_io  # noqa: E402
import roberta_ref as rr  # noqa: E402


def _read_json(path):
    if path == "-":
        return json.load(sys.stdin)
    with open(path, "r", encoding="utf-8") as f:
        return json.load(f)


def tokenize(texts, tokenizer_json, max_length):
    req = json.dumps({"tokenizer": tokenizer_json, "texts": texts, "max_length": max_length})
    r = subprocess.run(["node", os.path.join(HERE, "hf_tokenize.mjs")], input=req.encode("utf-8"),
                       capture_output=True)
    if r.returncode != 0:
        sys.exit("ref_predict: tokenizer failed (run `npm install` in tools/):\n" + r.stderr.decode("utf-8", "replace"))
    return json.loads(r.stdout)["ids"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--ids-json")
    src.add_argument("--texts-json")
    ap.add_argument("--max-length", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    model, config = rr.load_pretrained(args.model)
    pad = config.pad_token_id
    mask = None
    if args.ids_json:
        data = _read_json(args.ids_json)
        if isinstance(data, dict):
            seqs = data["input_ids"]
            mask = data.get("attention_mask")
        else:
            seqs = data
    else:
        texts = _read_json(args.texts_json)
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            sys.exit("ref_predict: --texts-json must hold a JSON list of strings")
        tj = os.path.join(args.model, "tokenizer.json")
        if not os.path.exists(tj):
            tj = os.path.join(hf_io.TOKENIZER_ASSETS, "tokenizer.json")
        seqs = tokenize(texts, tj, args.max_length or config.max_position_embeddings - 2)
    if not seqs or not all(isinstance(s, list) and s for s in seqs):
        sys.exit("ref_predict: need a non-empty list of non-empty id lists")
    T = max(len(s) for s in seqs)
    if T > config.max_position_embeddings - 2:
        sys.exit(f"ref_predict: a sequence has {T} tokens; this model takes at most "
                 f"{config.max_position_embeddings - 2}")
    ids = torch.full((len(seqs), T), pad, dtype=torch.int64)
    m = torch.zeros((len(seqs), T), dtype=torch.int64)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.int64)
        m[i, :len(s)] = 1
    if mask is not None:
        m = torch.tensor(mask, dtype=torch.int64)
    with torch.inference_mode():
        logits = model(ids, m)[1]
    out = {"logits": logits.tolist(),
           "labels": [config.id2label[int(i)] for i in logits.argmax(-1)],
           "input_ids": [list(map(int, s)) for s in seqs]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
