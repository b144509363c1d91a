#!/usr/bin/python3
"""Goldens for the encoder families beyond RoBERTa (issue 30), from the PyTorch reference
(roberta_ref.py: transformers' modeling_bert.py / modeling_distilbert.py / modeling_roberta.py
transcribed). For each family x head a tiny random checkpoint in HF's names and config format
and what the reference computes on it:

  tests/data/tiny_families/<case>/config.json, model.safetensors   the checkpoint (bert-seq: also
                                                                    pytorch_model.bin, buffers and all)
  tests/data/tiny_families/<case>/golden.safetensors               inputs and outputs:
    input_ids, attention_mask (B, T) [, token_type_ids], labels     the batch (labels: per row
                                                                    or per token, -100 ignored)
    logits                                                          eval mode
    loss, grad.<name>                                               dropout 0, every parameter
                                                                    as saved (a tied decoder's
                                                                    gradient is in the word
                                                                    embeddings')
    train.<s>.{input_ids, attention_mask, token_type_ids, labels}   STEPS more batches
    train.losses, train.grad_norms, train.lrs                       HF Trainer's AdamW (dropout
                                                                    off), one step per batch

A text-pair case, bert-seq-pair: a BertForSequenceClassification over the WordPiece tokenizer
tests/data/tokenizer/pipeline/bert-uncased (copied in as tokenizer.json), and pairs.json, text
pairs tokenized by HF's Rust tokenizers (tools/hf_tokenize.mjs: tokenizer(text, text_pair),
longest_first to max_position_embeddings) into golden's input_ids and token_type_ids (1 for the
second text); its logits, loss and gradients as above (no train.* steps).

Fill-mask cases, bert-mlm-fill and distilbert-mlm-fill: a masked LM over the same tokenizer,
fill.json's texts with [MASK] tokenized by HF's Rust tokenizers, and mask_logits, the eval-mode
vocabulary logits at each [MASK] (what FillMaskPipeline softmaxes and ranks).

Cases: bert-{seq,token,mlm}, distilbert-{seq,token,mlm}, xlm-roberta-seq, camembert-mlm (the
RoBERTa graph under other names: a check of the names and config keys), bert-seq-gelu_new and
distilbert-token-relu (the FFN's other activations), bert-mlm-gelu_new and distilbert-mlm-relu
(the masked-LM transform's activation is hidden_act / activation in those families).
Deterministic: torch.manual_seed per case, one thread. /usr/bin/python3 (torch 1.13).
"""
import json
import os
import shutil
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_io  # noqa: E402
import make_golden as mg  # noqa: E402
import roberta_ref as rr  # noqa: E402

FIXTURE_VERSION = "1"
STEPS = 5
TRAIN = dict(mg.TRAIN, steps=STEPS)
B, MIN_LEN, MAX_LEN = 3, 4, 12
VOCAB = 48
SIZES = dict(hidden=16, layers=2, heads=2, intermediate=32, max_pos=24)
SEQ_LABELS = ["neg", "neu", "pos"]
TOKEN_LABELS = ["O", "B-X", "I-X", "B-Y"]


def bert_config(head):
    arch = {"seq": "BertForSequenceClassification", "token": "BertForTokenClassification",
            "mlm": "BertForMaskedLM"}[head]
    labels = SEQ_LABELS if head == "seq" else TOKEN_LABELS
    d = dict(architectures=[arch], model_type="bert", vocab_size=VOCAB, hidden_size=SIZES["hidden"],
             num_hidden_layers=SIZES["layers"], num_attention_heads=SIZES["heads"],
             intermediate_size=SIZES["intermediate"], max_position_embeddings=SIZES["max_pos"], type_vocab_size=2,
             layer_norm_eps=1e-12, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, pad_token_id=0)
    if head != "mlm":
        d["id2label"] = {str(i): l for i, l in enumerate(labels)}
        d["label2id"] = {l: i for i, l in enumerate(labels)}
    return rr.BertConfig.from_dict(d)


def distilbert_config(head):
    arch = {"seq": "DistilBertForSequenceClassification", "token": "DistilBertForTokenClassification",
            "mlm": "DistilBertForMaskedLM"}[head]
    labels = SEQ_LABELS if head == "seq" else TOKEN_LABELS
    d = dict(architectures=[arch], vocab_size=VOCAB, dim=SIZES["hidden"], n_layers=SIZES["layers"],
             n_heads=SIZES["heads"], hidden_dim=SIZES["intermediate"], max_position_embeddings=SIZES["max_pos"],
             pad_token_id=0)
    if head != "mlm":
        d["id2label"] = {str(i): l for i, l in enumerate(labels)}
    return rr.DistilBertConfig(**d)


