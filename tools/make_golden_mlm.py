"""Writes the masked-LM golden fixtures in tests/data/mlm_tiny/ from the trusted reference
(tools/roberta_ref.py RobertaForMaskedLM, transformers' modeling_roberta semantics).

    /usr/bin/python3 tools/make_golden_mlm.py [--out tests/data/mlm_tiny]

The same tiny shape as tests/data/tiny (make_golden.py) with a RobertaForMaskedLM head.
Deterministic: one thread, fixed seeds. What each tensor means: tests/data/README.md.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_io  # noqa: E402
import make_golden as mg  # noqa: E402
import roberta_ref as rr  # noqa: E402

FIXTURE_VERSION = "1"
# A 1,000-token vocabulary keeps the fixture small (the decoder's gradient is dense over it);
# the id of <mask> is its last.
CONFIG = dict(mg.TINY_CONFIG)
CONFIG["architectures"] = ["RobertaForMaskedLM"]
CONFIG["vocab_size"] = 1000
MASK = CONFIG["vocab_size"] - 1
for k in ("id2label", "label2id", "problem_type"):
    CONFIG.pop(k, None)
TRAIN = dict(mg.TRAIN)


def randomize_big(model: rr.RobertaForMaskedLM, std: float = 0.1) -> None:
    with torch.no_grad():
        for name, p in model.hf_named_parameters():
            noise = torch.randn(p.shape, dtype=p.dtype) * std
            layer_norm = name.endswith("LayerNorm.weight") or name.endswith("layer_norm.weight")
            p.copy_(noise + 1.0 if layer_norm else noise)
        model.roberta.embeddings.word_embeddings.weight[mg.PAD].zero_()
        model.roberta.embeddings.position_embeddings.weight[mg.PAD].zero_()


def mask(ids: torch.Tensor, attn: torch.Tensor):
    """DataCollatorForLanguageModeling's rule with torch's RNG (the C++ collator has its own
    stream; these tests feed the SAME masked inputs and labels to both): 15% of the real,
    non-special tokens chosen (at least one per row), 80% <mask>, 10% random, 10% kept."""
    special = (ids == mg.BOS) | (ids == mg.EOS) | (ids == mg.PAD) | (attn == 0)
    chosen = (torch.rand(ids.shape) < 0.15) & ~special
    for b in range(ids.shape[0]):
        if not chosen[b].any():
            cand = (~special[b]).nonzero().flatten()
            chosen[b, cand[torch.randint(0, len(cand), (1,))]] = True
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    inputs = ids.clone()
    replace = (torch.rand(ids.shape) < 0.8) & chosen
    inputs[replace] = MASK
    rnd = (torch.rand(ids.shape) < 0.5) & chosen & ~replace
    inputs[rnd] = torch.randint(3, MASK, ids.shape)[rnd]
    return inputs, labels


def decay_groups(model: rr.RobertaForMaskedLM, weight_decay: float):
    """HF Trainer: no decay for biases and LayerNorm modules' weights (lm_head.layer_norm too)."""
    decay, no_decay = [], []
    for n, p in model.hf_named_parameters():
        nd = "bias" in n or n.endswith("LayerNorm.weight") or n.endswith("layer_norm.weight")
        (no_decay if nd else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def train_curve(model0, batches, bf16: bool):
    model = rr.no_dropout(rr.clone_model(model0)).train()
    assert model.lm_head.decoder.weight is model.roberta.embeddings.word_embeddings.weight
    # Clipping over the HF parameter list: the tied decoder weight counted once.
    losses, _, norms = mg.adamw_steps(model, decay_groups(model, TRAIN["weight_decay"]),
                                      [p for _, p in model.hf_named_parameters()], batches, TRAIN, bf16)
    return losses, norms, model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(hf_io.REPO_ROOT, "tests", "data", "mlm_tiny"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(1)

    config = rr.RobertaConfig.from_dict(CONFIG)
    model = rr.RobertaForMaskedLM(config)
    randomize_big(model)
    model.eval()
    sd = {n: p.detach().clone() for n, p in model.hf_named_parameters()}  # as HF's safetensors save
    hf_io.write_config(os.path.join(args.out, "config.json"), config.to_dict())
    hf_io.write_safetensors(os.path.join(args.out, "model.safetensors"), sd, {"format": "pt"})

    out = {}
    ids, attn = mg.pad_batch([mg.random_sequence(n, config.vocab_size) for n in mg.GOLDEN_LENGTHS])
    inputs, labels = mask(ids, attn)
    out["input_ids"], out["attention_mask"], out["labels"] = inputs, attn, labels
    gm = rr.no_dropout(rr.clone_model(model)).train()
    loss, logits = gm(inputs, attn, labels=labels)
    loss.backward()
    out["loss"] = loss.detach().reshape(())
    sel = labels != -100
    out["masked_logits"] = logits.detach()[sel]  # (masked positions in row-major order, V)
    out["mask_id"] = torch.tensor([MASK])
    for n, p in gm.hf_named_parameters():
        assert p.grad is not None and p.grad.abs().max().item() > 0, n
        out["grad." + n] = p.grad.detach().clone()

    batches = []
    for _ in range(TRAIN["steps"]):
        lens = torch.randint(TRAIN["min_len"], TRAIN["max_len"] + 1, (TRAIN["batch"],)).tolist()
        tids, tattn = mg.pad_batch([mg.random_sequence(n, config.vocab_size) for n in lens])
        tin, tlab = mask(tids, tattn)
        batches.append((tin, tattn, tlab))
    for s, (a, b, c) in enumerate(batches):
        out[f"train.{s}.input_ids"], out[f"train.{s}.attention_mask"], out[f"train.{s}.labels"] = a, b, c
    losses, norms, _ = train_curve(model, batches, bf16=False)
    out["train_losses_fp32"] = torch.tensor(losses)
    out["train_grad_norms"] = torch.tensor(norms)
    losses_bf16, _, _ = train_curve(model, batches, bf16=True)
    out["train_losses_bf16"] = torch.tensor(losses_bf16)
    for k, v in out.items():
        if v.is_floating_point():
            out[k] = v.to(torch.float32)
    meta = {"fixture_version": FIXTURE_VERSION, "generator": "tools/make_golden_mlm.py",
            "torch_version": torch.__version__, "seed": "1",
            "loss": "RobertaForMaskedLM: mean cross-entropy over labels != -100, train mode, dropout p=0",
            "train": repr(TRAIN), "no_decay": "biases, LayerNorm and lm_head.layer_norm weights"}
    hf_io.write_safetensors(os.path.join(args.out, "golden.safetensors"), out, meta)
    print(f"make_golden_mlm: wrote {args.out}; loss = {out['loss'].item():.6f}; masked = {int(sel.sum())}")
    print("  train_losses_fp32 =", " ".join(f"{x:.4f}" for x in losses))
    print("  train_losses_bf16 =", " ".join(f"{x:.4f}" for x in losses_bf16))


if __name__ == "__main__":
    main()
