"""Writes tests/data/embed/: a tiny random sentence-transformers folder and the golden
embeddings of the PyTorch reference.

    /usr/bin/python3 tools/make_golden_embed.py [--out tests/data/embed]

The encoder is tools/roberta_ref.py's RobertaModel (transformers' modeling_roberta semantics).
sentence-transformers is not installed here, so its modules are transcribed below from
UKPLab/sentence-transformers:
  - sentence_transformers/models/Pooling.py (v5, Pooling._forward_padded and
    _exclude_prompt_from_mask): cls, max, mean, mean_sqrt_len_tokens, weightedmean, lasttoken;
  - sentence_transformers/models/Dense.py: activation(nn.Linear(x)), Tanh by default;
  - sentence_transformers/models/Normalize.py: F.normalize(x, p=2, dim=1);
  - SentenceTransformer._get_prompt_length: the prompt's ids (with specials) minus the </s>;
MultipleNegativesRankingLoss (losses/MultipleNegativesRankingLoss.py, scale 20, cos_sim);
and SPLADE's pooling (TEI's splade: max over tokens of log(1 + relu(MLM logits))) on
tests/data/mlm_tiny's RobertaForMaskedLM.
The folder is the layout SentenceTransformer.save writes: modules.json, sentence_bert_config.json,
config_sentence_transformers.json, the Transformer's files at the root (a bare RobertaModel:
keys without "roberta.", with a pooler that embeddings do not use), 1_Pooling/config.json,
2_Dense/{config.json, model.safetensors}; Normalize (3_Normalize) has no files.
Deterministic: one thread, fixed seed. See tests/data/README.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_io  # noqa: E402
import make_golden as mg  # noqa: E402
import roberta_ref as rr  # noqa: E402

FIXTURE_VERSION = "1"
CONFIG = dict(mg.TINY_CONFIG)
CONFIG.update(architectures=["RobertaModel"], hidden_size=16, intermediate_size=32, num_attention_heads=4)
for k in ("id2label", "label2id", "problem_type"):
    CONFIG.pop(k, None)
DENSE_OUT = 8
MAX_SEQ_LENGTH = 64
LENGTHS = [3, 17, 64, 9, 30]
PROMPT_TOKENS = 4  # include_prompt=False goldens: the first 4 positions excluded
SPLADE_LENGTHS = [6, 13]
MNRL_LENGTHS = [7, 12, 5, 9, 11, 6, 8, 4, 10]  # 3 anchors, 3 positives, 3 hard negatives
MNRL_SCALE = 20.0
MODES = ["cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"]


def exclude_prompt(mask: torch.Tensor, prompt_length: int) -> torch.Tensor:
    """Pooling._exclude_prompt_from_mask (right padding: the first prompt_length positions)."""
    mask = mask.clone()
    mask[:, :prompt_length] = 0
    return mask


def pool(mode: str, tok: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Pooling._forward_padded for one mode (token_weights_sum absent)."""
    if mode == "cls":
        first = mask.to(torch.int).argmax(dim=1)
        idx = first.unsqueeze(-1).unsqueeze(1).expand(-1, 1, tok.shape[-1])
        return torch.gather(tok, 1, idx).squeeze(1)
    m = mask.unsqueeze(-1).expand_as(tok).to(tok.dtype)
    if mode == "max":
        return tok.masked_fill(m == 0, float("-inf")).max(dim=1).values
    if mode in ("mean", "mean_sqrt_len_tokens"):
        s = (tok * m).sum(dim=1)
        n = torch.clamp(m.sum(dim=1), min=1e-9)
        return s / n if mode == "mean" else s / torch.sqrt(n)
    if mode == "weightedmean":
        w = torch.arange(1, tok.shape[1] + 1).unsqueeze(0).unsqueeze(-1).expand_as(tok).to(tok.dtype)
        wm = m * w
        return (tok * wm).sum(dim=1) / torch.clamp(wm.sum(dim=1), min=1e-9)
    if mode == "lasttoken":
        bs, seq_len, hd = tok.shape
        values, indices = mask.flip(1).max(1)
        indices = torch.where(values == 0, seq_len - 1, indices)
        idx = (seq_len - indices - 1).unsqueeze(-1).unsqueeze(1).expand(-1, 1, hd)
        return torch.gather(tok * m, 1, idx).squeeze(dim=1)
    raise ValueError(mode)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(hf_io.REPO_ROOT, "tests", "data", "embed"))
    args = ap.parse_args()
    st = os.path.join(args.out, "st")
    for d in (st, os.path.join(st, "1_Pooling"), os.path.join(st, "2_Dense")):
        os.makedirs(d, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(3)

    config = rr.RobertaConfig.from_dict(CONFIG)
    model = rr.RobertaModel(config)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape) * 0.1
            p.copy_(noise + 1.0 if name.endswith("LayerNorm.weight") else noise)
        model.embeddings.word_embeddings.weight[mg.PAD].zero_()
        model.embeddings.position_embeddings.weight[mg.PAD].zero_()
        # The word embeddings are stored in BF16 (half the file; a mixed-dtype load): the
        # reference computes with the same rounded values.
        wte = model.embeddings.word_embeddings.weight
        wte.copy_(wte.to(torch.bfloat16).to(torch.float32))
    model.eval()
    sd = {n: p.detach().clone() for n, p in model.named_parameters()}  # bare RobertaModel keys
    sd["embeddings.word_embeddings.weight"] = sd["embeddings.word_embeddings.weight"].to(torch.bfloat16)
    C = config.hidden_size
    sd["pooler.dense.weight"] = torch.randn(C, C) * 0.1  # RobertaModel's pooler: unused by embeddings
    sd["pooler.dense.bias"] = torch.randn(C) * 0.1
    hf_io.write_config(os.path.join(st, "config.json"), config.to_dict())
    hf_io.write_safetensors(os.path.join(st, "model.safetensors"), sd, {"format": "pt"})
    hf_io.copy_tokenizer_files(st)

    dense = torch.nn.Linear(C, DENSE_OUT)
    with torch.no_grad():
        dense.weight.copy_(torch.randn(DENSE_OUT, C) * 0.3)
        dense.bias.copy_(torch.randn(DENSE_OUT) * 0.1)
    hf_io.write_safetensors(os.path.join(st, "2_Dense", "model.safetensors"),
                            {"linear.weight": dense.weight.detach(), "linear.bias": dense.bias.detach()},
                            {"format": "pt"})

    def write_json(rel, obj):
        with open(os.path.join(st, rel), "w", encoding="utf-8") as f:
            f.write(json.dumps(obj, indent=2) + "\n")

    write_json("modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
        {"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"},
    ])
    write_json("sentence_bert_config.json", {"max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": False})
    write_json("config_sentence_transformers.json", {
        "__version__": {"sentence_transformers": "3.0.1", "transformers": "4.30.0", "pytorch": torch.__version__},
        "prompts": {"query": "query: ", "passage": "passage: "},
        "default_prompt_name": None,
        "similarity_fn_name": "cosine",
    })
    # The legacy booleans (what most Hub folders still carry); mean pooling.
    write_json("1_Pooling/config.json", {
        "word_embedding_dimension": C, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False, "pooling_mode_lasttoken": False, "include_prompt": True,
    })
    write_json("2_Dense/config.json", {"in_features": C, "out_features": DENSE_OUT, "bias": True,
                                       "activation_function": "torch.nn.modules.activation.Tanh"})

    out = {}
    ids, attn = mg.pad_batch([mg.random_sequence(n, config.vocab_size) for n in LENGTHS])
    out["input_ids"], out["attention_mask"] = ids, attn
    with torch.no_grad():
        tok = model(ids, attn)
        out["token_embeddings"] = tok
        for mode in MODES:
            for suffix, mask in (("", attn), (".no_prompt", exclude_prompt(attn, PROMPT_TOKENS))):
                pooled = pool(mode, tok.clone(), mask)
                out[f"pooled.{mode}{suffix}"] = pooled
                if suffix:
                    continue
                emb = torch.tanh(dense(pooled))          # Dense
                out[f"embedding.{mode}"] = emb
                out[f"normalized.{mode}"] = F.normalize(emb, p=2, dim=1)  # Normalize
    # SPLADE (TEI's splade pooling on a masked-LM model; naver/splade): the vocabulary-long
    # max over the row's tokens of log(1 + relu(logits)), on tests/data/mlm_tiny's model.
    mlm_dir = os.path.join(hf_io.REPO_ROOT, "tests", "data", "mlm_tiny")
    mcfg = rr.RobertaConfig.from_pretrained(mlm_dir)
    mlm = rr.RobertaForMaskedLM(mcfg, init=False)
    msd = rr.normalize_hf_keys(hf_io.load_state_dict(mlm_dir))
    missing, unexpected = mlm.load_state_dict(msd, strict=False)
    assert not unexpected and all(k.startswith("lm_head.decoder.") for k in missing), (missing, unexpected)
    mlm.lm_head.decoder.weight = mlm.roberta.embeddings.word_embeddings.weight
    mlm.eval()
    sids, sattn = mg.pad_batch([mg.random_sequence(n, mcfg.vocab_size) for n in SPLADE_LENGTHS])
    with torch.no_grad():
        _, logits = mlm(sids, sattn)
        act = torch.log1p(torch.relu(logits)) * sattn.unsqueeze(-1)
        out["splade.input_ids"], out["splade.attention_mask"] = sids, sattn
        out["splade.values"] = act.max(dim=1).values
    # MultipleNegativesRankingLoss (losses/MultipleNegativesRankingLoss.py: scores =
    # util.cos_sim(anchors, cat(positives, negatives)) * scale, cross_entropy against
    # arange(len(anchors))) with mean pooling on the encoder, train mode with dropout 0: the
    # loss and every parameter's gradient (the word embeddings' rows of the batch's ids only).
    mids, mattn = mg.pad_batch([mg.random_sequence(n, config.vocab_size) for n in MNRL_LENGTHS])
    tm = rr.no_dropout(rr.clone_model(model)).train()
    tok = tm(mids, mattn)
    emb = pool("mean", tok, mattn)
    a = len(MNRL_LENGTHS) // 3
    scores = F.normalize(emb[:a], p=2, dim=1) @ F.normalize(emb[a:], p=2, dim=1).t() * MNRL_SCALE
    loss = F.cross_entropy(scores, torch.arange(a))
    loss.backward()
    out["mnrl.input_ids"], out["mnrl.attention_mask"] = mids, mattn
    out["mnrl.loss"] = loss.detach().reshape(())
    used = torch.unique(mids)
    out["mnrl.wte_rows"] = used
    for name, p in tm.named_parameters():
        g = p.grad.detach()
        out["mnrl.grad." + name] = g[used] if name == "embeddings.word_embeddings.weight" else g
    for k, v in out.items():
        if v.is_floating_point():
            out[k] = v.to(torch.float32).contiguous()
    meta = {"fixture_version": FIXTURE_VERSION, "generator": "tools/make_golden_embed.py",
            "torch_version": torch.__version__, "seed": "3", "prompt_tokens": str(PROMPT_TOKENS),
            "modes": ",".join(MODES)}
    hf_io.write_safetensors(os.path.join(args.out, "golden.safetensors"), out, meta)
    print(f"make_golden_embed: wrote {args.out}")


if __name__ == "__main__":
    main()
