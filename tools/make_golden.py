"""Writes the tiny golden fixtures in tests/data/tiny/ from the trusted reference (tools/roberta_ref.py).

    /usr/bin/python3 tools/make_golden.py [--out tests/data/tiny]

Needs `npm install` in tools/ once (HF's Rust tokenizer, for the text-level goldens).
Deterministic: one thread, fixed seeds, fixed file layouts; running it twice gives
byte-identical files on the same machine kind (bits of matmul results depend on the CPU's
ISA and the BLAS build, so a different machine may differ in the last ulps).
What each tensor means is documented in tests/data/README.md.
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

FIXTURE_VERSION = "1"
PAD, BOS, EOS = 1, 0, 2

TINY_CONFIG = dict(
    architectures=["RobertaForSequenceClassification"],
    attention_probs_dropout_prob=0.1,
    bos_token_id=0,
    classifier_dropout=None,
    eos_token_id=2,
    hidden_act="gelu",
    hidden_dropout_prob=0.1,
    hidden_size=32,
    id2label={"0": "negative", "1": "neutral", "2": "positive"},
    initializer_range=0.02,
    intermediate_size=64,
    label2id={"negative": 0, "neutral": 1, "positive": 2},
    layer_norm_eps=1e-5,
    max_position_embeddings=130,
    model_type="roberta",
    num_attention_heads=4,
    num_hidden_layers=2,
    pad_token_id=1,
    position_embedding_type="absolute",
    problem_type="single_label_classification",
    torch_dtype="float32",
    type_vocab_size=1,
    use_cache=True,
    vocab_size=50265,
)

GOLDEN_LENGTHS = [3, 17, 64, 128, 9]
TRAIN = dict(steps=20, batch=4, min_len=5, max_len=40, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
             weight_decay=0.01, warmup_steps=2, max_grad_norm=1.0)
TEXT_MAX_LENGTH = 128  # max_position_embeddings - 2

TEXTS = [
    "Covid cases are increasing fast!",
    "I love this new phone 😍🔥🔥 best purchase ever!!! #blessed",
    "@user @user what do these '1/2 naked pics' have to do with anything? They're not even like that. ",
    "@user Wow,first Hugo Chavez and now Fidel Castro. Danny Glover, Michael Moore, Oliver Stone, and Sean Penn are running out of heroes. ",
    "I think I may be finally in with the in crowd #mannequinchallenge  #grads2014 @user ",
    "OH: “I had a blue penis while I was this” [playing with Google Earth VR] ",
    " leading space, tabs\tand\nnewlines, naïve café, 東京, ﬁ ligature",
    # > 128 tokens: must be truncated to 126 content tokens + <s> + </s>.
    " ".join(["The quick brown fox jumps over the lazy dog while the weather keeps changing unexpectedly."] * 12),
]


def randomize_big(model: torch.nn.Module, std: float = 0.1) -> None:
    """Larger-than-HF values so that every parameter visibly affects logits and gradients:
    weights and biases N(0, std), LayerNorm weight 1 + N(0, std), pad rows of word/position
    embeddings zero (as nn.Embedding(padding_idx) init leaves them)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, dtype=p.dtype) * std
            p.copy_(noise + 1.0 if name.endswith("LayerNorm.weight") else noise)
        model.roberta.embeddings.word_embeddings.weight[PAD].zero_()
        model.roberta.embeddings.position_embeddings.weight[PAD].zero_()


def random_sequence(length: int, vocab: int) -> list:
    """<s> + random ids in [3, vocab-1] + </s>, `length` tokens in all."""
    assert length >= 2
    body = torch.randint(3, vocab, (length - 2,)).tolist()
    return [BOS] + body + [EOS]


def pad_batch(seqs):
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), PAD, dtype=torch.int64)
    mask = torch.zeros((len(seqs), T), dtype=torch.int64)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.int64)
        mask[i, :len(s)] = 1
    return ids, mask


