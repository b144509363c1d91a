#!/usr/bin/env bash
# Differential sweep of the tokenizer pipeline against HF's Rust tokenizers on tokenizers the
# repository does not commit, trained on text that is not the tweets (Debian's license texts
# and man pages): tools/make_sweep_tokenizers.mjs (HF-trained models in many component
# combinations) and tools/make_sweep_spm.py (sentencepiece models with each normalization rule
# and trainer option, converted as XLMRobertaConverter does, and as slow folders), goldens by
# tools/make_pipeline_goldens.mjs (ids, type ids, offsets, decode, pairs, truncation, words),
# then test_tokenizer's TokenizerSweep.MatchesHuggingFace on each.
#
#   tools/tokenizer_sweep.sh build [OUT_DIR=build/tok-sweep]
#
# Needs `npm ci --prefix tools`, /usr/bin/python3 with python3-sentencepiece, and test_tokenizer
# built in BUILD. Prints one line per tokenizer (same / DIFFERS); exit 1 if any differs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$build/tok-sweep}
rm -rf "$out"
mkdir -p "$out"
corpus=$out/_corpus.txt
cat /usr/share/common-licenses/{GPL-3,Apache-2.0,MPL-2.0,Artistic,LGPL-2.1} >"$corpus"
for f in $(ls /usr/share/man/man1/*.gz 2>/dev/null | sort | head -40); do zcat "$f" | grep -v '^\.\\"' >>"$corpus" || true; done
# The golden texts: every 97th non-empty line of the corpus (200 at most).
awk 'NF && NR % 97 == 0' "$corpus" | head -200 >"$out/_texts.txt"
node "$root/tools/make_sweep_tokenizers.mjs" "$corpus" "$out"
/usr/bin/python3 "$root/tools/make_sweep_spm.py" "$corpus" "$out"
node "$root/tools/make_pipeline_goldens.mjs" --dir "$out" --texts "$out/_texts.txt" >/dev/null
for d in "$out"/*-slow; do cp "${d%-slow}.jsonl" "$d.jsonl"; done
RC_TOKENIZER_SWEEP_DIR=$out "$build/tests/test_tokenizer" --gtest_filter='TokenizerSweep.*' 2>&1 | grep -E '^sweep |Failure|differ|error' | grep -v '^$' | cut -c1-400
test "${PIPESTATUS[0]}" -eq 0
