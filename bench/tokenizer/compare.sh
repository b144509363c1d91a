#!/usr/bin/env bash
# Single-thread encode throughput: rc::Tokenizer (bench_tokenizer) vs Hugging Face's Rust
# tokenizers (hf_tokenizer.mjs, encodeBatch with RAYON_NUM_THREADS=1), same texts (one per
# line, only the newline stripped), same tokenizer files, for one or several tokenizers in one
# run (byte-level BPE, WordPiece, Unigram side by side). For each tokenizer the two run
# interleaved, ROUNDS times, alternating which goes first; each run times PASSES passes (pass 0
# cold). Prints medians of the warm passes per tokenizer: texts/s, tokens/s, MB/s and the ratio
# rc / hf, then one summary line per tokenizer (its model type and the ratios).
#
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRC_BUILD_BENCH=ON
#   cmake --build build --target bench_tokenizer
#   bench/tokenizer/compare.sh build [ROUNDS=5] [PASSES=3]
#
# OFFSETS=1 times rc's encode_with_offsets (character offsets, as token classification needs)
# instead of encode; HF's encodeBatch computes offsets either way, so that is the fair ratio
# for NER.
#
# Env: TEXTS (default data/tweeteval/sentiment/train_text.txt); TOKENIZERS, folders holding a
# tokenizer.json, space-separated (default: assets/tokenizer/roberta-base, byte-level BPE;
# tests/data/tokenizer/pipeline/bert-uncased, WordPiece; tests/data/tokenizer/pipeline/xlmr,
# Unigram; the last two are small-vocabulary test fixtures; then, when made by
# tools/make_bench_tokenizers.py, build/bench-tokenizers/bert-30k and xlmr-32k, vocabularies of
# real size trained on the TweetEval texts; or point TOKENIZERS at real bert-base-uncased /
# xlm-roberta-base folders); TOKENIZER (one
# folder, the old single-tokenizer form) when TOKENIZERS is unset. LIMIT=N reads only the
# first N texts (a smoke run). On a shared machine a pass in which a process got < 90% of a
# core is "busy"; wall-clock medians use clean passes when there are >= 3, and CPU-time rates
# (work / CPU seconds, robust to being descheduled) are printed beside them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rounds=${2:-5}
passes=${3:-3}
texts=${TEXTS:-$root/data/tweeteval/sentiment/train_text.txt}
if [[ -n "${TOKENIZERS:-}" ]]; then
  read -r -a tokdirs <<<"$TOKENIZERS"
elif [[ -n "${TOKENIZER:-}" ]]; then
  tokdirs=("$TOKENIZER")
else
  tokdirs=("$root/assets/tokenizer/roberta-base" "$root/tests/data/tokenizer/pipeline/bert-uncased"
    "$root/tests/data/tokenizer/pipeline/xlmr")
  for d in "$root/build/bench-tokenizers/bert-30k" "$root/build/bench-tokenizers/xlmr-32k"; do
    if [[ -f "$d/tokenizer.json" ]]; then tokdirs+=("$d"); fi
  done
fi
bin="$build/bench/bench_tokenizer"
if [[ ! -x "$bin" ]]; then
  echo "compare.sh: $bin not found; build it with" >&2
  echo "  cmake -S $root -B $build -DRC_BUILD_BENCH=ON && cmake --build $build --target bench_tokenizer" >&2
  exit 1
fi
for d in "${tokdirs[@]}"; do
  if [[ ! -f "$d/tokenizer.json" ]]; then
    echo "compare.sh: $d has no tokenizer.json (HF's side reads it)" >&2
    exit 1
  fi
done
if [[ ! -d "$here/node_modules/@anush008/tokenizers" ]]; then
  (cd "$here" && npm install --no-audit --no-fund >&2)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -n "${LIMIT:-}" ]]; then
  head -n "$LIMIT" "$texts" >"$tmp/texts.txt"
  texts="$tmp/texts.txt"