def decay_groups(model: torch.nn.Module, weight_decay: float):
    """HF Trainer: no weight decay for biases and LayerNorm weights."""
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (no_decay if ("bias" in n or "LayerNorm.weight" in n) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def linear_warmup_decay(warmup: int, total: int):
    """transformers.get_linear_schedule_with_warmup's lambda."""
    def f(step: int) -> float:
        if step < warmup:
            return float(step) / float(max(1, warmup))
        return max(0.0, float(total - step) / float(max(1, total - warmup)))
    return f


def adamw_steps(model, groups, clip_params, batches, train: dict, bf16: bool):
    """HF Trainer's update on `model` (dropout off), one step a batch: AdamW over `groups`, the
    linear warmup/decay schedule, clipping over `clip_params`. Returns (losses, lrs, grad_norms)
    before each update. Shared by the classifier (train_curve here) and MLM goldens."""
    opt = torch.optim.AdamW(groups, lr=train["lr"], betas=(train["beta1"], train["beta2"]), eps=train["eps"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear_warmup_decay(train["warmup_steps"], train["steps"]))
    losses, lrs, norms = [], [], []
    for ids, mask, labels in batches:
        lrs.append(opt.param_groups[0]["lr"])
        if bf16:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss, _ = model(ids, mask, labels=labels)
        else:
            loss, _ = model(ids, mask, labels=labels)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(clip_params, train["max_grad_norm"])
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        norms.append(float(norm))
    return losses, lrs, norms


def train_curve(model0, batches, bf16: bool):
    """20 AdamW steps with dropout off; returns (losses, lrs, grad_norms) before each update
    and the trained model."""
    model = rr.no_dropout(rr.clone_model(model0)).train()
    losses, lrs, norms = adamw_steps(model, decay_groups(model, TRAIN["weight_decay"]), list(model.parameters()),
                                     batches, TRAIN, bf16)
    return losses, lrs, norms, model


def tokenize(texts, max_length):
    tok_json = os.path.join(hf_io.TOKENIZER_ASSETS, "tokenizer.json")
    req = json.dumps({"tokenizer": tok_json, "texts": texts, "max_length": max_length})
    try:
        out = subprocess.run(["node", os.path.join(HERE, "hf_tokenize.mjs")], input=req.encode("utf-8"),
                             capture_output=True, check=True)
    except subprocess.CalledProcessError as e:
        sys.exit("make_golden: node tools/hf_tokenize.mjs failed (run `npm install` in tools/ first):\n"
                 + e.stderr.decode("utf-8", "replace"))
    return json.loads(out.stdout)["ids"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(hf_io.REPO_ROOT, "tests", "data", "tiny"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    torch.set_num_threads(1)  # bit-reproducible reductions
    torch.manual_seed(0)

    config = rr.RobertaConfig.from_dict(TINY_CONFIG)
    model = rr.RobertaForSequenceClassification(config)
    randomize_big(model)
    model.eval()

    # ---- checkpoint files
    sd = rr.hf_state_dict(model)
    hf_io.write_config(os.path.join(args.out, "config.json"), config.to_dict())
    hf_io.write_safetensors(os.path.join(args.out, "model.safetensors"), sd, {"format": "pt"})
    hf_io.save_torch_bin(os.path.join(args.out, "pytorch_model.bin"), rr.hf_bin_state_dict(model))
    hf_io.copy_tokenizer_files(args.out)

    # ---- data (drawn after the weights, in a fixed order)
    golden_seqs = [random_sequence(n, config.vocab_size) for n in GOLDEN_LENGTHS]
    golden_labels = torch.randint(0, config.num_labels, (len(golden_seqs),))
    train_batches = []
    for _ in range(TRAIN["steps"]):
        lens = torch.randint(TRAIN["min_len"], TRAIN["max_len"] + 1, (TRAIN["batch"],)).tolist()
        ids, mask = pad_batch([random_sequence(n, config.vocab_size) for n in lens])
        labels = torch.randint(0, config.num_labels, (TRAIN["batch"],))
        train_batches.append((ids, mask, labels))

    out = {}
    ids, mask = pad_batch(golden_seqs)
    out["input_ids"], out["attention_mask"], out["labels"] = ids, mask, golden_labels
    with torch.no_grad():
        out["logits"] = model(ids, mask)[1]
        out["logits_alone"] = torch.cat([model(torch.tensor([s]))[1] for s in golden_seqs])
    diff_alone = (out["logits"] - out["logits_alone"]).abs().max().item()
    assert diff_alone < 1e-4, f"padded vs alone logits differ by {diff_alone}"

    # loss and gradients: train mode with every dropout p = 0
    gm = rr.no_dropout(rr.clone_model(model)).train()
    loss, _ = gm(ids, mask, labels=golden_labels)
    loss.backward()
    out["loss"] = loss.detach().reshape(())
    for n, p in gm.named_parameters():
        assert p.grad is not None, n
        out["grad." + n] = p.grad.detach().clone()
    dead = [n for n, p in gm.named_parameters() if p.grad.abs().max().item() == 0.0]
    assert not dead, f"parameters with all-zero gradient: {dead}"

    # training curves
    for s, (tids, tmask, tlabels) in enumerate(train_batches):
        out[f"train.{s}.input_ids"], out[f"train.{s}.attention_mask"], out[f"train.{s}.labels"] = tids, tmask, tlabels
    losses, lrs, norms, trained = train_curve(model, train_batches, bf16=False)
    out["train_losses_fp32"] = torch.tensor(losses, dtype=torch.float32)
    out["train_lrs"] = torch.tensor(lrs, dtype=torch.float32)
    out["train_grad_norms"] = torch.tensor(norms, dtype=torch.float32)
    # Parameters after the 20 steps: the loss curve alone barely sees weight decay (dropping it
    # moves the losses by ~2e-5), the parameters see it clearly. The word embedding is stored
    # only at the rows in train_final_word_rows (every id the batches use, plus ids 3..7 which
    # no batch uses, whose rows only decay) to keep the fixture small.
    word = "roberta.embeddings.word_embeddings.weight"
    used = torch.unique(torch.cat([b[0].flatten() for b in train_batches]))
    unused = torch.tensor([i for i in range(3, 8) if i not in set(used.tolist())], dtype=torch.int64)
    rows = torch.sort(torch.cat([used, unused])).values
    out["train_final_word_rows"] = rows
    for n, p in trained.named_parameters():
        out["train_final." + n] = (p.detach()[rows] if n == word else p.detach()).clone()
    losses_bf16, _, _, _ = train_curve(model, train_batches, bf16=True)
    out["train_losses_bf16"] = torch.tensor(losses_bf16, dtype=torch.float32)

    # text-level goldens
    text_ids = tokenize(TEXTS, TEXT_MAX_LENGTH)
    assert max(len(t) for t in text_ids) == TEXT_MAX_LENGTH, "the long text must hit truncation"
    tids, tmask = pad_batch(text_ids)
    out["text_ids"], out["text_attention_mask"] = tids, tmask
    with torch.no_grad():
        out["text_logits"] = model(tids, tmask)[1]

    for k, v in out.items():
        if v.is_floating_point():
            out[k] = v.to(torch.float32)
    meta = {
        "fixture_version": FIXTURE_VERSION,
        "generator": "tools/make_golden.py",
        "torch_version": torch.__version__,
        "seed": "0",
        "init": "weights and biases N(0,0.1); LayerNorm weight 1+N(0,0.1), bias N(0,0.1); pad rows 0",
        "golden_lengths": json.dumps(GOLDEN_LENGTHS),
        "loss": "mean cross-entropy, train mode, every dropout p=0",
        "optimizer": "torch.optim.AdamW",
        "lr": repr(TRAIN["lr"]), "beta1": repr(TRAIN["beta1"]), "beta2": repr(TRAIN["beta2"]),
        "eps": repr(TRAIN["eps"]), "weight_decay": repr(TRAIN["weight_decay"]),
        "no_decay": "names containing 'bias' or 'LayerNorm.weight'",
        "schedule": "linear warmup then linear decay to 0 (get_linear_schedule_with_warmup)",
        "warmup_steps": str(TRAIN["warmup_steps"]), "train_steps": str(TRAIN["steps"]),
        "max_grad_norm": repr(TRAIN["max_grad_norm"]),
        "train_batch": str(TRAIN["batch"]),
        "train_lengths": f"uniform {TRAIN['min_len']}..{TRAIN['max_len']}, dynamic padding to the batch's longest",
        "bf16": "torch.autocast('cpu', dtype=torch.bfloat16) around forward+loss; fp32 weights and AdamW",
        "texts": json.dumps(TEXTS, ensure_ascii=False),
        "text_max_length": str(TEXT_MAX_LENGTH),
        "tokenizer": "HF tokenizers 0.22 via npm @anush008/tokenizers 0.6.0, assets/tokenizer/roberta-base/tokenizer.json",
    }
    hf_io.write_safetensors(os.path.join(args.out, "golden.safetensors"), out, meta)

    print(f"make_golden: wrote {args.out}")
    print(f"  logits vs alone max|diff| = {diff_alone:.3g}; loss = {out['loss'].item():.6f}")
    print("  train_losses_fp32 =", " ".join(f"{x:.4f}" for x in losses))
    print("  train_losses_bf16 =", " ".join(f"{x:.4f}" for x in losses_bf16))
    print("  train_grad_norms  =", " ".join(f"{x:.3f}" for x in norms))
    print("  text lengths      =", [len(t) for t in text_ids])


if __name__ == "__main__":
    main()
