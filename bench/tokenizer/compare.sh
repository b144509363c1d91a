#!/usr/bin/env bash
# Single-thread encode throughput: rc::Tokenizer (bench_tokenizer) vs Hugging Face's Rust
# tokenizers (hf_tokenizer.mjs, encodeBatch with RAYON_NUM_THREADS=1), same texts (one per
# line, only the newline stripped), same tokenizer files. The two run interleaved, ROUNDS
# times, alternating which goes first; each run times PASSES passes (pass 0 cold). Prints
# medians of the warm passes: texts/s, tokens/s, MB/s and the ratio rc / hf.
#
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRC_BUILD_BENCH=ON
#   cmake --build build --target bench_tokenizer
#   bench/tokenizer/compare.sh build [ROUNDS=5] [PASSES=3]
#
# Env: TEXTS (default data/tweeteval/sentiment/train_text.txt), TOKENIZER (default
# assets/tokenizer/roberta-base). On a shared machine a pass in which a process got < 90%
# of a core is "busy"; wall-clock medians use clean passes when there are >= 3, and CPU-time
# rates (work / CPU seconds, robust to being descheduled) are printed beside them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rounds=${2:-5}
passes=${3:-3}
texts=${TEXTS:-$root/data/tweeteval/sentiment/train_text.txt}
tokdir=${TOKENIZER:-$root/assets/tokenizer/roberta-base}
bin="$build/bench/bench_tokenizer"
if [[ ! -x "$bin" ]]; then
  echo "compare.sh: $bin not found; build it with" >&2
  echo "  cmake -S $root -B $build -DRC_BUILD_BENCH=ON && cmake --build $build --target bench_tokenizer" >&2
  exit 1
fi
if [[ ! -d "$here/node_modules/@anush008/tokenizers" ]]; then
  (cd "$here" && npm install --no-audit --no-fund >&2)
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run_rc() { "$bin" --tokenizer "$tokdir" --texts "$texts" --passes "$passes" >>"$out"; }
run_hf() { RAYON_NUM_THREADS=1 node "$here/hf_tokenizer.mjs" --tokenizer "$tokdir" --texts "$texts" --passes "$passes" >>"$out"; }
for ((r = 1; r <= rounds; ++r)); do
  if ((r % 2)); then run_rc; run_hf; else run_hf; run_rc; fi
  echo "round $r/$rounds done" >&2
done
node - "$out" <<'JS'
const fs = require('fs');
const rows = fs.readFileSync(process.argv[2], 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const n = s.length;
  return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN; };
const res = {};
for (const impl of ['rc', 'hf']) {
  const mine = rows.filter((r) => r.impl === impl);
  const warm = mine.filter((r) => !r.cold), cold = mine.filter((r) => r.cold);
  const clean = warm.filter((r) => !r.busy);
  const timed = clean.length >= 3 ? clean : warm;
  const { texts, tokens, bytes } = mine[0];
  const wall = median(timed.map((r) => r.seconds)), cpu = median(warm.map((r) => r.cpu_seconds));
  res[impl] = { texts, tokens, bytes, wall, cpu, cold: median(cold.map((r) => r.seconds)),
    clean: clean.length, warm: warm.length };
}
if (res.rc.tokens !== res.hf.tokens) console.log(`WARNING: token counts differ: rc ${res.rc.tokens}, hf ${res.hf.tokens}`);
const f = (x, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
console.log(`texts ${f(res.rc.texts)}, ${f(res.rc.bytes / 1e6, 2)} MB, tokens ${f(res.rc.tokens)} (rc) / ${f(res.hf.tokens)} (hf)`);
console.log('impl  wall s   texts/s    tokens/s     MB/s   | cpu s   texts/s(cpu)  tokens/s(cpu) | cold wall s | clean/warm passes');
for (const impl of ['rc', 'hf']) {
  const r = res[impl];
  console.log(`${impl}    ${f(r.wall, 3).padStart(6)} ${f(r.texts / r.wall).padStart(9)} ${f(r.tokens / r.wall).padStart(11)} ${f(r.bytes / r.wall / 1e6, 2).padStart(7)}   | ${f(r.cpu, 3).padStart(6)} ${f(r.texts / r.cpu).padStart(12)} ${f(r.tokens / r.cpu).padStart(13)}  | ${f(r.cold, 3).padStart(10)}  | ${r.clean}/${r.warm}`);
}
console.log(`ratio rc/hf (throughput): wall ${f(res.hf.wall / res.rc.wall, 2)}x, cpu-time ${f(res.hf.cpu / res.rc.cpu, 2)}x, cold wall ${f(res.hf.cold / res.rc.cold, 2)}x`);
JS