def roberta_like_config(model_type, prefix, head):
    arch = prefix + {"seq": "ForSequenceClassification", "token": "ForTokenClassification",
                     "mlm": "ForMaskedLM"}[head]
    labels = SEQ_LABELS if head == "seq" else TOKEN_LABELS
    d = dict(architectures=[arch], vocab_size=VOCAB, hidden_size=SIZES["hidden"], num_hidden_layers=SIZES["layers"],
             num_attention_heads=SIZES["heads"], intermediate_size=SIZES["intermediate"],
             max_position_embeddings=SIZES["max_pos"], type_vocab_size=1, layer_norm_eps=1e-5)
    if head != "mlm":
        d["id2label"] = {str(i): l for i, l in enumerate(labels)}
        d["label2id"] = {l: i for i, l in enumerate(labels)}
    c = rr.RobertaConfig.from_dict(dict(d, model_type=model_type))
    return c


MODELS = {
    ("bert", "seq"): rr.BertForSequenceClassification, ("bert", "token"): rr.BertForTokenClassification,
    ("bert", "mlm"): rr.BertForMaskedLM,
    ("distilbert", "seq"): rr.DistilBertForSequenceClassification,
    ("distilbert", "token"): rr.DistilBertForTokenClassification, ("distilbert", "mlm"): rr.DistilBertForMaskedLM,
    ("xlm-roberta", "seq"): rr.RobertaForSequenceClassification, ("camembert", "mlm"): rr.RobertaForMaskedLM,
}
CASES = [("bert", "seq"), ("bert", "token"), ("bert", "mlm"), ("distilbert", "seq"), ("distilbert", "token"),
         ("distilbert", "mlm"), ("xlm-roberta", "seq"), ("camembert", "mlm")]
# The other FFN activations (ACT2FN "gelu_new", "relu"): <family>-<head>-<activation>.
ACTIVATION_CASES = [("bert", "seq", "gelu_new"), ("distilbert", "token", "relu"),
                    # the masked-LM transform's activation is the config's too (BERT, DistilBERT)
                    ("bert", "mlm", "gelu_new"), ("distilbert", "mlm", "relu")]


def make_config(family, head, activation=None):
    if family == "bert":
        c = bert_config(head)
        if activation:
            c.hidden_act = activation
        return c
    if family == "distilbert":
        c = distilbert_config(head)
        if activation:
            c.activation = activation
        return c
    return roberta_like_config(family, {"xlm-roberta": "XLMRoberta", "camembert": "Camembert"}[family], head)


def randomize(model, pad, pad_position_row):
    """Larger-than-HF values so every parameter visibly matters (as make_golden.randomize_big);
    padding rows as nn.Embedding(padding_idx) leaves them."""
    with torch.no_grad():
        for name, p in rr.hf_saved_parameters(model):
            noise = torch.randn(p.shape) * 0.1
            is_ln_weight = name.endswith("LayerNorm.weight") or name.endswith("layer_norm.weight")
            p.copy_(noise + 1.0 if is_ln_weight else noise)
        emb = [m for n, m in model.named_modules() if n.endswith("embeddings")][0]
        emb.word_embeddings.weight[pad].zero_()
        if pad_position_row:
            emb.position_embeddings.weight[pad].zero_()


