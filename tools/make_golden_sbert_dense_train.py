#!/usr/bin/python3
"""Loss-curve golden for training a sentence-transformers model WITH Dense modules (issue 31):
MultipleNegativesRankingLoss through Transformer -> mean Pooling -> Dense -> Dense, from the
PyTorch reference (roberta_ref.py; sentence-transformers is not installed here, so its modules
are transcribed):

  - models/Dense.py: forward = activation_function(linear(sentence_embedding)), linear an
    nn.Linear(in_features, out_features, bias); the state_dict keys linear.weight, linear.bias.
    The first is tests/data/embed/st/2_Dense (Tanh, 16 -> 8, with bias); the second a Dense
    drawn here (GELU, 8 -> 6, bias=False), so a chain, another activation and a bias-less
    layer are trained too.
  - losses/MultipleNegativesRankingLoss.py: scores = util.cos_sim(anchors, cat(candidates)) *
    20, CrossEntropyLoss against arange (make_golden_sbert_train.py's MnrlModel, with the Dense
    modules after the pooling).
  - HF Trainer's update (make_golden.py adamw_steps): AdamW, linear warmup/decay, clip_grad_norm_
    over every parameter (the encoder's AND the Dense modules'), no weight decay on biases
    (decay_groups: "bias" in the name), dropout off.

12 steps, odd ones with a hard-negative column. Writes the batches, the losses, learning rates
and gradient norms of each step, the second Dense's initial weight, and both Dense modules'
weights after the last step to tests/data/tiny/sbert_dense_train_golden.safetensors.
    /usr/bin/python3 tools/make_golden_sbert_dense_train.py
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_io  # noqa: E402
import make_golden as mg  # noqa: E402
import make_golden_sbert_train as sbt  # noqa: E402
import roberta_ref as rr  # noqa: E402

FIXTURE_VERSION = "1"


class Dense(torch.nn.Module):
    """sentence_transformers/models/Dense.py's forward."""

    def __init__(self, in_features, out_features, bias, activation):
        super().__init__()
        self.linear = torch.nn.Linear(in_features, out_features, bias=bias)
        self.activation_function = activation

    def forward(self, x):
        return self.activation_function(self.linear(x))


class MnrlDenseModel(torch.nn.Module):
    """Transformer + mean Pooling + Dense modules; forward is the loss (`labels`: the anchors)."""

    def __init__(self, encoder, dense):
        super().__init__()
        self.roberta = encoder
        self.dense = torch.nn.ModuleList(dense)

    def forward(self, ids, mask, labels):
        tok = self.roberta(ids, mask)
        m = mask.unsqueeze(-1).to(tok.dtype)
        emb = (tok * m).sum(dim=1) / torch.clamp(m.sum(dim=1), min=1e-9)
        for d in self.dense:
            emb = d(emb)
        a = int(labels)
        scores = F.normalize(emb[:a], p=2, dim=1) @ F.normalize(emb[a:], p=2, dim=1).t() * sbt.SCALE
        return F.cross_entropy(scores, torch.arange(a)), scores


def main():
    torch.set_num_threads(1)
    torch.manual_seed(3131)
    out = {}
    st_dir = os.path.join(hf_io.REPO_ROOT, "tests", "data", "embed", "st")
    config = rr.RobertaConfig.from_pretrained(st_dir)
    encoder = rr.RobertaModel(config)
    sd = {k: v.to(torch.float32) for k, v in hf_io.load_state_dict(st_dir).items() if not k.startswith("pooler.")}
    encoder.load_state_dict(sd)
    dense_dir = os.path.join(st_dir, "2_Dense")
    d1 = Dense(16, 8, True, torch.nn.Tanh())
    d1.load_state_dict({k: v.to(torch.float32) for k, v in hf_io.load_state_dict(dense_dir).items()})
    d2 = Dense(8, 6, False, torch.nn.GELU())
    with torch.no_grad():
        d2.linear.weight.copy_(torch.randn(6, 8) * 0.5)
    out["dense2.init.linear.weight"] = d2.linear.weight.detach().clone()
    model = rr.no_dropout(MnrlDenseModel(encoder, [d1, d2])).train()
    data = sbt.mnrl_batches(config.vocab_size)
    for s, (ids, mask, a) in enumerate(data):
        out[f"train.{s}.input_ids"], out[f"train.{s}.attention_mask"] = ids, mask
        out[f"train.{s}.anchors"] = torch.tensor([a])
    losses, lrs, norms = mg.adamw_steps(model, mg.decay_groups(model, sbt.TRAIN["weight_decay"]),
                                        list(model.parameters()), data, sbt.TRAIN, bf16=False)
    out["losses"], out["lrs"], out["grad_norms"] = torch.tensor(losses), torch.tensor(lrs), torch.tensor(norms)
    for i, d in enumerate(model.dense):
        for n, p in d.named_parameters():
            out[f"dense{i + 1}.final.{n}"] = p.detach().clone()
    print("  embedding + Dense: losses", " ".join(f"{x:.4f}" for x in losses))
    print("  grad norms", " ".join(f"{x:.4f}" for x in norms))

    for k, v in out.items():
        if v.is_floating_point():
            out[k] = v.to(torch.float32).contiguous()
    t = sbt.TRAIN
    meta = {
        "fixture_version": FIXTURE_VERSION, "generator": "tools/make_golden_sbert_dense_train.py",
        "torch_version": torch.__version__, "seed": "3131", "steps": str(sbt.STEPS), "scale": repr(sbt.SCALE),
        "lr": repr(t["lr"]), "beta1": repr(t["beta1"]), "beta2": repr(t["beta2"]), "eps": repr(t["eps"]),
        "weight_decay": repr(t["weight_decay"]), "warmup_steps": str(t["warmup_steps"]),
        "max_grad_norm": repr(t["max_grad_norm"]),
    }
    path = os.path.join(hf_io.REPO_ROOT, "tests", "data", "tiny", "sbert_dense_train_golden.safetensors")
    hf_io.write_safetensors(path, out, meta)
    print(f"make_golden_sbert_dense_train: wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
