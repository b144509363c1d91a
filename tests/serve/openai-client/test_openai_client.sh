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
command -v node >/dev/null && command -v npm >/dev/null || { echo "skip: node/npm not installed"; exit 77; }
CACHE=${RC_OPENAI_CLIENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/roberta-openai-client}
mkdir -p "$CACHE"
cp "$HERE/"{package.json,package-lock.json,client.mjs} "$CACHE/"
if ! (cd "$CACHE" && node -e 'import("openai")' 2>/dev/null); then
  (cd "$CACHE" && npm ci --no-audit --no-fund --silent) || { echo "skip: npm ci failed (no registry?)"; exit 77; }
fi
(cd "$CACHE" && node -e 'import("openai")') || { echo "skip: openai does not load"; exit 77; }

WORK=$(mktemp -d)
PID=
cleanup() {
  [ -n "$PID" ] && { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
  rm -rf "$WORK"
}
trap cleanup EXIT

ST="$SRC/tests/data/embed/st"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN" serve --model "embed=$ST" --host 127.0.0.1 --port "$PORT" --management-port -1 --precision fp32 --threads 1 \
  > "$WORK/serve.log" 2>&1 &
PID=$!
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$PORT/ping" >/dev/null 2>&1 && break
  kill -0 "$PID" 2>/dev/null || { cat "$WORK/serve.log"; echo "FAIL: serve exited"; exit 1; }
  sleep 0.1
done
curl -sf "http://127.0.0.1:$PORT/ping" >/dev/null || { cat "$WORK/serve.log"; echo "FAIL: serve not ready"; exit 1; }

embed() { "$BIN" embed --model "$ST" --precision fp32 --threads 1 "$@"; }
T1="Covid cases are increasing fast!"
T2="I love this so much"
IDS=$(curl -sf "http://127.0.0.1:$PORT/tokenize" -d "{\"inputs\": \"$T1\"}" | python3 -c 'import json,sys; print(json.dumps([t["id"] for t in json.load(sys.stdin)[0]]))')
cat > "$WORK/expected.json" <<JSON
{
  "texts": ["$T1", "$T2"],
  "full": [$(embed --normalize "$T1"), $(embed --normalize "$T2")],
  "dims": 4,
  "truncated": $(embed --normalize --dimensions 4 "$T1"),
  "ids": $IDS,
  "model_id": $(curl -sf "http://127.0.0.1:$PORT/info" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["model_id"]))')
}
JSON
(cd "$CACHE" && node client.mjs "http://127.0.0.1:$PORT/v1" "$WORK/expected.json")