def make_batch(family, head, cls_id, sep_id, pad):
    lens = torch.randint(MIN_LEN, MAX_LEN + 1, (B,)).tolist()
    T = max(lens)
    ids = torch.full((B, T), pad, dtype=torch.int64)
    mask = torch.zeros((B, T), dtype=torch.int64)
    types = torch.zeros((B, T), dtype=torch.int64)
    for b, n in enumerate(lens):
        body = torch.randint(4, VOCAB, (n - 2,)).tolist()
        ids[b, :n] = torch.tensor([cls_id] + body + [sep_id])
        mask[b, :n] = 1
        if family == "bert":
            types[b, n // 2:n] = 1  # a pair's second segment; padding keeps type 0 (pad_token_type_id)
    if head == "seq":
        labels = torch.randint(0, len(SEQ_LABELS), (B,))
    elif head == "token":
        labels = torch.randint(0, len(TOKEN_LABELS), (B, T))
        labels[torch.rand(B, T) < 0.25] = -100
        labels[mask == 0] = -100
        labels[:, 0] = -100
    else:
        labels = torch.full((B, T), -100, dtype=torch.int64)
        pick = (torch.rand(B, T) < 0.3) & (mask == 1)
        pick[:, 1] = True  # every row has a target
        labels[pick] = torch.randint(0, VOCAB, (int(pick.sum()),))
    return ids, mask, (types if family == "bert" else None), labels


def run_case(family, head, out_root, activation=None, seed=0):
    torch.manual_seed(seed)
    config = make_config(family, head, activation)
    model = MODELS[(family, head)](config)
    roberta = family in ("xlm-roberta", "camembert")
    pad = config.pad_token_id
    cls_id, sep_id = (0, 2) if roberta else (2, 3)
    randomize(model, pad, roberta)
    model.eval()
    case_dir = os.path.join(out_root, f"{family}-{head}" + (f"-{activation}" if activation else ""))
    os.makedirs(case_dir, exist_ok=True)
    sd = {n: p.detach().clone() for n, p in rr.hf_saved_parameters(model)}
    hf_io.write_config(os.path.join(case_dir, "config.json"), config.to_dict())
    hf_io.write_safetensors(os.path.join(case_dir, "model.safetensors"), sd, {"format": "pt"})
    if (family, head, activation) == ("bert", "seq", None):
        # pytorch_model.bin as transformers <= 4.30 wrote it: model.state_dict() with the
        # persistent buffers of the time (embeddings.position_ids, token_type_ids) first.
        from collections import OrderedDict
        state = model.state_dict()
        buffers = OrderedDict()
        buffers["bert.embeddings.position_ids"] = torch.arange(SIZES["max_pos"]).expand((1, -1))
        buffers["bert.embeddings.token_type_ids"] = torch.zeros((1, SIZES["max_pos"]), dtype=torch.int64)
        for k, v in state.items():
            buffers[k] = v.detach()
        buffers._metadata = state._metadata
        hf_io.save_torch_bin(os.path.join(case_dir, "pytorch_model.bin"), buffers)

    golden = {}
    ids, mask, types, labels = make_batch(family, head, cls_id, sep_id, pad)
    golden["input_ids"], golden["attention_mask"], golden["labels"] = ids, mask, labels
    if types is not None:
        golden["token_type_ids"] = types
    kw = {} if types is None else {"token_type_ids": types}
    with torch.no_grad():
        golden["logits"] = model(ids, mask, **kw)[1]
    trained = rr.no_dropout(rr.clone_model(model)).train()
    loss, _ = trained(ids, mask, labels=labels, **kw)
    loss.backward()
    golden["loss"] = loss.detach().reshape(1)
    for n, p in rr.hf_saved_parameters(trained):
        golden[f"grad.{n}"] = p.grad.detach().clone()
    trained.zero_grad(set_to_none=True)

    # HF Trainer's AdamW steps on fresh batches (make_golden.adamw_steps, with token types).
    model2 = rr.no_dropout(rr.clone_model(model)).train()
    params = [p for _, p in rr.hf_saved_parameters(model2)]
    opt = torch.optim.AdamW(rr.decay_groups_by_module(model2, TRAIN["weight_decay"]), lr=TRAIN["lr"],
                            betas=(TRAIN["beta1"], TRAIN["beta2"]), eps=TRAIN["eps"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, mg.linear_warmup_decay(TRAIN["warmup_steps"], STEPS))
    losses, lrs, norms = [], [], []
    for s in range(STEPS):
        ids, mask, types, labels = make_batch(family, head, cls_id, sep_id, pad)
        golden[f"train.{s}.input_ids"], golden[f"train.{s}.attention_mask"] = ids, mask
        golden[f"train.{s}.labels"] = labels
        if types is not None:
            golden[f"train.{s}.token_type_ids"] = types
        lrs.append(opt.param_groups[0]["lr"])
        loss, _ = model2(ids, mask, labels=labels, **({} if types is None else {"token_type_ids": types}))
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(params, TRAIN["max_grad_norm"])))
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    golden["train.losses"] = torch.tensor(losses)
    golden["train.lrs"] = torch.tensor(lrs)
    golden["train.grad_norms"] = torch.tensor(norms)
    for k, v in golden.items():
        golden[k] = v.to(torch.float32) if v.is_floating_point() else v.to(torch.int32)
    meta = {"fixture_version": FIXTURE_VERSION, "generator": "tools/make_golden_families.py",
            "torch_version": torch.__version__, "family": family, "head": head, "steps": str(STEPS),
            "lr": repr(TRAIN["lr"]), "beta1": repr(TRAIN["beta1"]), "beta2": repr(TRAIN["beta2"]),
            "eps": repr(TRAIN["eps"]), "weight_decay": repr(TRAIN["weight_decay"]),
            "warmup_steps": str(TRAIN["warmup_steps"]), "max_grad_norm": repr(TRAIN["max_grad_norm"])}
    hf_io.write_safetensors(os.path.join(case_dir, "golden.safetensors"), golden, meta)
    size = sum(os.path.getsize(os.path.join(case_dir, f)) for f in os.listdir(case_dir))
    print(f"  {os.path.basename(case_dir)}: loss {golden['loss'].item():.4f}, steps", " ".join(f"{x:.4f}" for x in losses),
          f"({size} bytes)")


