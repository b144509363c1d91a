#!/usr/bin/python3
"""Side-by-side embedding throughput (issue 31), on ONE model and ONE batch of texts:

  1. `roberta serve`'s /embed against /predict: the same body ({"inputs": texts}), the same
     model body (a classifier folder; /embed serves it with --pooling mean), one request at a
     time, median latency and texts/s. Both answers run the whole encoder; /predict's last
     layer runs on the first token only.
  2. Our /embed against ONNX Runtime (npm onnxruntime-node, bench/ort/bench_ort_embed.mjs) and
     PyTorch (tools/roberta_ref.py, torch 1.13) on the same token ids (the server's /tokenize of
     the same texts, padded into one batch) with mean pooling. Ours is timed over HTTP (its
     tokenization and JSON included), theirs in-process on ready ids: the ratios are
     conservative for us. The three embeddings are compared first (max |diff|).

    /usr/bin/python3 bench/embed_side_by_side.py [--roberta build/cli/roberta] [--model DIR | --shape small]
        [--batch 32] [--words 48] [--threads 2] [--iters 20] [--skip-ort] [--skip-torch]
        [--cls] [--skip-reference]

The servers' requests are interleaved (one of each route per iteration) and each ratio is
also given as the median of the per-iteration ratios: a load on the machine then falls on
both routes alike.

Without --model a random classifier is made with `roberta init --config SHAPE`. ORT needs
`npm ci --prefix bench/ort` once (skipped with a note when missing). Prints one JSON line per
measurement, then the ratios. Figures from a loaded machine mean nothing: run it on a quiet one.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))

WORDS = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge "
         "boxing matches near the old river bank and everyone cheers loudly").split()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, path: str, body) -> object:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


class Server:
    def __init__(self, roberta, model, threads, extra):
        self.port = free_port()
        self.proc = subprocess.Popen([roberta, "serve", "--model", f"m={model}", "--port", str(self.port),
                                      "--management-port", "-1", "--threads", str(threads), "--precision", "fp32",
                                      *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"roberta serve exited: {self.proc.stderr.read().decode(errors='replace')}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2)
                return
            except Exception:
                time.sleep(0.2)
        raise SystemExit("roberta serve did not become healthy in 120 s")

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def time_interleaved(calls, iters, warmup):
    """calls: {name: (port, path, body)}. One request of each in turn per iteration, so that a
    load on the machine falls on every route alike (the ratios then hold under load where the
    absolute figures do not). Returns {name: [ms, ...]}."""
    for _ in range(warmup):
        for port, path, body in calls.values():
            post(port, path, body)
    times = {name: [] for name in calls}
    for _ in range(iters):
        for name, (port, path, body) in calls.items():
            t0 = time.perf_counter()
            post(port, path, body)
            times[name].append((time.perf_counter() - t0) * 1e3)
    return times


def cpu_seconds(pid):
    """The server's user + system CPU time (Linux /proc; None elsewhere). On a loaded machine
    this is what a request cost, where its latency also holds the time it waited for a core."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


