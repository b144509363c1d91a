"""PyTorch 1.13 runner for the side-by-side benchmarks: times the reference RoBERTa classifier
(tools/roberta_ref.py, HF semantics) on an HF checkpoint folder.

    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/torch/bench_torch.py --model DIR \
        --mode infer|train --batch-size 1,32 --seq-len 32,64 \
        --precision fp32|bf16-autocast|bf16-weights --threads 2 [--iters 20] [--warmup 3]

Thread settings: torch.set_num_threads(--threads). PyTorch's fp32 matmuls use OpenBLAS's thread
pool and everything else OpenMP's; on 2 cores their idle-spinning threads steal each other's
cores (3.5x slower, wild variance). docs/ANCHORS.md therefore measures PyTorch fp32 with
OMP_WAIT_POLICY=PASSIVE in the environment; the driver sets it (it must be set before the
process starts, so this script only reports what it saw in "omp_wait_policy").

Modes:
  infer  torch.inference_mode(), model.eval(), one forward of [batch, seq] per iteration.
  train  one full step per iteration as HF Trainer would do it: model.train() (dropout 0.1),
         forward + mean cross-entropy, backward, clip_grad_norm_(1.0), AdamW step (HF grouping:
         no decay for biases and LayerNorm weights; lr 2e-5, wd 0.01), zero_grad.
Precisions:
  fp32            everything fp32.
  bf16-autocast   forward (and loss) under torch.autocast("cpu", dtype=torch.bfloat16); fp32 weights.
  bf16-weights    model.to(torch.bfloat16): weights and activations bf16 (pure bf16; in train
                  mode AdamW also runs on bf16 weights).
Inputs: random ids of exactly --seq-len tokens (<s> random... </s>, no padding), mask all ones.

--batch-size and --seq-len take comma lists; every combination prints ONE JSON line on stdout:
  {"engine":"pytorch-1.13","mode":..,"precision":..,"batch":..,"seq":..,"threads":..,"iters":..,
   "ms_median":..,"ms_p10":..,"ms_p90":..,"seq_per_s":..,"tok_per_s":..,
   "busy_retries":..,"others_cores":..,"omp_wait_policy":..}
seq_per_s and tok_per_s are batch / median and batch*seq / median.
Busy guard (the machine is shared): timing runs in blocks of >= 0.25 s; a block during which
OTHER processes used more than --busy-threshold cores on average (/proc/stat minus this
process's own CPU time) is discarded and repeated, at most 10 times per measurement.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools"))
import roberta_ref as rr  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def busy_seconds_all() -> float:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / CLK_TCK


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def quantile(sorted_vals, q):
    pos = (len(sorted_vals) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def decay_groups(model, weight_decay):
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (no_decay if ("bias" in n or "LayerNorm.weight" in n) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_inputs(config, batch, seq, gen):
    ids = torch.randint(3, config.vocab_size, (batch, seq), generator=gen)
    ids[:, 0] = config.bos_token_id
    ids[:, -1] = config.eos_token_id
    labels = torch.randint(0, config.num_labels, (batch,), generator=gen)
    return ids, torch.ones_like(ids), labels


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--mode", choices=["infer", "train"], default="infer")
    ap.add_argument("--batch-size", default="1")
    ap.add_argument("--seq-len", default="32")
    ap.add_argument("--precision", choices=["fp32", "bf16-autocast", "bf16-weights"], default="fp32")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--busy-threshold", type=float, default=0.3)
    args = ap.parse_args()
    if args.threads < 1 or args.iters < 1 or args.warmup < 0:
        ap.error("--threads and --iters must be >= 1, --warmup >= 0")

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model, config = rr.load_pretrained(args.model)
    if args.precision == "bf16-weights":
        model = model.to(torch.bfloat16)
    autocast = args.precision == "bf16-autocast"
    engine = "pytorch-" + ".".join(torch.__version__.split(".")[:2])
    gen = torch.Generator().manual_seed(0)

    if args.mode == "train":
        model.train()
        opt = torch.optim.AdamW(decay_groups(model, 0.01), lr=args.lr, betas=(0.9, 0.999), eps=1e-8)
    else:
        model.eval()
        opt = None

    def step(ids, mask, labels):
        if opt is None:
            with torch.inference_mode():
                if autocast:
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        model(ids, mask)
                else:
                    model(ids, mask)
            return
        if autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(ids, mask, labels=labels)[0]
        else:
            loss = model(ids, mask, labels=labels)[0]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for batch in [int(x) for x in args.batch_size.split(",")]:
        for seq in [int(x) for x in args.seq_len.split(",")]:
            if batch < 1 or not 2 <= seq <= config.max_position_embeddings - 2:
                sys.exit(f"bench_torch: need batch >= 1 and 2 <= seq <= {config.max_position_embeddings - 2}, "
                         f"got {batch}x{seq}")
            ids, mask, labels = make_inputs(config, batch, seq, gen)
            est = 1e-3
            for _ in range(args.warmup):
                t0 = time.perf_counter()
                step(ids, mask, labels)
                est = time.perf_counter() - t0
            block = max(1, math.ceil(0.25 / max(est, 1e-4)))
            times, retries, others_sum, wall_sum = [], 0, 0.0, 0.0
            while len(times) < args.iters:
                n = min(block, args.iters - len(times))
                j0, c0, b0 = busy_seconds_all(), own_cpu_seconds(), time.perf_counter()
                ts = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    step(ids, mask, labels)
                    ts.append((time.perf_counter() - t0) * 1e3)
                wall = time.perf_counter() - b0
                others = max(0.0, (busy_seconds_all() - j0) - (own_cpu_seconds() - c0))
                if others / wall > args.busy_threshold and retries < 10:
                    retries += 1
                    continue
                others_sum += others
                wall_sum += wall
                times.extend(ts)
            times.sort()
            med = quantile(times, 0.5)
            print(json.dumps({
                "engine": engine, "mode": args.mode, "precision": args.precision, "batch": batch, "seq": seq,
                "threads": args.threads, "iters": args.iters,
                "ms_median": round(med, 3), "ms_p10": round(quantile(times, 0.1), 3),
                "ms_p90": round(quantile(times, 0.9), 3),
                "seq_per_s": round(batch / (med / 1e3), 2), "tok_per_s": round(batch * seq / (med / 1e3), 1),
                "busy_retries": retries, "others_cores": round(others_sum / wall_sum, 2),
                "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
            }), flush=True)


if __name__ == "__main__":
    main()