PAIR_TOKENIZER = os.path.join(hf_io.REPO_ROOT, "tests", "data", "tokenizer", "pipeline", "bert-uncased",
                              "tokenizer.json")
# Short pairs, a pair cut longest_first to the model's 24 tokens, and a text alone in a pair
# with an empty second text.
PAIRS = [("a man plays the guitar.", "someone is playing music."), ("hello world", "the dog runs in the park"),
         ("the man sat on the car and the dog sat on the man while the world was playing music",
          "is someone there? the park is on the world music, hello."),
         ("music", "")]
PAIR_LABELS = [2, 0, 1, 2]


def hf_pair_encodings(texts, pairs, max_length):
    """tokenizer(text, text_pair, truncation=True, max_length=max_length) by HF's Rust tokenizers."""
    req = json.dumps({"tokenizer": PAIR_TOKENIZER, "texts": texts, "text_pairs": pairs, "max_length": max_length})
    out = subprocess.run(["node", os.path.join(HERE, "hf_tokenize.mjs")], input=req.encode("utf-8"),
                         capture_output=True, check=True)
    got = json.loads(out.stdout)
    return got["ids"], got["type_ids"]


def run_pair_case(out_root, seed):
    torch.manual_seed(seed)
    with open(PAIR_TOKENIZER, encoding="utf-8") as f:
        vocab = len(json.load(f)["model"]["vocab"])
    config = bert_config("seq")
    config.vocab_size = vocab
    model = rr.BertForSequenceClassification(config)
    randomize(model, config.pad_token_id, False)
    model.eval()
    case_dir = os.path.join(out_root, "bert-seq-pair")
    os.makedirs(case_dir, exist_ok=True)
    hf_io.write_config(os.path.join(case_dir, "config.json"), config.to_dict())
    hf_io.write_safetensors(os.path.join(case_dir, "model.safetensors"),
                            {n: p.detach().clone() for n, p in rr.hf_saved_parameters(model)}, {"format": "pt"})
    shutil.copyfile(PAIR_TOKENIZER, os.path.join(case_dir, "tokenizer.json"))
    texts, pairs = [a for a, _ in PAIRS], [b for _, b in PAIRS]
    with open(os.path.join(case_dir, "pairs.json"), "w", encoding="utf-8") as f:
        json.dump({"texts": texts, "text_pairs": pairs, "labels": PAIR_LABELS}, f, indent=1)
        f.write("\n")
    rows, row_types = hf_pair_encodings(texts, pairs, config.max_position_embeddings)
    T = max(len(r) for r in rows)
    ids = torch.full((len(rows), T), config.pad_token_id, dtype=torch.int64)
    mask = torch.zeros((len(rows), T), dtype=torch.int64)
    types = torch.zeros((len(rows), T), dtype=torch.int64)  # padding: pad_token_type_id 0
    for b, (r, t) in enumerate(zip(rows, row_types)):
        ids[b, :len(r)] = torch.tensor(r)
        mask[b, :len(r)] = 1
        types[b, :len(t)] = torch.tensor(t)
    labels = torch.tensor(PAIR_LABELS)
    golden = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types, "labels": labels}
    with torch.no_grad():
        golden["logits"] = model(ids, mask, token_type_ids=types)[1]
    trained = rr.no_dropout(rr.clone_model(model)).train()
    loss, _ = trained(ids, mask, token_type_ids=types, labels=labels)
    loss.backward()
    golden["loss"] = loss.detach().reshape(1)
    for n, p in rr.hf_saved_parameters(trained):
        golden[f"grad.{n}"] = p.grad.detach().clone()
    for k, v in golden.items():
        golden[k] = v.to(torch.float32) if v.is_floating_point() else v.to(torch.int32)
    meta = {"fixture_version": FIXTURE_VERSION, "generator": "tools/make_golden_families.py",
            "torch_version": torch.__version__, "family": "bert", "head": "seq", "pairs": "pairs.json"}
    hf_io.write_safetensors(os.path.join(case_dir, "golden.safetensors"), golden, meta)
    print(f"  bert-seq-pair: loss {golden['loss'].item():.4f}, types per row",
          [int(t.sum()) for t in types])


