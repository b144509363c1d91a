#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-16, ASan + UBSan; a separate build folder, the GCC
# build is untouched) and runs each for SECONDS (default 20). Fails on any crash,
# sanitizer report, leak, out-of-memory (> 2 GB) or input slower than 1 s.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]     (no TARGET: every fuzz/fuzz_*.cpp)
#        FUZZ_RUNS=10000000 scripts/fuzz.sh 0 fuzz_pickle   (a number of executions instead)
# Env:   FUZZ_BUILD_DIR (build-fuzz)  FUZZ_JOBS (targets at once: nproc)
#        FUZZ_WORK (FUZZ_BUILD_DIR/runs: grown corpora, logs, crash inputs)  CC/CXX (clang-16)
# New inputs go to FUZZ_WORK/<target>/corpus; the committed seeds in fuzz/corpus are only
# read. A crash input is left in FUZZ_WORK/<target>/ and its path printed; reproduce with
#   build-fuzz/fuzz/<target> <crash-file>
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=${1:-20}
[ $# -gt 0 ] && shift
case "$SECONDS_PER_TARGET" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a number, got '$SECONDS_PER_TARGET'" >&2; exit 2;; esac
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
WORK=${FUZZ_WORK:-$BUILD/runs}
mkdir -p "$WORK"
ROOT=$PWD
WORK=$(realpath "$WORK")  # absolute: fuzz_tar runs in a folder of its own
JOBS=${FUZZ_JOBS:-$(nproc)}

if [ $# -gt 0 ]; then
  TARGETS=("$@")
else
  TARGETS=()
  for f in fuzz/fuzz_*.cpp; do TARGETS+=("$(basename "$f" .cpp)"); done
fi
for t in "${TARGETS[@]}"; do
  [ -f "fuzz/$t.cpp" ] || { echo "fuzz.sh: no target '$t' (fuzz/$t.cpp)" >&2; exit 2; }
done

if ! command -v "${CXX:-clang++-16}" >/dev/null; then
  printf "fuzz.sh: %s not found\nHINT: scripts/install-deps.sh installs clang-16 and libfuzzer-16-dev\n" "${CXX:-clang++-16}" >&2
  exit 2
fi
start=$(date +%s)
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=${CC:-clang-16} CXX=${CXX:-clang++-16} cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DRC_BUILD_FUZZ=ON -DRC_BUILD_TESTS=OFF -DRC_BUILD_CLI=OFF -DRC_WITH_ONEDNN=OFF -DRC_WERROR="${RC_WERROR:-OFF}" >/dev/null
fi
cmake --build "$BUILD" --target "${TARGETS[@]}" -j"$(nproc)"
echo "fuzz.sh: build took $(( $(date +%s) - start )) s"

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

run_one() {
  local t=$1 dir="$WORK/$1"
  mkdir -p "$dir/corpus"
  local args=(-timeout=1 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/")
  if [ -n "${FUZZ_RUNS:-}" ]; then args+=(-runs="$FUZZ_RUNS"); else args+=(-max_total_time="$SECONDS_PER_TARGET"); fi
  [ -f "fuzz/dict/$t.dict" ] && args+=(-dict="$ROOT/fuzz/dict/$t.dict")
  # The grown corpus first (libFuzzer writes there), the committed seeds second (read only).
  "$BUILD/fuzz/$t" "${args[@]}" "$dir/corpus" "$ROOT/fuzz/corpus/$t" >"$dir/log" 2>&1
}

rm -f "$WORK"/*/crash-* "$WORK"/*/timeout-* "$WORK"/*/oom-* "$WORK"/*/leak-* 2>/dev/null || true
declare -A PIDS
for t in "${TARGETS[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  run_one "$t" &
  PIDS[$t]=$!
done

fail=0
printf '%-22s %14s %10s %8s  %s\n' target executions exec/s corpus result
for t in "${TARGETS[@]}"; do
  rc=0
  wait "${PIDS[$t]}" || rc=$?
  log="$WORK/$t/log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(find "$WORK/$t/corpus" -type f | wc -l)
  if [ "$rc" -eq 0 ] && ! grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|FUZZ FINDING" "$log"; then
    result=ok
  else
    fail=1
    artifact=$(ls "$WORK/$t"/{crash,timeout,oom,leak,slow-unit}-* 2>/dev/null | head -1 || true)
    result="FAILED (exit $rc) ${artifact:-see $log}"
    grep -m3 -E "ERROR:|runtime error:|FUZZ FINDING|SUMMARY:" "$log" | sed 's/^/    /' >&2 || true
  fi
  printf '%-22s %14s %10s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
done
echo "fuzz.sh: $(( $(date +%s) - start )) s in all"
exit $fail
