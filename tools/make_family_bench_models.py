#!/usr/bin/python3
"""Same-size random checkpoints of each family for bench/families.sh (issue 30's goal: every
family's training and serving speed within 5% of RoBERTa's at the same size). One body shape
for all: LAYERS x HIDDEN, the roberta-base vocabulary size and 514 positions; each family's
own graph and names (make_golden_families.py's configs, transformers' classes as
roberta_ref.py transcribes them), a 3-label sequence classifier. Weights are random: only
speed is measured.

Usage: /usr/bin/python3 tools/make_family_bench_models.py OUT_DIR [LAYERS] [HIDDEN]
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_io  # noqa: E402
import make_golden_families as mgf  # noqa: E402
import roberta_ref as rr  # noqa: E402


def main():
    out = sys.argv[1]
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    hidden = int(sys.argv[3]) if len(sys.argv) > 3 else 768
    mgf.VOCAB = 50265
    mgf.SIZES.update(hidden=hidden, layers=layers, heads=hidden // 64, intermediate=4 * hidden, max_pos=514)
    torch.manual_seed(0)
    for family in ("roberta", "bert", "distilbert"):
        if family == "roberta":
            config = mgf.roberta_like_config("roberta", "Roberta", "seq")
            config.pad_token_id = 1
        else:
            config = mgf.make_config(family, "seq")
        model = mgf.MODELS.get((family, "seq"), rr.RobertaForSequenceClassification)(config)
        sd = {n: p.detach().clone() for n, p in rr.hf_saved_parameters(model)}
        d = os.path.join(out, family)
        os.makedirs(d, exist_ok=True)
        hf_io.write_config(os.path.join(d, "config.json"), config.to_dict())
        hf_io.write_safetensors(os.path.join(d, "model.safetensors"), sd, {"format": "pt"})
        print(d, sum(p.numel() for p in sd.values()), "parameters")


if __name__ == "__main__":
    main()
