#!/usr/bin/python3
"""Goldens for the training heads other than single-label classification (issue 29), from the
PyTorch reference (roberta_ref.py, HF's modeling_roberta.py semantics):

  - multi_label: tests/data/tiny's classifier with problem_type multi_label_classification,
    BCEWithLogits on 0/1 targets (one row all zeros: an empty label list);
  - regression: a 1-label RobertaForSequenceClassification (the tiny body, a new head),
    problem_type regression, MSE;
  - token: RobertaForTokenClassification with 5 labels (the tiny body, a new head), labels -100
    on <s>, </s>, the padding and some tokens (the sub-tokens run_ner.py leaves out).

For each: the eval-mode logits of the first batch, then 12 AdamW steps exactly as
make_golden.py's (HF Trainer's update, dropout off): losses, learning rates, gradient norms,
and the head's parameters after them. New heads are stored ("<task>.init.<name>") since only
the body comes from tests/data/tiny. Writes tests/data/tiny/tasks_golden.safetensors.
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_io  # noqa: E402
import make_golden as mg  # noqa: E402
import roberta_ref as rr  # noqa: E402

FIXTURE_VERSION = "1"
STEPS = 12
TRAIN = dict(mg.TRAIN, steps=STEPS)
TOKEN_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def batches(config, make_targets):
    out = []
    for _ in range(STEPS):
        lens = torch.randint(TRAIN["min_len"], TRAIN["max_len"] + 1, (TRAIN["batch"],)).tolist()
        ids, mask = mg.pad_batch([mg.random_sequence(n, config.vocab_size) for n in lens])
        out.append((ids, mask, make_targets(ids, mask)))
    return out


def with_body(model, body):
    """model's encoder weights from body (the tiny checkpoint); its head stays as initialised."""
    model.roberta.load_state_dict(body.roberta.state_dict())
    return model


def run(name, model, data, out):
    model.eval()
    ids0, mask0, _ = data[0]
    with torch.no_grad():
        out[f"{name}.logits0"] = model(ids0, mask0)[1]
    for n, p in model.named_parameters():
        if not n.startswith("roberta."):
            out[f"{name}.init.{n}"] = p.detach().clone()
    for s, (ids, mask, t) in enumerate(data):
        out[f"{name}.train.{s}.input_ids"], out[f"{name}.train.{s}.attention_mask"] = ids, mask
        out[f"{name}.train.{s}.targets"] = t
    trained = rr.no_dropout(rr.clone_model(model)).train()
    losses, lrs, norms = mg.adamw_steps(trained, mg.decay_groups(trained, TRAIN["weight_decay"]),
                                        list(trained.parameters()), data, TRAIN, bf16=False)
    out[f"{name}.losses"] = torch.tensor(losses)
    out[f"{name}.lrs"] = torch.tensor(lrs)
    out[f"{name}.grad_norms"] = torch.tensor(norms)
    for n, p in trained.named_parameters():
        if not n.startswith("roberta."):
            out[f"{name}.final.{n}"] = p.detach().clone()
    print(f"  {name}: losses", " ".join(f"{x:.4f}" for x in losses))


def main():
    torch.set_num_threads(1)
    torch.manual_seed(29)
    tiny_dir = os.path.join(hf_io.REPO_ROOT, "tests", "data", "tiny")
    body, config = rr.load_pretrained(tiny_dir)
    out = {}

    # multi-label: the tiny classifier itself, BCE on multi-hot float targets
    ml_config = rr.RobertaConfig.from_dict(dict(mg.TINY_CONFIG, problem_type="multi_label_classification"))
    ml = rr.RobertaForSequenceClassification(ml_config, init=False)
    ml.load_state_dict(body.state_dict())

    def multi_hot(ids, mask):
        t = (torch.rand(ids.shape[0], 3) < 0.4).float()
        t[0] = 0.0  # an empty label list
        return t
    run("multi_label", ml, batches(config, multi_hot), out)

    # regression: one label, MSE (problem_type regression, as HF infers for num_labels == 1)
    rg_config = rr.RobertaConfig.from_dict(dict(mg.TINY_CONFIG, problem_type="regression",
                                                id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0}))
    rg = with_body(rr.RobertaForSequenceClassification(rg_config), body)
    mg.randomize_big(rg)  # the whole model is N(0, 0.1): reload the body after
    with_body(rg, body)
    run("regression", rg, batches(config, lambda ids, mask: torch.randn(ids.shape[0]) * 2.0), out)

    # token classification: 5 labels, -100 on specials, padding and ~25% of the other tokens
    tk_config = rr.RobertaConfig.from_dict(dict(
        mg.TINY_CONFIG, architectures=["RobertaForTokenClassification"], problem_type=None,
        id2label={str(i): l for i, l in enumerate(TOKEN_LABELS)}, label2id={l: i for i, l in enumerate(TOKEN_LABELS)}))
    tk = rr.RobertaForTokenClassification(tk_config)
    with torch.no_grad():
        tk.classifier.weight.normal_(0.0, 0.3)
        tk.classifier.bias.normal_(0.0, 0.1)
    with_body(tk, body)

    def token_labels(ids, mask):
        lab = torch.randint(0, len(TOKEN_LABELS), ids.shape)
        lab[torch.rand(ids.shape) < 0.25] = -100
        lab[mask == 0] = -100
        lab[:, 0] = -100
        lens = mask.sum(1)
        for b in range(ids.shape[0]):
            lab[b, lens[b] - 1] = -100
        return lab
    run("token", tk, batches(config, token_labels), out)

    for k, v in out.items():
        if v.is_floating_point():
            out[k] = v.to(torch.float32)
    meta = {
        "fixture_version": FIXTURE_VERSION,
        "generator": "tools/make_golden_tasks.py",
        "torch_version": torch.__version__,
        "seed": "29",
        "steps": str(STEPS),
        "lr": repr(TRAIN["lr"]), "beta1": repr(TRAIN["beta1"]), "beta2": repr(TRAIN["beta2"]),
        "eps": repr(TRAIN["eps"]), "weight_decay": repr(TRAIN["weight_decay"]),
        "warmup_steps": str(TRAIN["warmup_steps"]), "max_grad_norm": repr(TRAIN["max_grad_norm"]),
        "token_labels": ",".join(TOKEN_LABELS),
    }
    path = os.path.join(tiny_dir, "tasks_golden.safetensors")
    hf_io.write_safetensors(path, out, meta)
    print(f"make_golden_tasks: wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