fi
out="$tmp/rows.jsonl"
# Each JSON line gets the tokenizer's folder as its first field.
tag() { sed "s|^{|{\"tokenizer\":\"$1\",|" >>"$out"; }
rc_mode=()
if [[ -n "${OFFSETS:-}" && "${OFFSETS}" != 0 ]]; then rc_mode=(--offsets); fi
run_rc() { "$bin" --tokenizer "$1" --texts "$texts" --passes "$passes" "${rc_mode[@]}" | tag "$1"; }
run_hf() { RAYON_NUM_THREADS=1 node "$here/hf_tokenizer.mjs" --tokenizer "$1" --texts "$texts" --passes "$passes" | tag "$1"; }
for d in "${tokdirs[@]}"; do
  for ((r = 1; r <= rounds; ++r)); do
    if ((r % 2)); then run_rc "$d"; run_hf "$d"; else run_hf "$d"; run_rc "$d"; fi
    echo "$(basename "$d"): round $r/$rounds done" >&2
  done
done
node - "$out" "${tokdirs[@]}" <<'JS'
const fs = require('fs');
const path = require('path');
const [file, ...dirs] = process.argv.slice(2);
const rows = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const n = s.length;
  return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN; };
const f = (x, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const modelType = (dir) => {
  // An older tokenizer.json (roberta-base's) names no model type: BPE has merges, Unigram a list.
  try {
    const m = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')).model;
    return m.type || (m.merges ? 'BPE' : Array.isArray(m.vocab) ? 'Unigram' : '?');
  } catch { return '?'; }
};
const summary = [];
for (const dir of dirs) {
  const res = {};
  for (const impl of ['rc', 'hf']) {
    const mine = rows.filter((r) => r.tokenizer === dir && r.impl === impl);
    const warm = mine.filter((r) => !r.cold), cold = mine.filter((r) => r.cold);
    const clean = warm.filter((r) => !r.busy);
    const timed = clean.length >= 3 ? clean : warm;
    const { texts, tokens, bytes } = mine[0];
    const wall = median(timed.map((r) => r.seconds)), cpu = median(warm.map((r) => r.cpu_seconds));
    res[impl] = { texts, tokens, bytes, wall, cpu, cold: median(cold.map((r) => r.seconds)),
      clean: clean.length, warm: warm.length };
  }
  const type = modelType(dir);
  console.log(`\n== ${dir} (${type})`);
  if (res.rc.tokens !== res.hf.tokens) console.log(`WARNING: token counts differ: rc ${res.rc.tokens}, hf ${res.hf.tokens}`);
  console.log(`texts ${f(res.rc.texts)}, ${f(res.rc.bytes / 1e6, 2)} MB, tokens ${f(res.rc.tokens)} (rc) / ${f(res.hf.tokens)} (hf)`);
  console.log('impl  wall s   texts/s    tokens/s     MB/s   | cpu s   texts/s(cpu)  tokens/s(cpu) | cold wall s | clean/warm passes');
  for (const impl of ['rc', 'hf']) {
    const r = res[impl];
    console.log(`${impl}    ${f(r.wall, 3).padStart(6)} ${f(r.texts / r.wall).padStart(9)} ${f(r.tokens / r.wall).padStart(11)} ${f(r.bytes / r.wall / 1e6, 2).padStart(7)}   | ${f(r.cpu, 3).padStart(6)} ${f(r.texts / r.cpu).padStart(12)} ${f(r.tokens / r.cpu).padStart(13)}  | ${f(r.cold, 3).padStart(10)}  | ${r.clean}/${r.warm}`);
  }
  const ratios = { wall: res.hf.wall / res.rc.wall, cpu: res.hf.cpu / res.rc.cpu, cold: res.hf.cold / res.rc.cold };
  console.log(`ratio rc/hf (throughput): wall ${f(ratios.wall, 2)}x, cpu-time ${f(ratios.cpu, 2)}x, cold wall ${f(ratios.cold, 2)}x`);
  summary.push({ name: path.basename(dir), type, same: res.rc.tokens === res.hf.tokens, ...ratios });
}
console.log('\nsummary: ratio rc/hf (throughput, > 1: rc faster)');
console.log('tokenizer              model       wall   cpu-time  cold wall  same tokens');
for (const s of summary)
  console.log(`${s.name.padEnd(22)} ${s.type.padEnd(10)} ${f(s.wall, 2).padStart(6)}x ${f(s.cpu, 2).padStart(8)}x ${f(s.cold, 2).padStart(9)}x  ${s.same ? 'yes' : 'NO'}`);
JS