def line(engine, what, batch, ms, **extra):
    d = {"engine": engine, "what": what, "batch": batch, "ms_median": round(ms, 3),
         "texts_per_s": round(batch / ms * 1e3, 2), **extra}
    print(json.dumps(d))
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--roberta", default=os.path.join(REPO, "build", "cli", "roberta"))
    ap.add_argument("--model", help="HF classifier (or encoder) folder; default: roberta init --config SHAPE")
    ap.add_argument("--shape", default="small", help="tiny | small | base (without --model)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--words", type=int, default=48, help="words per text")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--skip-ort", action="store_true")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--cls", action="store_true", help="also time /embed with --pooling cls")
    ap.add_argument("--skip-reference", action="store_true",
                    help="the server ratios only: no PyTorch / ONNX Runtime check or timing")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rc-embed-bench-")
    servers = []
    try:
        model = args.model
        if not model:
            model = os.path.join(work, "model")
            subprocess.run([args.roberta, "init", "--config", args.shape, "--tokenizer",
                            os.path.join(REPO, "assets", "tokenizer", "roberta-base"), "--labels", "negative,positive",
                            "--output", model, "--seed", "1"], check=True, stdout=subprocess.DEVNULL)
        texts = [" ".join(WORDS[(i + k) % len(WORDS)] for k in range(args.words)) for i in range(args.batch)]
        body = {"inputs": texts}

        predict = Server(args.roberta, model, args.threads, [])
        servers.append(predict)
        embed = Server(args.roberta, model, args.threads, ["--pooling", "mean"])
        servers.append(embed)
        calls = {"predict": (predict.port, "/predict", {"inputs": [[t] for t in texts]}),  # TEI's batch: [[text], ...]
                 "embed": (embed.port, "/embed", dict(body, normalize=False))}
        if args.cls:  # the same body pooled on <s>: the last layer runs on that row only, as /predict's
            embed_cls = Server(args.roberta, model, args.threads, ["--pooling", "cls"])
            servers.append(embed_cls)
            calls["embed_cls"] = (embed_cls.port, "/embed", dict(body, normalize=False))
        pids = {"predict": predict.proc.pid, "embed": embed.proc.pid}
        if args.cls:
            pids["embed_cls"] = embed_cls.proc.pid
        cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
        times = time_interleaved(calls, args.iters, args.warmup)
        results = {}
        for name, (_, path, _) in calls.items():
            cpu1 = cpu_seconds(pids[name])
            extra = {}
            if cpu1 is not None and cpu0[name] is not None:  # warm-up requests included
                extra["server_cpu_ms_per_request"] = round((cpu1 - cpu0[name]) / (args.iters + args.warmup) * 1e3, 1)
            results[name] = line("roberta.cpp", path + (" (cls)" if name == "embed_cls" else ""), args.batch,
                                 statistics.median(times[name]), **extra)
        for name in calls:
            if name != "predict":
                pair = [e / p for e, p in zip(times[name], times["predict"])]
                ratio = {"ratio": f"{name}/predict", "median_of_interleaved_pairs": round(statistics.median(pair), 3),
                         "of_medians": round(results[name]["ms_median"] / results["predict"]["ms_median"], 3)}
                if "server_cpu_ms_per_request" in results[name]:
                    ratio["of_server_cpu"] = round(results[name]["server_cpu_ms_per_request"] /
                                                   results["predict"]["server_cpu_ms_per_request"], 3)
                print(json.dumps(ratio))
        if args.skip_reference:
            return
        ours = post(embed.port, "/embed", dict(body, normalize=False))
        toks = post(embed.port, "/tokenize", {"inputs": texts, "add_special_tokens": True})
        ids = [[t["id"] for t in row] for row in toks]
        T = max(len(r) for r in ids)
        import torch  # after the servers: the import is slow and not measured
        import roberta_ref as rr
        import hf_io
        pad = json.load(open(os.path.join(model, "config.json"))).get("pad_token_id", 1)
        input_ids = torch.tensor([r + [pad] * (T - len(r)) for r in ids], dtype=torch.int64)
        mask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r in ids], dtype=torch.int64)

        config = rr.RobertaConfig.from_pretrained(model)
        encoder = rr.RobertaModel(config)
        sd = rr.normalize_hf_keys(hf_io.load_state_dict(model))
        encoder.load_state_dict({k[len("roberta."):]: v.float() for k, v in sd.items() if k.startswith("roberta.")
                                 and not k.startswith("roberta.pooler.")})
        encoder.eval()

        class MeanPooled(torch.nn.Module):
            def __init__(self, enc):
                super().__init__()
                self.enc = enc

            def forward(self, input_ids, attention_mask):
                h = self.enc(input_ids, attention_mask)
                m = attention_mask.unsqueeze(-1).to(h.dtype)
                return (h * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)  # Pooling.py's mean

        pooled = MeanPooled(encoder).eval()
        torch.set_num_threads(args.threads)
        with torch.inference_mode():
            ref = pooled(input_ids, mask)
        ours_t = torch.tensor(ours)
        print(json.dumps({"check": "ours vs pytorch", "max_abs_diff": float((ours_t - ref).abs().max())}))

        if not args.skip_torch:
            with torch.inference_mode():
                for _ in range(args.warmup):
                    pooled(input_ids, mask)
                times = []
                for _ in range(args.iters):
                    t0 = time.perf_counter()
                    pooled(input_ids, mask)
                    times.append((time.perf_counter() - t0) * 1e3)
            results["torch"] = line(f"pytorch-{torch.__version__}", "forward+mean", args.batch,
                                    statistics.median(times), seq=T,
                                    omp_wait_policy=os.environ.get("OMP_WAIT_POLICY", ""))

        runner = os.path.join(REPO, "bench", "ort", "bench_ort_embed.mjs")
        if not args.skip_ort and not os.path.isdir(os.path.join(REPO, "bench", "ort", "node_modules",
                                                                "onnxruntime-node")):
            print(json.dumps({"note": "ONNX Runtime skipped: run `npm ci --prefix bench/ort` first"}))
        elif not args.skip_ort:
            onnx_path = os.path.join(work, "embed.onnx")
            warnings.filterwarnings("ignore", category=UserWarning)  # torch 1.13's export shape-inference notes
            with torch.no_grad():
                torch.onnx.export(pooled, (input_ids[:2, :8], mask[:2, :8]), onnx_path,
                                  input_names=["input_ids", "attention_mask"], output_names=["embedding"],
                                  dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                                "attention_mask": {0: "batch", 1: "sequence"},
                                                "embedding": {0: "batch"}},
                                  opset_version=14, do_constant_folding=True)
            inputs = os.path.join(work, "ids.json")
            with open(inputs, "w") as f:
                json.dump({"input_ids": input_ids.tolist(), "attention_mask": mask.tolist()}, f)
            out = subprocess.run(["node", runner, "--model", onnx_path, "--inputs", inputs, "--threads",
                                  str(args.threads), "--iters", str(args.iters), "--warmup", str(args.warmup)],
                                 check=True, capture_output=True, text=True).stdout
            o = json.loads(out.strip().splitlines()[-1])
            diff = float((torch.tensor(o["embedding"]) - ours_t).abs().max())
            print(json.dumps({"check": "ours vs onnxruntime", "max_abs_diff": diff}))
            results["ort"] = line(o["engine"], "session.run", args.batch, o["ms_median"], seq=T)

        r = {"embed_over_predict_latency": results["embed"]["ms_median"] / results["predict"]["ms_median"]}
        for k in ("torch", "ort"):
            if k in results:
                r[f"{k}_over_ours_latency"] = results[k]["ms_median"] / results["embed"]["ms_median"]
        print(json.dumps({"ratios": {k: round(v, 3) for k, v in r.items()},
                          "note": "latency ratios; >1 in *_over_ours means ours is faster"}))
    finally:
        for s in servers:
            s.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
