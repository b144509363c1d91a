#!/usr/bin/env bash
# Ids of rc::Tokenizer (bench_tokenizer --ids-out) against Hugging Face's Rust tokenizers
# (the npm bindings compare.sh uses), text by text, on the benchmark's texts and on the hard
# cases of the pipeline goldens (tests/data/tokenizer/pipeline/*.jsonl: accents, CJK, emoji,
# control and zero-width characters, ...; those with a newline or CR left out, the files being
# one text a line). For tokenizers without committed goldens, such as the 30k / 32k ones of
# tools/make_bench_tokenizers.py:
#
#   bench/tokenizer/check_ids.sh build build/bench-tokenizers/bert-30k build/bench-tokenizers/xlmr-32k
#
# Prints, per tokenizer, the number of texts and of those whose ids differ (exit 1 if any).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)
shift
texts=${TEXTS:-$root/data/tweeteval/sentiment/train_text.txt}
if [[ ! -d "$here/node_modules/@anush008/tokenizers" ]]; then
  (cd "$here" && npm install --no-audit --no-fund >&2)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$texts" "$tmp/texts.txt"
python3 - "$root/tests/data/tokenizer/pipeline" >>"$tmp/texts.txt" <<'PY'
import glob, json, sys
seen = set()
for path in sorted(glob.glob(sys.argv[1] + "/*.jsonl")):
    for line in open(path, encoding="utf-8"):
        t = json.loads(line).get("text")
        if isinstance(t, str) and "\n" not in t and "\r" not in t and t not in seen:
            seen.add(t)
            print(t)
PY
status=0
for d in "$@"; do
  "$build/bench/bench_tokenizer" --tokenizer "$d" --texts "$tmp/texts.txt" --ids-out "$tmp/rc.txt"
  HERE="$here" node - "$d/tokenizer.json" "$tmp/texts.txt" "$tmp/hf.txt" <<'JS'
const fs = require('fs');
const { Tokenizer } = require(process.env.HF_MODULE || require.resolve('@anush008/tokenizers', { paths: [process.env.HERE] }));
const [file, textsFile, out] = process.argv.slice(2);
const tok = Tokenizer.fromFile(file);
const texts = fs.readFileSync(textsFile, 'utf8').split('\n');
texts.pop();  // after the last newline
(async () => {
  const lines = [];
  for (const t of texts) lines.push(Array.from((await tok.encode(t)).getIds()).join(' '));
  fs.writeFileSync(out, lines.join('\n') + '\n');
})();
JS
  n=$(wc -l <"$tmp/rc.txt")
  bad=$(paste -d '\t' "$tmp/rc.txt" "$tmp/hf.txt" | awk -F '\t' '$1 != $2' | wc -l)
  echo "$(basename "$d"): $n texts, $bad with different ids"
  if ((bad > 0)); then status=1; fi
done
exit $status
