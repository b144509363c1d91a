#!/usr/bin/env bash
# The prepared AMX check (issue 15): every figure the issue still lacks, in ONE command, to run in
# a session whose CPU has AMX (Intel Sapphire Rapids or later: `lscpu` lists amx_bf16 and
# amx_int8). The machines of the sessions so far had none (an AVX-512 Xeon without AMX, AMD Zen
# 3), so these are still open; nothing here is needed elsewhere. Quiet machine required: it
# waits for the load average to fall and every runner discards blocks timed next to other work.
#   1. machine: lscpu, the ISA path roberta picks, oneDNN's kernel names for bf16 / int8;
#   2. tests: the CPU suite (ctest -LE "gpu|slow") of a Release build made here, so the AMX
#      paths (oneDNN's amx kernels, bf16 / int8 packed GEMMs, the bf16 training step) run
#      against their references;
#   3. raw GEMM rate (bench_gemm_peak, M = 2048 and 32) - the whole bf16 forward should reach
#      >= 80% of it (compare "tflops" of step 4's JSON with "gemm_tflops" here);
#   4. where the time goes: `roberta bench infer|train --profile` at 32 x 64, bf16 and int8
#      (goals: non-GEMM <= 15% of the forward, <= 25% of the training step);
#   5. first answer from the roberta-base safetensors folder, bf16 and int8 (goal <= 0.5 s);
#   6. side by side (bench/compare.py --rounds 3): bf16 vs PyTorch bf16 (>= 2.5x) and ONNX
#      Runtime fp32 (>= 6x), int8 vs our bf16 (>= 1.8x), bf16 training step vs PyTorch
#      autocast (>= 3x); its last table lists each goal as met / NOT met.
# Everything goes to OUT_DIR (default out/amx-check-<UTC time>/): check.log and one file per
# step; copy the tables into docs/benchmarks.md ("Issue 15") with the machine line.
#
#   scripts/amx-check.sh [--anyway] [--quick] [OUT_DIR]
#     --anyway  run on a CPU without AMX too (the figures then say nothing about AMX: for
#               trying the script itself)
#     --quick   one round, fewer iterations, no training side by side (a dry run of the script)
#   environment: BUILD_DIR (build-amx), MODEL_DIR (/tmp/rb-base), THREADS (2), JOBS (nproc),
#                QUIET_WAIT_S (300: how long to wait for a quiet machine before each timing)
# Takes ~40 min on 2 cores (the build ~15, compare.py ~20). Step 6 needs PyTorch
# (scripts/install-deps.sh installs Debian's python3-torch) and ONNX Runtime (`cd bench/ort &&
# npm install`, once); without them it is skipped and says so.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

anyway=0
quick=0
out=""
for a in "$@"; do
  case "$a" in
    --anyway) anyway=1 ;;
    --quick) quick=1 ;;
    -h | --help)
      sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "amx-check: unknown option $a (try --help)" >&2
      exit 2
      ;;
    *) out=$a ;;
  esac
done

if ! grep -qw amx_bf16 /proc/cpuinfo || ! grep -qw amx_int8 /proc/cpuinfo; then
  if [ "$anyway" = 0 ]; then
    echo "amx-check: this CPU has no AMX (no amx_bf16 / amx_int8 in /proc/cpuinfo); nothing to measure." \
      "Run it where lscpu lists them, or pass --anyway to try the script here." >&2
    exit 2
  fi
  echo "amx-check: no AMX here; running anyway (--anyway): these figures say nothing about AMX" >&2
fi

out=${out:-out/amx-check-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
log="$out/check.log"
build=${BUILD_DIR:-build-amx}
model=${MODEL_DIR:-/tmp/rb-base}
threads=${THREADS:-2}
iters=5
rounds=3
[ "$quick" = 1 ] && iters=2 && rounds=1

say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }

# Timings only on a quiet machine: wait (up to QUIET_WAIT_S, default 300 s) for the 1-minute
# load average to fall below half the threads.
wait_quiet() {
  local waited=0
  while ! awk -v t="$threads" '{exit !($1 < 0.5 * t)}' /proc/loadavg; do
    if [ "$waited" -ge "${QUIET_WAIT_S:-300}" ]; then
      say "load average still $(cut -d' ' -f1 /proc/loadavg) after ${waited} s: timing anyway (see each runner's busy checks)"
      return 0
    fi
    sleep 5
    waited=$((waited + 5))
  done
}

