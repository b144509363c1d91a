#!/usr/bin/env bash
# Issue 12's goals on loopback, in one run against tests/hub/mock_hub.py:
#   1. download throughput of `roberta` vs `curl -o FILE` fetching the same URL from the same
#      server (ratio, printed on the last line; goal >= 0.90),
#   2. bytes re-downloaded on a warm cache (goal 0, from the server's request log),
#   3. first answer from a warm-cache Hub id vs the same model as a local folder
#      (median of N runs; goal: within 50 ms).
# Usage: bench/hub_download.sh [BUILD_DIR] (default build); SIZE_MB=512 RUNS=5 to change.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
ROBERTA=$BUILD/cli/roberta
SIZE_MB=${SIZE_MB:-512}
RUNS=${RUNS:-5}
TMP=$(mktemp -d /tmp/rc-hub-bench.XXXXXX)
MOCK_PID=
cleanup() { [ -n "$MOCK_PID" ] && kill "$MOCK_PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

# A valid checkpoint whose safetensors is SIZE_MB large: the tiny model plus one padding
# tensor (reported as unexpected, never read), so `inspect` times the download itself.
python3 - "$ROOT/tests/data/tiny/model.safetensors" "$TMP/big.safetensors" "$SIZE_MB" <<'PY'
import json, struct, sys, os
src, dst, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
raw = open(src, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n]); data = raw[8 + n:]
pad = mb * (1 << 20)
header["zz_padding"] = {"dtype": "U8", "shape": [pad], "data_offsets": [len(data), len(data) + pad]}
h = json.dumps(header).encode(); h += b" " * (-len(h) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(h))); f.write(h); f.write(data)
    chunk = os.urandom(1 << 20)
    for _ in range(mb): f.write(chunk)
PY

python3 "$ROOT/tests/hub/mock_hub.py" --data "$ROOT/tests/data/tiny" --port-file "$TMP/ports.json" \
  --big "$TMP/big.safetensors" >"$TMP/mock.log" 2>&1 &
MOCK_PID=$!
for _ in $(seq 100); do [ -s "$TMP/ports.json" ] && break; sleep 0.1; done
HUB=http://127.0.0.1:$(python3 -c "import json;print(json.load(open('$TMP/ports.json'))['hub'])")
export HF_ENDPOINT=$HUB RC_PROGRESS=0
now() { date +%s.%N; }
log_bytes() { curl -s "$HUB/_log" | python3 -c "import json,sys; print(sum(e['bytes'] for e in json.load(sys.stdin)))"; }
reset() { curl -s -X POST -d '{"reset": true}' "$HUB/_control" >/dev/null; }

# 1. Throughput, RUNS rounds, each: curl -o a file, curl -o /dev/null, then roberta cold (a fresh
# cache) minus roberta warm (the same load without the download). Medians. curl once first so
# the page cache holds the served file for everyone.
URL=$HUB/org/big/resolve/main/model.safetensors
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
curl -sSfL -o "$TMP/curl.bin" "$URL"
: >"$TMP/t_curl"; : >"$TMP/t_null"; : >"$TMP/t_rc"
for i in $(seq "$RUNS"); do
  t0=$(now); curl -sSfL -o "$TMP/curl.bin" "$URL"; t1=$(now); echo "$t1 - $t0" | bc -l >>"$TMP/t_curl"
  t0=$(now); curl -sSfL -o /dev/null "$URL"; t1=$(now); echo "$t1 - $t0" | bc -l >>"$TMP/t_null"
  rm -rf "$TMP/cache1"
  t0=$(now); HF_HUB_CACHE=$TMP/cache1 "$ROBERTA" inspect --model org/big >/dev/null 2>"$TMP/cold.err"; t1=$(now)
  t2=$(now); HF_HUB_CACHE=$TMP/cache1 "$ROBERTA" inspect --model org/big >/dev/null 2>&1; t3=$(now)
  echo "($t1 - $t0) - ($t3 - $t2)" | bc -l >>"$TMP/t_rc"
done
cmp "$TMP/curl.bin" "$TMP/cache1/models--org--big/snapshots/"*/model.safetensors
BYTES=$(stat -c %s "$TMP/curl.bin")
CURL_S=$(median <"$TMP/t_curl"); NULL_S=$(median <"$TMP/t_null"); RC_S=$(median <"$TMP/t_rc")
mbps() { echo "$BYTES / $1 / 1000000" | bc -l; }

# 2. Warm cache: bytes the server sent for a second fetch.
reset
HF_HUB_CACHE=$TMP/cache1 "$ROBERTA" inspect --model org/big >/dev/null 2>&1
echo "warm cache: $(log_bytes) bytes re-downloaded (goal 0)"

# 3. First answer: warm-cache Hub id vs local folder, median of RUNS.
HF_HUB_CACHE=$TMP/cache2 "$ROBERTA" predict --model org/tiny "x" >/dev/null 2>&1  # fill the cache
time_runs() {
  for _ in $(seq "$RUNS"); do
    t0=$(now); "$@" >/dev/null 2>&1; t1=$(now); echo "($t1 - $t0) * 1000" | bc -l
  done | median
}
LOCAL_MS=$(time_runs "$ROBERTA" predict --model "$ROOT/tests/data/tiny" "I love it")
HUB_MS=$(HF_HUB_CACHE=$TMP/cache2 time_runs "$ROBERTA" predict --model org/tiny "I love it")
OFF_MS=$(HF_HUB_CACHE=$TMP/cache2 HF_HUB_OFFLINE=1 time_runs "$ROBERTA" predict --model org/tiny "I love it")
printf 'first answer: local folder %.1f ms, warm Hub id %.1f ms (+%.1f), offline Hub id %.1f ms (+%.1f); goal within 50 ms\n' \
  "$LOCAL_MS" "$HUB_MS" "$(echo "$HUB_MS - $LOCAL_MS" | bc -l)" "$OFF_MS" "$(echo "$OFF_MS - $LOCAL_MS" | bc -l)"
# Last line: the throughput ratio (issue 12's goal), for scripts and for the eye.
printf 'curl -o /dev/null: %.0f MB/s (for reference: no file written)\n' "$(mbps "$NULL_S")"
printf 'throughput: curl -o file %.0f MB/s, roberta %.0f MB/s, ratio %.2f (%d MiB file, median of %d; goal >= 0.90)\n' \
  "$(mbps "$CURL_S")" "$(mbps "$RC_S")" "$(echo "$CURL_S / $RC_S" | bc -l)" "$SIZE_MB" "$RUNS"
