#!/usr/bin/env bash
# First answer from a roberta-base-shaped safetensors folder: process start to the first
# prediction printed, `roberta predict --model DIR --precision P "hi"` as a user runs it
# (issue 15 goal: <= 0.5 s). Makes the random checkpoint when missing; prints each run and
# the median, then where one load spends its time and the peak RSS.
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
# Where one load spends its time (the classifier's RC_LOG_LEVEL=debug timings: the tokenizer is
# read on its own thread while the checkpoint loads and packs) and the process's peak RSS.
RC_LOG_LEVEL=debug python3 - "$bin" "$model" "$precision" <<'PY'
import resource, subprocess, sys
bin, model, precision = sys.argv[1:4]
r = subprocess.run([bin, "predict", "--model", model, "--precision", precision, "--threads", "2", "hi"],
                   capture_output=True, text=True)
for line in r.stderr.splitlines():
    if "model:" in line:
        print("of which:", line.split("model:", 1)[1].strip())
print("peak RSS: %.0f MB" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024))
PY
