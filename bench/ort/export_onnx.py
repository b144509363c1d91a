"""Exports the reference RoBERTa classifier (tools/roberta_ref.py) to ONNX for the ONNX Runtime runner.

    /usr/bin/python3 bench/ort/export_onnx.py --model HF_DIR --out model.onnx

Eval mode, inputs `input_ids` and `attention_mask` (int64, [batch, sequence], both axes
dynamic), output `logits` (float32, [batch, num_labels]); opset 14. Needs only Debian's
python3-torch: torch.onnx.export serializes with torch's own bundled ONNX protobuf code, the
`onnx` Python package is not required (checked on torch 1.13).

Also writes OUT.check.json: a small padded batch (different shape from the export's trace
sample, with padding) and the reference's logits for it, which `node bench_ort.mjs --check`
compares ONNX Runtime against.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools"))
import roberta_ref as rr  # noqa: E402


class LogitsOnly(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids, attention_mask)[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--opset", type=int, default=14)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, config = rr.load_pretrained(args.model)
    wrapped = LogitsOnly(model).eval()

    g = torch.Generator().manual_seed(0)
    sample = torch.randint(3, config.vocab_size, (2, 8), generator=g)
    sample[:, 0], sample[:, -1] = config.bos_token_id, config.eos_token_id
    with torch.no_grad():
        torch.onnx.export(wrapped, (sample, torch.ones_like(sample)), args.out,
                          input_names=["input_ids", "attention_mask"], output_names=["logits"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                        "attention_mask": {0: "batch", 1: "sequence"},
                                        "logits": {0: "batch"}},
                          opset_version=args.opset, do_constant_folding=True)

    # check batch: 3 rows, lengths 13, 5, 2 (padded), a shape the trace never saw
    lens = [13, 5, 2]
    T = max(lens)
    ids = torch.full((len(lens), T), config.pad_token_id, dtype=torch.int64)
    mask = torch.zeros_like(ids)
    for i, n in enumerate(lens):
        ids[i, :n] = torch.randint(3, config.vocab_size, (n,), generator=g)
        ids[i, 0], ids[i, n - 1] = config.bos_token_id, config.eos_token_id
        mask[i, :n] = 1
    with torch.no_grad():
        logits = wrapped(ids, mask)
    with open(args.out + ".check.json", "w") as f:
        json.dump({"input_ids": ids.tolist(), "attention_mask": mask.tolist(), "logits": logits.tolist()}, f)
    print(f"export_onnx: {args.model} -> {args.out} ({os.path.getsize(args.out) / 1e6:.1f} MB), "
          f"check batch -> {args.out}.check.json")


if __name__ == "__main__":
    main()
