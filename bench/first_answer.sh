#!/usr/bin/env bash
# First answer from a roberta-base-shaped safetensors folder: process start to the first
# prediction printed, `roberta predict --model DIR --precision P "hi"` as a user runs it
# (issue 15 goal: <= 0.5 s). Makes the random checkpoint when missing; prints each run and
# the median, then where a load spends its time (`roberta bench`'s load_ms / pack_ms).
#
#   bench/first_answer.sh [ROBERTA_BIN] [MODEL_DIR] [RUNS] [PRECISION]
#   defaults: build/cli/roberta /tmp/rb-base 5 bf16
set -euo pipefail
bin=${1:-build/cli/roberta}
model=${2:-/tmp/rb-base}
runs=${3:-5}
precision=${4:-bf16}
here=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$bin" ] || { echo "first_answer: $bin is not built (cmake --build build --target roberta)" >&2; exit 2; }
if [ ! -f "$model/config.json" ]; then
  echo "making $model ..." >&2
  /usr/bin/python3 "$here/tools/make_checkpoint.py" --size base --out "$model" >&2
fi
cat "$model/model.safetensors" > /dev/null  # page cache warm, as for a server restart
times=()
for i in $(seq "$runs"); do
  t0=$(date +%s.%N)
  "$bin" predict --model "$model" --precision "$precision" --threads 2 "hi" > /dev/null
  t1=$(date +%s.%N)
  t=$(echo "$t1 - $t0" | bc -l)
  times+=("$t")
  printf 'run %d: %.3f s\n' "$i" "$t"
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "median first answer: %.3f s over %d runs (goal <= 0.5 s), load average %s\n", m, NR, "'"$(cut -d' ' -f1 /proc/loadavg)"'"}'
"$bin" bench infer --model "$model" --precision "$precision" --batch-size 1 --seq-len 8 --iters 1 --warmup 0 --threads 2 \
  --busy-threshold 1000 | python3 -c 'import json,sys; j=json.loads(sys.stdin.readline()); print("of which: checkpoint load %.0f ms, weight packing %.0f ms" % (j["load_ms"], j["pack_ms"]))'
