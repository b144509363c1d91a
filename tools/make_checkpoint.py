"""Writes a random Hugging Face-layout RoBERTa sequence classifier (HF init) for slow tests and benchmarks.

    /usr/bin/python3 tools/make_checkpoint.py --size base --out /tmp/rb-base [--format safetensors|bin|both]
        [--seed 0] [--labels negative,neutral,positive]

Sizes (all with the full roberta-base vocabulary, 50265, and roberta-base's real config
values: max_position_embeddings 514, type_vocab_size 1, layer_norm_eps 1e-5):
  base   12 layers, hidden 768, 12 heads, FFN 3072   (124.6 M parameters with 3 labels)
  small   4 layers, hidden 256,  4 heads, FFN 1024
  tiny    2 layers, hidden  32,  4 heads, FFN   64
Weights follow HF's _init_weights (N(0, 0.02), zero biases, LayerNorm 1/0, zero pad rows), so
activations have realistic magnitudes. The folder also gets vocab.json, merges.txt and
tokenizer.json from assets/tokenizer/roberta-base/. Not committed anywhere: regenerate.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_io  # noqa: E402
import roberta_ref as rr  # noqa: E402

SIZES = {
    "base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072),
    "small": dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024),
    "tiny": dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=64),
}


def make_config(size: str, labels) -> rr.RobertaConfig:
    d = dict(SIZES[size])
    d.update(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5,
             architectures=["RobertaForSequenceClassification"], model_type="roberta", torch_dtype="float32",
             id2label={str(i): l for i, l in enumerate(labels)}, label2id={l: i for i, l in enumerate(labels)},
             problem_type="single_label_classification" if len(labels) > 1 else "regression")
    return rr.RobertaConfig.from_dict(d)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=sorted(SIZES), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--format", choices=["safetensors", "bin", "both"], default="safetensors")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--labels", default="negative,neutral,positive")
    args = ap.parse_args()
    labels = [l for l in args.labels.split(",") if l]
    if not labels or len(set(labels)) != len(labels):
        ap.error(f"--labels must be distinct non-empty names, got {args.labels!r}")

    torch.manual_seed(args.seed)
    config = make_config(args.size, labels)
    model = rr.RobertaForSequenceClassification(config)  # HF init
    os.makedirs(args.out, exist_ok=True)
    hf_io.write_config(os.path.join(args.out, "config.json"), config.to_dict())
    sd = rr.hf_state_dict(model)
    if args.format in ("safetensors", "both"):
        hf_io.write_safetensors(os.path.join(args.out, "model.safetensors"), sd, {"format": "pt"})
    if args.format in ("bin", "both"):
        hf_io.save_torch_bin(os.path.join(args.out, "pytorch_model.bin"), rr.hf_bin_state_dict(model))
    hf_io.copy_tokenizer_files(args.out, with_tokenizer_json=True)
    n = sum(v.numel() for v in sd.values())
    print(f"make_checkpoint: {args.size} ({n / 1e6:.1f} M parameters, {len(labels)} labels) -> {args.out}")


if __name__ == "__main__":
    main()
