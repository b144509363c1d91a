#!/usr/bin/env bash
# Data-parallel throughput: `roberta train` tokens/s with 1 rank x 1 thread against 2 ranks x 1
# thread each (torchrun-style variables on one machine), per-process batch 32 x 64 tokens, the
# `small` preset (6 layers, hidden 512). Every row is cut to exactly 64 tokens (three tweets
# joined, --max-length 64), so both runs see the same tokens per step per process.
# Prints both train_tokens_per_second figures, their ratio and the mean exposed comm share
# (the all-reduce time the step waited for; the rest is hidden behind the backward).
# Extra flags for both runs (e.g. --dist-no-overlap) go in RC_BENCH_FLAGS.
# Usage: bench/dist/tokens_per_second.sh [build-dir] [steps]     (defaults: build 30)
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
STEPS=${2:-30}
BIN=$BUILD/cli/roberta
TOK=${RC_TOKENIZER:-data/roberta-base-tokenizer}
[ -d "$TOK" ] || TOK=/work/shared/data/roberta-base-tokenizer
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

mkdir -p "$WORK/data"
T=data/tweeteval/sentiment/train_text.txt
paste -d' ' <(sed -n 1,4096p $T) <(sed -n 2,4097p $T) <(sed -n 3,4098p $T) > "$WORK/data/train_text.txt"
head -4096 data/tweeteval/sentiment/train_labels.txt > "$WORK/data/train_labels.txt"
cp data/tweeteval/sentiment/mapping.txt "$WORK/data/"
"$BIN" init --config small --tokenizer "$TOK" --labels negative,neutral,positive --output "$WORK/model" >/dev/null

args=(train --model "$WORK/model" --data "$WORK/data" --max-steps "$STEPS" --batch-size 32 --max-length 64
      --dropout 0.1 --threads 1 --no-progress --eval-every 100000 ${RC_BENCH_FLAGS:-})
tps() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["train_tokens_per_second"])' "$1"; }

"$BIN" "${args[@]}" --output "$WORK/one" > "$WORK/one.json" 2> "$WORK/one.log"
PORT=$((20000 + RANDOM % 20000))
RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
  "$BIN" "${args[@]}" --output "$WORK/two" > "$WORK/two.json" 2> "$WORK/two.log" &
p0=$!
RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
  "$BIN" "${args[@]}" --output "$WORK/two_rank1" > /dev/null 2> "$WORK/two_rank1.log" &
p1=$!
wait $p0
wait $p1

one=$(tps "$WORK/one/train_results.json")
two=$(tps "$WORK/two/train_results.json")
share=$(/usr/bin/python3 -c '
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1]) if l.strip()][2:]  # the first steps warm up
n=max(1,len(rows))
print("%.3f (all communication: %.3f; overlapped with the backward: %s)" % (
    sum(r["comm_share"] for r in rows)/n, sum(r["comm_time_s"]/r["step_time_s"] for r in rows)/n,
    rows[0].get("comm_overlap") if rows else "?"))' "$WORK/two/metrics.jsonl")
echo "1 rank  x 1 thread, batch 32 x 64: $one tokens/s"
echo "2 ranks x 1 thread, batch 32 x 64 each: $two tokens/s"
/usr/bin/python3 -c "print('speed-up: %.2fx; mean exposed comm share of a step: $share' % ($two/$one))"
