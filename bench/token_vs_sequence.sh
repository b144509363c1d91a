#!/usr/bin/env bash
# Issue 29's goal: a token classifier's inference throughput within 10% of a sequence
# classifier of the same size and batch. Both models share one body (`roberta init --config
# SHAPE`); the token head is put on it by one step of `train --task token-classification`.
# Both run `roberta bench infer` in the same process order, same threads, same shapes.
# Usage: [ITERS=20] bench/token_vs_sequence.sh [path/to/roberta] [shape: tiny|small|base] [threads] [batch] [seq_len]
set -euo pipefail
BIN=${1:-build/cli/roberta}
SHAPE=${2:-small} THREADS=${3:-2} BATCH=${4:-32} SEQ=${5:-64}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$BIN" init --config "$SHAPE" --tokenizer assets/tokenizer/roberta-base --labels negative,neutral,positive \
  --output "$W/seq" --seed 1 > /dev/null
printf '%s\n' '{"tokens": ["Ann", "went", "to", "Rome"], "ner_tags": ["B-PER", "O", "O", "B-LOC"]}' > "$W/ner.jsonl"
"$BIN" train --model "$W/seq" --task token-classification --data "$W/ner.jsonl" --output "$W/tok" \
  --labels O,B-PER,I-PER,B-LOC,I-LOC,B-ORG,I-ORG,B-MISC,I-MISC --max-steps 1 --batch-size 1 --threads 1 > /dev/null 2>&1
for p in fp32 int8; do
  for m in seq tok; do
    "$BIN" bench infer --model "$W/$m" --batch-size "$BATCH" --seq-len "$SEQ" --precision "$p" \
      --threads "$THREADS" --iters "${ITERS:-20}" 2>/dev/null > "$W/$m-$p.json"
  done
  python3 - "$W/seq-$p.json" "$W/tok-$p.json" "$p" <<'PY'
import json, sys
def tps(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    return rows[-1]["tok_per_s"]
s, t = tps(sys.argv[1]), tps(sys.argv[2])
print(f"{sys.argv[3]}: sequence {s:,.0f} tok/s, token {t:,.0f} tok/s, token/sequence {t / s:.3f}")
PY
done
