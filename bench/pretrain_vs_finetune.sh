#!/usr/bin/env bash
# Pretraining tokens/s against fine-tuning tokens/s at the same model and batch shape
# (issue #14's goal: within 10%; the tied decoder runs on the masked ~15% of tokens only).
# Both runs take the same texts (TweetEval sentiment train), batch, max length, precision and
# threads; the figure is the median of metrics.jsonl's per-step tokens_per_second after warm-up.
#   bench/pretrain_vs_finetune.sh [BIN] [CONFIG=tiny] [STEPS=40] [THREADS=2] [BATCH=32]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/cli/roberta}
CONFIG=${2:-tiny}
STEPS=${3:-40}
THREADS=${4:-2}
BATCH=${5:-32}
OUT=$(mktemp -d /tmp/rc-bench-pretrain.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
DATA=data/tweeteval/sentiment
"$BIN" init --config "$CONFIG" --tokenizer assets/tokenizer/roberta-base --labels negative,neutral,positive \
  --output "$OUT/init" > /dev/null
COMMON=(--max-steps "$STEPS" --batch-size "$BATCH" --max-length 64 --threads "$THREADS" --bf16 --logging-steps 1000)
"$BIN" train --model "$OUT/init" --data "$DATA" --output "$OUT/ft" "${COMMON[@]}" --eval-every 100000 \
  --no-progress > /dev/null 2>&1
"$BIN" pretrain --model "$OUT/init" --data "$DATA/train_text.txt" --output "$OUT/pt" "${COMMON[@]}" \
  --validation-split-percentage 0 > /dev/null 2>&1
median() {  # median tokens_per_second of the steps after the first 5
  /usr/bin/python3 -c 'import json,sys,statistics
v=[json.loads(l)["tokens_per_second"] for l in open(sys.argv[1])][5:]
print(f"{statistics.median(v):.0f}")' "$1"
}
FT=$(median "$OUT/ft/metrics.jsonl")
PT=$(median "$OUT/pt/metrics.jsonl")
/usr/bin/python3 -c "import sys; ft,pt=float(sys.argv[1]),float(sys.argv[2]); print(f'{{\"config\": \"$CONFIG\", \"batch\": $BATCH, \"max_length\": 64, \"threads\": $THREADS, \"finetune_tokens_per_s\": {ft:.0f}, \"pretrain_tokens_per_s\": {pt:.0f}, \"ratio\": {pt/ft:.3f}}}')" "$FT" "$PT"
