#!/usr/bin/python3
"""Loss-curve goldens for the sentence-transformers training tasks (issue 31), from the PyTorch
reference (roberta_ref.py, transformers' modeling_roberta semantics). sentence-transformers is not
installed here, so its losses are transcribed:

  - embedding: losses/MultipleNegativesRankingLoss.py: reps = model(column) for each column
    ["sentence_embedding"]; scores = util.cos_sim(reps[0], cat(reps[1:])) * scale (20);
    CrossEntropyLoss(scores, arange(len(scores))). The model is tests/data/embed/st's
    Transformer (a bare RobertaModel) with mean Pooling (models/Pooling.py: sum(h * mask) /
    clamp(sum(mask), 1e-9)); its Dense module is left out (our trainer refuses one) and
    Normalize is a no-op before cos_sim. Odd steps carry a hard-negative column. The rows are
    encoded as ONE batch [anchors; positives; negatives] padded to the longest, as the engine
    batches them (ST encodes each column on its own; padding changes nothing but rounding).
    The last section: one MNRL batch's loss and gradients for every pooling mode
    (make_golden_embed.py's transcription of Pooling._forward_padded).
  - cross_encoder: cross_encoder/CrossEncoder.py fit with num_labels == 1: BCEWithLogitsLoss
    on logits.view(-1) against float labels in [0, 1]; tests/data/tiny's body with a new
    1-label head (the regression task's head draw, make_golden_tasks.py).

For each: 12 AdamW steps exactly as make_golden.py's adamw_steps (HF Trainer's update, dropout
off): losses, learning rates, gradient norms. Writes tests/data/tiny/sbert_train_golden.safetensors.
    /usr/bin/python3 tools/make_golden_sbert_train.py
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_io  # noqa: E402
import make_golden as mg  # noqa: E402
import make_golden_embed as mge  # noqa: E402
import roberta_ref as rr  # noqa: E402

FIXTURE_VERSION = "1"
STEPS = 12
TRAIN = dict(mg.TRAIN, steps=STEPS)
ANCHORS = 4
SCALE = 20.0
MODE_LENGTHS = [7, 12, 5, 9, 11, 6, 8, 4, 10]  # 3 anchors, 3 positives, 3 hard negatives


class MnrlModel(torch.nn.Module):
    """A SentenceTransformer (Transformer + mean Pooling) whose forward is the loss: `labels`
    is the number of anchors; rows [anchors; positives; (negatives)]."""

    def __init__(self, encoder):
        super().__init__()
        self.roberta = encoder

    def forward(self, ids, mask, labels):
        tok = self.roberta(ids, mask)
        m = mask.unsqueeze(-1).to(tok.dtype)
        emb = (tok * m).sum(dim=1) / torch.clamp(m.sum(dim=1), min=1e-9)
        a = int(labels)
        scores = F.normalize(emb[:a], p=2, dim=1) @ F.normalize(emb[a:], p=2, dim=1).t() * SCALE
        return F.cross_entropy(scores, torch.arange(a)), scores


def mnrl_batches(vocab):
    out = []
    for s in range(STEPS):
        cols = 3 if s % 2 == 1 else 2
        lens = torch.randint(TRAIN["min_len"], 21, (ANCHORS * cols,)).tolist()
        ids, mask = mg.pad_batch([mg.random_sequence(n, vocab) for n in lens])
        out.append((ids, mask, ANCHORS))
    return out


def main():
    torch.set_num_threads(1)
    torch.manual_seed(31)
    out = {}

    st_dir = os.path.join(hf_io.REPO_ROOT, "tests", "data", "embed", "st")
    config = rr.RobertaConfig.from_pretrained(st_dir)
    encoder = rr.RobertaModel(config)
    sd = {k: v.to(torch.float32) for k, v in hf_io.load_state_dict(st_dir).items() if not k.startswith("pooler.")}
    encoder.load_state_dict(sd)
    model = rr.no_dropout(MnrlModel(encoder)).train()
    data = mnrl_batches(config.vocab_size)
    for s, (ids, mask, a) in enumerate(data):
        out[f"embedding.train.{s}.input_ids"], out[f"embedding.train.{s}.attention_mask"] = ids, mask
        out[f"embedding.train.{s}.anchors"] = torch.tensor([a])
    losses, lrs, norms = mg.adamw_steps(model, mg.decay_groups(model, TRAIN["weight_decay"]),
                                        list(model.parameters()), data, TRAIN, bf16=False)
    out["embedding.losses"], out["embedding.lrs"] = torch.tensor(losses), torch.tensor(lrs)
    out["embedding.grad_norms"] = torch.tensor(norms)
    print("  embedding: losses", " ".join(f"{x:.4f}" for x in losses))

    tiny_dir = os.path.join(hf_io.REPO_ROOT, "tests", "data", "tiny")
    body, tcfg = rr.load_pretrained(tiny_dir)
    ce_config = rr.RobertaConfig.from_dict(dict(mg.TINY_CONFIG, problem_type="multi_label_classification",
                                                id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0}))
    ce = rr.RobertaForSequenceClassification(ce_config)
    mg.randomize_big(ce)
    ce.roberta.load_state_dict(body.roberta.state_dict())
    for n, p in ce.named_parameters():
        if not n.startswith("roberta."):
            out[f"cross_encoder.init.{n}"] = p.detach().clone()
    ce_data = []
    for s in range(STEPS):
        lens = torch.randint(TRAIN["min_len"], TRAIN["max_len"] + 1, (TRAIN["batch"],)).tolist()
        ids, mask = mg.pad_batch([mg.random_sequence(n, tcfg.vocab_size) for n in lens])
        labels = torch.rand(TRAIN["batch"], 1)
        labels[0, 0] = 1.0
        labels[1, 0] = 0.0
        ce_data.append((ids, mask, labels))
        out[f"cross_encoder.train.{s}.input_ids"], out[f"cross_encoder.train.{s}.attention_mask"] = ids, mask
        out[f"cross_encoder.train.{s}.targets"] = labels.reshape(-1)
    trained = rr.no_dropout(rr.clone_model(ce)).train()
    losses, lrs, norms = mg.adamw_steps(trained, mg.decay_groups(trained, TRAIN["weight_decay"]),
                                        list(trained.parameters()), ce_data, TRAIN, bf16=False)
    out["cross_encoder.losses"], out["cross_encoder.lrs"] = torch.tensor(losses), torch.tensor(lrs)
    out["cross_encoder.grad_norms"] = torch.tensor(norms)
    print("  cross_encoder: losses", " ".join(f"{x:.4f}" for x in losses))

    # Every pooling mode (make_golden_embed.pool: Pooling._forward_padded): one batch of 3
    # anchors, 3 positives and 3 hard negatives through the st encoder, train mode with dropout
    # 0: the loss and every parameter's gradient (the word embeddings' rows of the batch's ids).
    mids, mattn = mg.pad_batch([mg.random_sequence(n, config.vocab_size) for n in MODE_LENGTHS])
    out["modes.input_ids"], out["modes.attention_mask"] = mids, mattn
    used = torch.unique(mids)
    out["modes.wte_rows"] = used
    start = rr.RobertaModel(config)  # the folder's weights (`encoder` was trained above)
    start.load_state_dict(sd)
    for mode in mge.MODES:
        enc = rr.no_dropout(rr.clone_model(start)).train()
        enc.zero_grad(set_to_none=True)
        emb = mge.pool(mode, enc(mids, mattn), mattn)
        a = len(MODE_LENGTHS) // 3
        loss = F.cross_entropy(F.normalize(emb[:a], p=2, dim=1) @ F.normalize(emb[a:], p=2, dim=1).t() * SCALE,
                               torch.arange(a))
        loss.backward()
        out[f"modes.{mode}.loss"] = loss.detach().reshape(())
        for name, p in enc.named_parameters():
            g = p.grad.detach()
            out[f"modes.{mode}.grad.{name}"] = g[used] if name == "embeddings.word_embeddings.weight" else g
        print(f"  mode {mode}: loss {loss.item():.6f}")

    for k, v in out.items():
        if v.is_floating_point():
            out[k] = v.to(torch.float32).contiguous()
    meta = {
        "fixture_version": FIXTURE_VERSION, "generator": "tools/make_golden_sbert_train.py",
        "torch_version": torch.__version__, "seed": "31", "steps": str(STEPS), "scale": repr(SCALE),
        "lr": repr(TRAIN["lr"]), "beta1": repr(TRAIN["beta1"]), "beta2": repr(TRAIN["beta2"]),
        "eps": repr(TRAIN["eps"]), "weight_decay": repr(TRAIN["weight_decay"]),
        "warmup_steps": str(TRAIN["warmup_steps"]), "max_grad_norm": repr(TRAIN["max_grad_norm"]),
    }
    path = os.path.join(tiny_dir, "sbert_train_golden.safetensors")
    hf_io.write_safetensors(path, out, meta)
    print(f"make_golden_sbert_train: wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
