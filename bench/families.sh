#!/usr/bin/env bash
# Issue 30's goal: each family's inference and training speed within 5% of RoBERTa's at the
# same size. Same-size random checkpoints (tools/make_family_bench_models.py: LAYERS x HIDDEN,
# the roberta-base vocabulary), then `roberta bench` on each, families interleaved within each
# round (ROUNDS rounds) so drift hits all alike; the median tokens/s per family and its ratio
# to RoBERTa's. Run it on a quiet machine.
# Usage: [ROUNDS=3] [ITERS=10] bench/families.sh [path/to/roberta] [layers] [hidden] [threads]
set -euo pipefail
BIN=${1:-build/cli/roberta}
LAYERS=${2:-6} HIDDEN=${3:-768} THREADS=${4:-2}
ROUNDS=${ROUNDS:-3} ITERS=${ITERS:-10}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
/usr/bin/python3 tools/make_family_bench_models.py "$W" "$LAYERS" "$HIDDEN" > /dev/null
FAMILIES="roberta bert distilbert"
run() {  # mode precision batch seq
  for r in $(seq "$ROUNDS"); do
    for f in $FAMILIES; do
      "$BIN" bench "$1" --model "$W/$f" --precision "$2" --batch-size "$3" --seq-len "$4" --threads "$THREADS" \
        --iters "$ITERS" --warmup 2 2>/dev/null | tail -1 | sed "s/^/$f $1 $2 $3x$4 /" >> "$W/results.txt"
    done
  done
}
run infer fp32 32 64
run infer int8 32 64
run infer fp32 1 32
run train fp32 16 64
if grep -q -w -e avx512_bf16 -e amx_bf16 /proc/cpuinfo; then run infer bf16 32 64; run train bf16 16 64; fi
python3 - "$W/results.txt" "$LAYERS" "$HIDDEN" "$THREADS" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    fam, mode, prec, shape, js = line.split(" ", 4)
    rows.setdefault((mode, prec, shape), {}).setdefault(fam, []).append(json.loads(js)["tok_per_s"])
print(f"{sys.argv[2]} layers x {sys.argv[3]}, {sys.argv[4]} threads; median tokens/s of the rounds, ratio to RoBERTa")
print("| mode | precision | batch x seq | RoBERTa | BERT | DistilBERT |")
print("|---|---|---|---:|---:|---:|")
for (mode, prec, shape), fams in rows.items():
    med = {f: statistics.median(v) for f, v in fams.items()}
    base = med["roberta"]
    cells = [f"{base:,.0f}"] + [f"{med[f]:,.0f} ({med[f] / base:.3f})" for f in ("bert", "distilbert")]
    print(f"| {mode} | {prec} | {shape} | " + " | ".join(cells) + " |")
PY
