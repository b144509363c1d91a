#!/usr/bin/env python3
"""Side-by-side CPU benchmark: roberta.cpp vs PyTorch 1.13 vs ONNX Runtime on the SAME random
roberta-base checkpoint, shapes and thread count, interleaved round by round.

    python3 bench/compare.py [--model /tmp/rb-base] [--roberta build-speed/cli/roberta] \
        [--threads 2] [--rounds 3] [--cache ~/.cache/roberta-bench] [--skip-train] [--json out.jsonl]

Each engine runs in its best thread setting: PyTorch and ONNX Runtime with OMP_WAIT_POLICY=PASSIVE
(PyTorch needs it, ANCHORS.md lesson 1; ORT has its own pool), roberta.cpp with --roberta-omp-wait
(default: libgomp's default spin-then-sleep, ~30% faster per 1x32 forward on a quiet machine than
PASSIVE; on a busy machine PASSIVE is far better for us too: pass --roberta-omp-wait PASSIVE).
Runs (each a separate process, each with its runner's busy-neighbour guard, ANCHORS.md lesson 5):
  inference, batch 1 x seq 32 (latency) and batch 32 x seq 64 (throughput):
    pytorch fp32 (OMP_WAIT_POLICY=PASSIVE), pytorch bf16-autocast, pytorch bf16-weights,
    onnxruntime fp32 (npm onnxruntime-node, bench/ort; the ONNX file is exported once into --cache),
    roberta.cpp fp32, bf16, int8;
  training step, batch 32 x seq 64: pytorch fp32 and bf16-autocast, roberta.cpp fp32 and bf16.
PyTorch's bf16 runs only where the CPU has bf16 units (--torch-bf16 auto|on|off).
Every round runs every configuration once, in the same order; the table reports the median
over rounds of each runner's median.  Also times `roberta predict --model DIR --precision bf16 "hi"`
(load safetensors -> first answer; bf16 is the default precision where the CPU has it).  Prints markdown: the machine, the commands,
the table, and the issue's goals as ratios from this one run.

The model is made if missing: /usr/bin/python3 tools/make_checkpoint.py --size base --out DIR.
PyTorch always runs on /usr/bin/python3 (Debian's python3-torch); this script itself needs only
the standard library.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_PY = "/usr/bin/python3"


def sh(cmd, env=None, timeout=1800):
    """Runs cmd (a list), returns stdout; raises with stderr on failure."""
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return r.stdout


def with_env(extra):
    """os.environ plus `extra`; a None value removes the variable."""
    env = dict(os.environ)
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def json_lines(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def machine():
    model, flags = "?", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "?":
                    model = line.split(":", 1)[1].strip()
                if line.startswith(("flags", "Features")):  # x86-64, aarch64
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    isa = [x for x in ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8", "amx_tile")
           if x in flags]
    # bf16 units: AVX512-BF16 / AMX on x86-64, the BF16 extension on aarch64.
    has_bf16 = bool({"avx512_bf16", "amx_bf16", "bf16"} & flags)
    return {"cpu": model, "isa": " ".join(isa) or "?", "cpus": os.cpu_count(), "kernel": platform.release(),
            "bf16": has_bf16}


class Config:
    def __init__(self, key, engine, precision, mode, batch, seq, cmd, env=None):
        self.key, self.engine, self.precision, self.mode = key, engine, precision, mode
        self.batch, self.seq, self.cmd, self.env = batch, seq, cmd, env
        self.results = []  # one JSON object per round

    def run(self):
        env = with_env(self.env)
        lines = [j for j in json_lines(sh(self.cmd, env=env)) if "ms_median" in j]
        if not lines:
            raise RuntimeError(f"no JSON line from {' '.join(self.cmd)}")
        self.results.append(lines[-1])
        return lines[-1]

    def ms(self):
        return statistics.median(r["ms_median"] for r in self.results) if self.results else float("nan")

    def seq_per_s(self):
        return self.batch / (self.ms() / 1e3)

    def tok_per_s(self):
        return self.batch * self.seq / (self.ms() / 1e3)

    def others(self):
        return max((r.get("others_cores", 0) for r in self.results), default=0)

    def retries(self):
        return sum(r.get("busy_retries", 0) for r in self.results)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="/tmp/rb-base")
    ap.add_argument("--roberta", default=os.path.join(REPO, "build-speed", "cli", "roberta"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/roberta-bench"))
    ap.add_argument("--skip-train", action="store_true")
    ap.add_argument("--skip-infer", action="store_true")
    ap.add_argument("--json", help="append every raw result line here")
    ap.add_argument("--busy-threshold", default="0.3")
    ap.add_argument("--roberta-omp-wait", default="", help="OMP_WAIT_POLICY for roberta.cpp ('' = libgomp's default)")
    ap.add_argument("--torch-bf16", choices=("auto", "on", "off"), default="auto",
                    help="PyTorch's bf16 runs; auto: only where the CPU has bf16 units (without them PyTorch 1.13's "
                         "bf16 matmul ran ~16x slower than fp32 on AMD Zen 3, hours per round)")
    args = ap.parse_args()
    m = machine()
    torch_bf16 = args.torch_bf16 == "on" or (args.torch_bf16 == "auto" and m["bf16"])
    if not torch_bf16:
        print("PyTorch bf16 runs skipped: this CPU has no bf16 units (--torch-bf16 on to force them)", file=sys.stderr)

    if not os.path.exists(os.path.join(args.model, "config.json")):
        print(f"making {args.model} ...", file=sys.stderr)
        sh([TORCH_PY, os.path.join(REPO, "tools/make_checkpoint.py"), "--size", "base", "--out", args.model])
    os.makedirs(args.cache, exist_ok=True)
    st = os.stat(os.path.join(args.model, "config.json"))
    onnx = os.path.join(args.cache, f"{os.path.basename(os.path.abspath(args.model))}-{int(st.st_mtime)}.onnx")
    if not args.skip_infer and not os.path.exists(onnx):
        print(f"exporting {onnx} ...", file=sys.stderr)
        sh([TORCH_PY, os.path.join(REPO, "bench/ort/export_onnx.py"), "--model", args.model, "--out", onnx])

    T = str(args.threads)
    bt = args.busy_threshold
    torch_py = os.path.join(REPO, "bench/torch/bench_torch.py")
    ort_js = os.path.join(REPO, "bench/ort/bench_ort.mjs")
    passive = {"OMP_WAIT_POLICY": "PASSIVE"}
    ours = {"OMP_WAIT_POLICY": args.roberta_omp_wait or None}  # None: removed from the environment

    def iters_for(mode, batch):
        if mode == "train":
            return "3", "1"
        return ("20", "3") if batch == 1 else ("5", "1")

    configs = []
    shapes = [] if args.skip_infer else [(1, 32), (32, 64)]
    for batch, seq in shapes:
        it, wu = iters_for("infer", batch)
        common = ["--batch-size", str(batch), "--seq-len", str(seq), "--threads", T, "--iters", it, "--warmup", wu,
                  "--busy-threshold", bt]
        for prec in ("fp32", "bf16-autocast", "bf16-weights") if torch_bf16 else ("fp32",):
            configs.append(Config(f"infer {batch}x{seq} pytorch {prec}", "pytorch-1.13", prec, "infer", batch, seq,
                                  [TORCH_PY, torch_py, "--model", args.model, "--mode", "infer", "--precision", prec]
                                  + common, passive))
        configs.append(Config(f"infer {batch}x{seq} onnxruntime fp32", "onnxruntime", "fp32", "infer", batch, seq,
                              ["node", ort_js, "--model", onnx] + common, passive))
        for prec in ("fp32", "bf16", "int8"):
            configs.append(Config(f"infer {batch}x{seq} roberta.cpp {prec}", "roberta.cpp", prec, "infer", batch, seq,
                                  [args.roberta, "bench", "infer", "--model", args.model, "--precision", prec]
                                  + common, ours))
    if not args.skip_train:
        batch, seq = 32, 64
        it, wu = iters_for("train", batch)
        common = ["--batch-size", str(batch), "--seq-len", str(seq), "--threads", T, "--iters", it, "--warmup", wu,
                  "--busy-threshold", bt]
        for prec in ("fp32", "bf16-autocast") if torch_bf16 else ("fp32",):
            configs.append(Config(f"train {batch}x{seq} pytorch {prec}", "pytorch-1.13", prec, "train", batch, seq,
                                  [TORCH_PY, torch_py, "--model", args.model, "--mode", "train", "--precision", prec]
                                  + common, passive))
        for prec in ("fp32", "bf16"):
            configs.append(Config(f"train {batch}x{seq} roberta.cpp {prec}", "roberta.cpp", prec, "train", batch, seq,
                                  [args.roberta, "bench", "train", "--model", args.model, "--precision", prec]
                                  + common, ours))

    first_answer = []
    load_before = os.getloadavg()[0]
    t_start = time.time()
    for r in range(args.rounds):
        for c in configs:
            res = c.run()
            print(f"round {r + 1}/{args.rounds} {c.key}: {res['ms_median']:.2f} ms "
                  f"(others {res.get('others_cores', 0)}, retries {res.get('busy_retries', 0)})", file=sys.stderr)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(dict(res, key=c.key, round=r + 1)) + "\n")
        t0 = time.perf_counter()
        # bf16: the default precision where the CPU has it (cli/cmd_predict.cpp still defaults
        # to fp32, so it is named explicitly).
        sh([args.roberta, "predict", "--model", args.model, "--threads", T, "--precision", "bf16", "hi"],
           env=with_env(ours))
        first_answer.append(time.perf_counter() - t0)
    load_after = os.getloadavg()[0]

    by = {c.key: c for c in configs}
    print(f"Machine: {m['cpu']}, {m['cpus']} CPUs, ISA flags: {m['isa']} (no AMX unless listed), "
          f"threads {args.threads}, OMP_WAIT_POLICY=PASSIVE for PyTorch and ONNX Runtime, "
          f"{args.roberta_omp_wait or 'unset (libgomp default)'} for roberta.cpp; load average {load_before:.2f} before, {load_after:.2f} after; "
          f"{args.rounds} rounds, {time.time() - t_start:.0f} s.")
    print()
    print(f"Command: `python3 bench/compare.py --model {args.model} --threads {args.threads} --rounds {args.rounds}"
          f"{' --skip-train' if args.skip_train else ''}{' --skip-infer' if args.skip_infer else ''}"
          f"{' --busy-threshold ' + bt if bt != '0.3' else ''}"
          f"{' --roberta-omp-wait ' + args.roberta_omp_wait if args.roberta_omp_wait else ''}"
          f"{' --torch-bf16 ' + args.torch_bf16 if args.torch_bf16 != 'auto' else ''}`")
    print()
    if not torch_bf16:
        print("PyTorch's bf16 runs were skipped: this CPU has no bf16 units (`--torch-bf16 on` forces them).")
        print()
    print("| mode | shape | engine | precision | ms (median of rounds) | seq/s | tok/s | max others_cores | "
          "busy retries |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in configs:
        print(f"| {c.mode} | {c.batch}x{c.seq} | {c.engine} | {c.precision} | {c.ms():.2f} | {c.seq_per_s():.1f} | "
              f"{c.tok_per_s():.0f} | {c.others():.2f} | {c.retries()} |")
    print()
    print(f"roberta-base safetensors -> first answer (`roberta predict --model {args.model} --precision bf16 \"hi\"`, "
          f"whole process): median {statistics.median(first_answer):.2f} s over {len(first_answer)} runs "
          f"(goal <= 0.5 s, issue 15; issue 5 asked <= 1 s).")
    print()

    def get(k):
        return by[k] if k in by and by[k].results else None

    goals = []

    def ratio(name, num, den, op, target, unit):
        if num is None or den is None:
            return
        v = num / den
        if target is None:  # reported, no goal
            goals.append(f"| {name} | {v:.2f}x | — | |")
            return
        met = v >= target if op == ">=" else v <= target
        goals.append(f"| {name} | {v:.2f}x | {op} {target}x | {'met' if met else 'NOT met'} |")

    if not args.skip_infer:
        b_bf = get("infer 32x64 roberta.cpp bf16")
        b_i8 = get("infer 32x64 roberta.cpp int8")
        t_ac = get("infer 32x64 pytorch bf16-autocast")
        t_bw = get("infer 32x64 pytorch bf16-weights")
        o_32 = get("infer 32x64 onnxruntime fp32")
        best_torch_bf = max((x for x in (t_ac, t_bw) if x), key=lambda x: x.seq_per_s(), default=None)
        if b_bf and best_torch_bf:
            ratio(f"32x64 throughput: bf16 vs PyTorch bf16 ({best_torch_bf.precision}, the faster)",
                  b_bf.seq_per_s(), best_torch_bf.seq_per_s(), ">=", 2.5, "")
        if b_bf and o_32:
            ratio("32x64 throughput: bf16 vs ONNX Runtime fp32", b_bf.seq_per_s(), o_32.seq_per_s(), ">=", 6, "")
        if b_i8 and b_bf:
            ratio("32x64 throughput: int8 vs our bf16 (issue 15; issue 5 asked 1.6x)", b_i8.seq_per_s(), b_bf.seq_per_s(),
                  ">=", 1.8, "")
        l_bf = get("infer 1x32 roberta.cpp bf16")
        l_i8 = get("infer 1x32 roberta.cpp int8")
        l_tw = get("infer 1x32 pytorch bf16-weights")
        l_o = get("infer 1x32 onnxruntime fp32")
        if l_bf and l_tw:
            ratio("1x32 latency: bf16 vs PyTorch bf16-weights", l_bf.ms(), l_tw.ms(), "<=", 0.5, "")
        if l_bf and l_o:
            ratio("1x32 latency: bf16 vs ONNX Runtime fp32", l_bf.ms(), l_o.ms(), "<=", 0.4, "")
        if l_i8 and l_o:
            ratio("1x32 latency: int8 vs ONNX Runtime fp32", l_i8.ms(), l_o.ms(), "<=", 0.25, "")
        # fp32 against fp32: the like-for-like line on every CPU (the only one without bf16 units).
        for shape in ("32x64", "1x32"):
            ours32, t32 = get(f"infer {shape} roberta.cpp fp32"), get(f"infer {shape} pytorch fp32")
            o32 = get(f"infer {shape} onnxruntime fp32")
            if ours32 and t32:
                ratio(f"{shape} throughput: fp32 vs PyTorch fp32", ours32.seq_per_s(), t32.seq_per_s(), ">=", None, "")
            if ours32 and o32:
                ratio(f"{shape} throughput: fp32 vs ONNX Runtime fp32", ours32.seq_per_s(), o32.seq_per_s(), ">=",
                      None, "")
    if not args.skip_train:
        tr_bf = get("train 32x64 roberta.cpp bf16")
        tr_tac = get("train 32x64 pytorch bf16-autocast")
        if tr_bf and tr_tac:
            ratio("train step 32x64: bf16 vs PyTorch bf16 autocast (tokens/s)", tr_bf.tok_per_s(), tr_tac.tok_per_s(),
                  ">=", 3, "")
        tr_32, tr_t32 = get("train 32x64 roberta.cpp fp32"), get("train 32x64 pytorch fp32")
        if tr_32 and tr_t32:
            ratio("train step 32x64: fp32 vs PyTorch fp32 (tokens/s)", tr_32.tok_per_s(), tr_t32.tok_per_s(), ">=",
                  None, "")
    if goals:
        print("| goal (issues 5 and 15) | ratio in this run | target | |")
        print("|---|---|---|---|")
        print("\n".join(goals))


if __name__ == "__main__":
    main()