# Fill-mask texts: one [MASK], two, and one at the start of the text.
FILL_TEXTS = ["the man [MASK] the guitar.", "hello [MASK] world, the dog [MASK] in the park.", "[MASK] is playing music"]


def run_fill_case(family, out_root, seed):
    """<family>-mlm-fill: a masked LM over the bert-uncased WordPiece tokenizer (tokenizer.json
    copied in), fill.json's texts tokenized by HF's Rust tokenizers (input_ids, attention_mask)
    and the eval-mode logits at each [MASK] (mask_logits, (masks, vocab), in text order): what
    transformers' FillMaskPipeline softmaxes and ranks."""
    torch.manual_seed(seed)
    with open(PAIR_TOKENIZER, encoding="utf-8") as f:
        tok_json = json.load(f)
    vocab = len(tok_json["model"]["vocab"])
    mask_id = tok_json["model"]["vocab"]["[MASK]"]
    config = make_config(family, "mlm")
    config.vocab_size = vocab
    model = MODELS[(family, "mlm")](config)
    randomize(model, config.pad_token_id, False)
    model.eval()
    case_dir = os.path.join(out_root, f"{family}-mlm-fill")
    os.makedirs(case_dir, exist_ok=True)
    hf_io.write_config(os.path.join(case_dir, "config.json"), config.to_dict())
    hf_io.write_safetensors(os.path.join(case_dir, "model.safetensors"),
                            {n: p.detach().clone() for n, p in rr.hf_saved_parameters(model)}, {"format": "pt"})
    shutil.copyfile(PAIR_TOKENIZER, os.path.join(case_dir, "tokenizer.json"))
    with open(os.path.join(case_dir, "fill.json"), "w", encoding="utf-8") as f:
        json.dump({"texts": FILL_TEXTS}, f, indent=1)
        f.write("\n")
    req = json.dumps({"tokenizer": PAIR_TOKENIZER, "texts": FILL_TEXTS})
    out = subprocess.run(["node", os.path.join(HERE, "hf_tokenize.mjs")], input=req.encode("utf-8"),
                         capture_output=True, check=True)
    rows = json.loads(out.stdout)["ids"]
    T = max(len(r) for r in rows)
    ids = torch.full((len(rows), T), config.pad_token_id, dtype=torch.int64)
    mask = torch.zeros((len(rows), T), dtype=torch.int64)
    for b, r in enumerate(rows):
        ids[b, :len(r)] = torch.tensor(r)
        mask[b, :len(r)] = 1
    with torch.no_grad():
        logits = model(ids, mask)[1]
    golden = {"input_ids": ids.to(torch.int32), "attention_mask": mask.to(torch.int32),
              "mask_logits": logits[ids == mask_id].to(torch.float32)}
    meta = {"fixture_version": FIXTURE_VERSION, "generator": "tools/make_golden_families.py",
            "torch_version": torch.__version__, "family": family, "head": "mlm", "texts": "fill.json"}
    hf_io.write_safetensors(os.path.join(case_dir, "golden.safetensors"), golden, meta)
    print(f"  {family}-mlm-fill: {int((ids == mask_id).sum())} masks")


def main():
    torch.set_num_threads(1)
    out_root = os.path.join(hf_io.REPO_ROOT, "tests", "data", "tiny_families")
    for i, (family, head) in enumerate(CASES):
        run_case(family, head, out_root, seed=30 + i)
    for i, (family, head, activation) in enumerate(ACTIVATION_CASES):
        run_case(family, head, out_root, activation, seed=50 + i)
    run_pair_case(out_root, seed=70)
    run_fill_case("bert", out_root, seed=71)
    run_fill_case("distilbert", out_root, seed=72)


if __name__ == "__main__":
    main()
