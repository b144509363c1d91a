#!/usr/bin/env python3
"""PyTorch 2 baseline for scripts/gpu-check.sh: the reference pipeline's settings
(torch.compile, bf16 autocast, fused AdamW, fp32 master weights, dropout 0.1) on a
pure-PyTorch RoBERTa (tools/roberta_ref.py: HF modeling_roberta semantics; transformers is not
required), on exactly the shapes `roberta bench train|infer --device cuda` runs:
  fixed:    --batch B --seq T             (every row T real tokens)
  lengths:  --batch B --lengths FILE      (real length distribution, dynamic padding to a
                                           multiple of 8, the same shuffle seed and order)
Attention runs through F.scaled_dot_product_attention by default (what transformers >= 4.36
uses, the stronger baseline); --eager keeps HF 4.30's matmul-softmax-matmul.
  infer:    --infer --batch B --seq T     (eval mode, inference_mode, bf16 autocast, compiled;
                                           seq_per_s and ms per batch = latency at B = 1)
Prints one JSON line (tok_per_s, mfu, ... as `roberta bench` prints them).
FLOPs: 6·(12·C²·L + head)·tokens + 12·L·C·Σlen², real tokens only (cli/cmd_bench.cpp).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import roberta_ref  # noqa: E402


def sdpa_forward(self, hidden_states, attention_mask):
    B, T, _ = hidden_states.shape
    def heads(x):
        return x.view(B, T, self.num_attention_heads, self.attention_head_size).transpose(1, 2)
    q, k, v = heads(self.query(hidden_states)), heads(self.key(hidden_states)), heads(self.value(hidden_states))
    p = self.dropout.p if self.training else 0.0
    # HF's additive finfo.min mask, in q's dtype (SDPA wants bool or the query dtype; bf16 holds
    # fp32's range, so finfo(fp32).min survives the cast)
    mask = attention_mask.to(q.dtype) if attention_mask is not None else None
    ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
    return ctx.transpose(1, 2).reshape(B, T, self.all_head_size)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--lengths", default="")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--peak-tflops", type=float, default=790.0)
    ap.add_argument("--eager", action="store_true", help="HF 4.30 eager attention instead of SDPA")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--infer", action="store_true", help="time inference (eval, no grad) instead of training")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch2_baseline: no CUDA device", file=sys.stderr)
        return 3
    if not args.eager:
        roberta_ref.RobertaSelfAttention.forward = sdpa_forward
    torch.manual_seed(0)
    dev = torch.device("cuda")
    cfg = roberta_ref.RobertaConfig(num_hidden_layers=args.layers, max_position_embeddings=514, type_vocab_size=1,
                                    layer_norm_eps=1e-5, num_labels=3)
    model = roberta_ref.RobertaForSequenceClassification(cfg).to(dev).train()
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-5, fused=True)
    if args.infer:
        return infer(args, cfg, model, dev)
    fwd = model if args.no_compile else torch.compile(model, dynamic=bool(args.lengths))

    # Same batches as `roberta bench train --lengths`: fixed shapes, or lengths shuffled with seed 1234
    # (std::mt19937_64 and Python's shuffle differ, so the ORDER differs; the distribution
    # and the padded shapes' mix are the same over enough steps).
    if args.lengths:
        with open(args.lengths) as f:
            all_lens = [min(int(x), 512) for x in f.read().split()]
        random.Random(1234).shuffle(all_lens)
        batches = [[all_lens[(i * args.batch + j) % len(all_lens)] for j in range(args.batch)]
                   for i in range(args.steps + args.warmup)]
    else:
        batches = [[args.seq] * args.batch for _ in range(args.steps + args.warmup)]

    def make(lens):
        T = max(lens) if not args.lengths else (max(lens) + 7) // 8 * 8
        ids = torch.ones(len(lens), T, dtype=torch.long)
        mask = torch.zeros(len(lens), T, dtype=torch.long)
        for b, n in enumerate(lens):
            ids[b, :n] = torch.randint(3, cfg.vocab_size, (n,))
            ids[b, 0], ids[b, n - 1] = 0, 2
            mask[b, :n] = 1
        labels = torch.arange(len(lens)) % cfg.num_labels
        return ids.to(dev, non_blocking=True), mask.to(dev, non_blocking=True), labels.to(dev, non_blocking=True)

    def step(ids, mask, labels):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss, _ = fwd(ids, mask, labels=labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    # Warm-up: compile every padded shape before timing (as ours captures its graphs first).
    seen = set()
    for lens in batches:
        T = max(lens) if not args.lengths else (max(lens) + 7) // 8 * 8
        if T in seen and len(seen) >= args.warmup:
            continue
        seen.add(T)
        step(*make(lens))
    torch.cuda.synchronize()

    C, L, K = cfg.hidden_size, cfg.num_hidden_layers, cfg.num_labels
    per_token = L * 12 * C * C + C * C + K * C
    flops = tokens = 0.0
    timed = batches[:args.steps]
    data = [make(lens) for lens in timed]
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    for lens, d in zip(timed, data):
        step(*d)
        for n in lens:
            tokens += n
            flops += 6.0 * per_token * n + 12.0 * L * C * n * n
    t1.record()
    t1.synchronize()
    sec = t0.elapsed_time(t1) / 1e3
    tflops = flops / sec / 1e12
    print(json.dumps({"impl": "torch2", "mode": "lengths" if args.lengths else "fixed", "batch": args.batch,
                      "seq": args.seq, "steps": args.steps, "ms_per_step": sec * 1e3 / args.steps,
                      "tok_per_s": tokens / sec, "tflops": tflops, "mfu": tflops / args.peak_tflops,
                      "peak_tflops": args.peak_tflops, "torch": torch.__version__,
                      "compile": not args.no_compile, "attention": "eager" if args.eager else "sdpa"}))
    return 0


def infer(args, cfg, model, dev) -> int:
    model.eval()
    fwd = model if args.no_compile else torch.compile(model)
    B, T = args.batch, args.seq
    ids = torch.randint(3, cfg.vocab_size, (B, T), device=dev)
    ids[:, 0], ids[:, -1] = 0, 2
    mask = torch.ones(B, T, dtype=torch.long, device=dev)

    def run():
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
            return fwd(ids, mask)

    for _ in range(max(3, args.warmup)):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.steps):
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0.record()
        out = run()
        out = out[-1] if isinstance(out, tuple) else out  # (loss, logits)
        out.float().cpu()  # logits to the host, as `roberta bench infer` returns them
        t1.record()
        t1.synchronize()
        times.append(t0.elapsed_time(t1))
    times.sort()
    ms = times[len(times) // 2]
    print(json.dumps({"impl": "torch2", "mode": "infer", "batch": B, "seq": T, "iters": args.steps,
                      "ms_median": ms, "seq_per_s": B / (ms / 1e3), "tok_per_s": B * T / (ms / 1e3),
                      "torch": torch.__version__, "compile": not args.no_compile,
                      "attention": "eager" if args.eager else "sdpa"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