say "1. machine"
{
  lscpu
  echo
  echo "amx flags: $(grep -o -w -E 'amx_(bf16|int8|tile)' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "commit: $(git rev-parse HEAD 2>/dev/null) $(git diff --quiet 2>/dev/null || echo '(with local changes)')"
} > "$out/machine.txt" 2>&1
grep -E "Model name|^CPU\(s\)|amx flags" "$out/machine.txt" | tee -a "$log"

say "2. build ($build, Release) and the CPU tests"
export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-$(command -v ccache || true)}
if ! cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRC_BUILD_TESTS=ON -DRC_BUILD_BENCH=ON \
  > "$out/build.log" 2>&1 || ! cmake --build "$build" -j"${JOBS:-$(nproc)}" >> "$out/build.log" 2>&1; then
  say "build FAILED: $out/build.log"
  tail -20 "$out/build.log" >&2
  exit 1
fi
(cd "$build" && ctest --no-tests=error -LE "gpu|slow" -j"$(nproc)" --output-on-failure > "$out/tests.log" 2>&1)
tests_rc=$?
grep -E "tests passed|tests failed" "$out/tests.log" | tee -a "$log"
# Which tests skipped here (a skip that names AMX, bf16 or VNNI should not appear on this CPU).
grep -E "Skipped|SKIPPED" "$out/tests.log" | sort -u > "$out/tests-skipped.txt"
"$build/cli/roberta" --version >> "$out/machine.txt" 2>&1
RC_LOG_LEVEL=debug "$build/cli/roberta" predict --model tests/data/tiny --precision bf16 "hi" \
  > /dev/null 2> "$out/isa-path.txt" || true

if [ ! -f "$model/config.json" ]; then
  say "making $model (random roberta-base, tools/make_checkpoint.py)"
  /usr/bin/python3 tools/make_checkpoint.py --size base --out "$model" >> "$log" 2>&1
fi

say "3. raw GEMM rate (bench_gemm_peak)"
wait_quiet
for p in bf16 int8; do
  "$build/bench/bench_gemm_peak" --precision "$p" --rows 2048,32 --threads "$threads" 2>&1 |
    tee "$out/gemm-peak-$p.jsonl" >> "$log"
done

say "4. where the time goes (bench --profile, 32 x 64)"
for p in bf16 int8; do
  wait_quiet
  "$build/cli/roberta" bench infer --model "$model" --batch-size 32 --seq-len 64 --precision "$p" \
    --threads "$threads" --warmup 1 --iters "$iters" --profile > "$out/profile-infer-$p.json" \
    2> "$out/profile-infer-$p.txt"
  cat "$out/profile-infer-$p.txt" >> "$log"
done
wait_quiet
"$build/cli/roberta" bench train --model "$model" --batch-size 32 --seq-len 64 --precision bf16 \
  --threads "$threads" --warmup 1 --iters $((iters > 3 ? 3 : iters)) --profile > "$out/profile-train-bf16.json" \
  2> "$out/profile-train-bf16.txt"
cat "$out/profile-train-bf16.txt" >> "$log"

say "5. first answer (bench/first_answer.sh)"
for p in bf16 int8; do
  wait_quiet
  bench/first_answer.sh "$build/cli/roberta" "$model" 7 "$p" > "$out/first-answer-$p.txt" 2>&1
  grep "median" "$out/first-answer-$p.txt" | sed "s/^/$p: /" | tee -a "$log"
done

say "6. side by side (bench/compare.py --rounds $rounds)"
if /usr/bin/python3 -c "import torch" 2> /dev/null && [ -d bench/ort/node_modules ]; then
  wait_quiet
  extra=()
  [ "$quick" = 1 ] && extra+=(--skip-train)
  python3 bench/compare.py --model "$model" --roberta "$build/cli/roberta" --threads "$threads" \
    --rounds "$rounds" --json "$out/compare.jsonl" "${extra[@]}" > "$out/compare.md" 2> "$out/compare.err"
  tail -25 "$out/compare.md" | tee -a "$log"
else
  say "skipped: PyTorch (/usr/bin/python3 -c 'import torch') or bench/ort/node_modules missing" \
    "(scripts/install-deps.sh; cd bench/ort && npm install)"
fi

say "done: $out (tests rc $tests_rc)"
exit "$tests_rc"
