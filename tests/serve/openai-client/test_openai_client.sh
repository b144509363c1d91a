#!/usr/bin/env bash
# The official openai npm client (pinned by package-lock.json, installed once into a cache)
# against `roberta serve`'s /v1/embeddings on loopback, serving the sentence-transformers folder
# tests/data/embed/st: base64 (the client's default) and float answers, dimensions, token-id
# input and errors, each vector equal to what `roberta embed` prints (client.mjs). Skipped (77)
# without node/npm or when npm cannot install the client: a missing module is a skip, never a pass.
# Usage: test_openai_client.sh path/to/roberta
set -euo pipefail
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$(dirname "$0")/../../.." && pwd)
HERE="$SRC/tests/serve/openai-client"
WORK=$(mktemp -d)
source "$SRC/tests/serve/npm_client_lib.sh"
CACHE=${RC_OPENAI_CLIENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/roberta-openai-client}
npm_client_cache "$HERE" openai "$CACHE"

ST="$SRC/tests/data/embed/st"
serve embed "$ST"

embed() { "$BIN" embed --model "$ST" --precision fp32 --threads 1 "$@"; }
T1="Covid cases are increasing fast!"
T2="I love this so much"
IDS=$(curl -sf "http://127.0.0.1:$PORT/tokenize" -d "{\"inputs\": \"$T1\"}" | python3 -c 'import json,sys; print(json.dumps([t["id"] for t in json.load(sys.stdin)[0]]))')
# The request sends T1 and T2 together, so the reference embeds them in one batch too: a row's
# last bits depend on the batch's padded length where the SIMD width does not cover it (measured
# on an AVX2 Zen 3: T1 alone and T1 beside the longer T2 differ by up to 2.4e-8, 6e-5 relative;
# on AVX-512 they matched).
cat > "$WORK/expected.json" <<JSON
{
  "texts": ["$T1", "$T2"],
  "full": [$(embed --normalize "$T1" "$T2" | paste -sd,)],
  "dims": 4,
  "truncated": $(embed --normalize --dimensions 4 "$T1"),
  "ids": $IDS,
  "model_id": $(curl -sf "http://127.0.0.1:$PORT/info" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["model_id"]))')
}
JSON
(cd "$CACHE" && node client.mjs "http://127.0.0.1:$PORT/v1" "$WORK/expected.json")
