#!/usr/bin/env bash
# The official @huggingface/inference client (npm, pinned by package-lock.json, installed once
# into a cache) against `roberta serve` on loopback: tokenClassification on a token classifier
# trained here for one step, textClassification on the tiny classifier
# (tests/data/tiny), fillMask on the tiny masked-LM model (assets/pretrained/tweets-tiny-mlm
# with roberta-base's tokenizer), featureExtraction and sentenceSimilarity on the
# sentence-transformers folder tests/data/embed/st, each answer equal to what `roberta predict` / `roberta
# fill-mask` print for the same text (client.mjs), and a server started with --preprocess tweet
# --function-to-apply sigmoid answering what `roberta predict` does with the same flags. Skipped (77) without node/npm or when npm
# cannot install the client: a missing module is a skip, never a pass.
# Usage: test_hf_client.sh path/to/roberta
set -euo pipefail
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$(dirname "$0")/../../.." && pwd)
HERE="$SRC/tests/serve/hf-client"
WORK=$(mktemp -d)
source "$SRC/tests/serve/npm_client_lib.sh"
CACHE=${RC_HF_CLIENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/roberta-hf-client}
npm_client_cache "$HERE" @huggingface/inference "$CACHE"

TINY="$SRC/tests/data/tiny"
MLM="$WORK/mlm"
mkdir -p "$MLM"
cp "$SRC/assets/pretrained/tweets-tiny-mlm/"{config.json,model.safetensors} "$MLM/"
cp "$SRC/assets/tokenizer/roberta-base/"{vocab.json,merges.txt} "$MLM/"

# A token classifier: the tiny body with a token head trained one step on two sentences.
NER="$WORK/ner"
printf '%s\n' '{"tokens": ["Ann", "went", "to", "Rome"], "ner_tags": ["B-PER", "O", "O", "B-LOC"]}' \
  '{"tokens": ["Bob", "saw", "Paris", "today"], "ner_tags": ["B-PER", "O", "B-LOC", "O"]}' > "$WORK/ner.jsonl"
"$BIN" train --model "$TINY" --task token-classification --data "$WORK/ner.jsonl" --output "$NER" --max-steps 1 \
  --batch-size 2 --threads 1 > "$WORK/ner-train.log" 2>&1 || { cat "$WORK/ner-train.log"; echo "FAIL: train ner"; exit 1; }
serve tiny "$TINY"; TINY_PORT=$PORT
serve mlm "$MLM"; MLM_PORT=$PORT
serve tweets "$TINY" --preprocess tweet --function-to-apply sigmoid; TWEETS_PORT=$PORT
serve ner "$NER"; NER_PORT=$PORT
serve embed "$SRC/tests/data/embed/st"; EMBED_PORT=$PORT

# What the CLI prints for the same texts: the expectations client.mjs compares with.
predict() { "$BIN" predict --model "$TINY" --precision fp32 --threads 1 "$@"; }
fill() { "$BIN" fill-mask --model "$MLM" --threads 1 "$@"; }
tag() { "$BIN" predict --model "$NER" --precision fp32 --threads 1 --aggregation simple "$@"; }
N1="Ann went to Rome with Bob"
T1="Covid cases are increasing fast!"
T2="I love this so much"
M1="The weather is <mask> today."
T3="@alice loved it https://t.co/xyz"
cat > "$WORK/expected.json" <<JSON
{
  "classification": [
    {"text": $(printf '%s' "$T1" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'), "cli": $(predict "$T1")},
    {"text": $(printf '%s' "$T2" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'), "cli": $(predict "$T2")},
    {"text": $(printf '%s' "$T2" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'),
     "parameters": {"function_to_apply": "sigmoid"}, "cli": $(predict --function-to-apply sigmoid "$T2")},
    {"text": $(printf '%s' "$T1" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'),
     "parameters": {"top_k": 2}, "cli": $(predict "$T1")}
  ],
  "tweets": [
    {"text": $(printf '%s' "$T3" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'),
     "cli": $(predict --preprocess tweet --function-to-apply sigmoid "$T3"), "unprocessed": $(predict --function-to-apply sigmoid "$T3")}
  ],
  "tokens": [
    {"text": $(printf '%s' "$N1" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'), "cli": $(tag "$N1")}
  ],
  "embed": [
    {"text": $(printf '%s' "$T1" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'),
     "cli": $("$BIN" embed --model "$SRC/tests/data/embed/st" --precision fp32 --threads 1 --normalize "$T1")},
    {"text": $(printf '%s' "$T2" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'),
     "cli": $("$BIN" embed --model "$SRC/tests/data/embed/st" --precision fp32 --threads 1 --normalize "$T2")}
  ],
  "fill_mask": [
    {"text": $(printf '%s' "$M1" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'), "top_k": 5, "cli": $(fill --top-k 5 "$M1")},
    {"text": $(printf '%s' "$M1" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'), "top_k": 2, "cli": $(fill --top-k 2 "$M1")},
    {"text": $(printf '%s' "$M1" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))'), "top_k": 5,
     "targets": ["Ġgood", "Ġbad", "sunny"], "cli": $(fill --top-k 5 --targets Ġgood,Ġbad,sunny "$M1")}
  ]
}
JSON
node "$CACHE/client.mjs" "http://127.0.0.1:$TINY_PORT" "http://127.0.0.1:$MLM_PORT" "$WORK/expected.json" \
  "http://127.0.0.1:$TWEETS_PORT" "http://127.0.0.1:$NER_PORT" "http://127.0.0.1:$EMBED_PORT"
