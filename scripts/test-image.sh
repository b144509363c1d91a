#!/usr/bin/env bash
# The container image, built and run here (no registry, no Docker daemon): builds
# deploy/Dockerfile with deploy/build-image.sh unless the tag exists (--rebuild forces it), then
#   - checks its config: ENTRYPOINT ["roberta"], non-root user, SageMaker labels, HEALTHCHECK;
#   - `serve` inside it (buildah run) with a model in /opt/ml/model: /ping, an invocation
#     answered as the host binary answers it, the HEALTHCHECK command itself;
#   - `train` inside it as a SageMaker training job (no flags, /opt/ml mounted): a model in
#     /opt/ml/model, no failure file.
# Slow (the build compiles the project inside the image: tens of minutes on 2 busy cores), so
# it is its own command and ctest label (`ctest -L image`), not part of CI.
# Usage: scripts/test-image.sh [--rebuild] [--tag localhost/roberta:latest]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
TAG=localhost/roberta:latest
REBUILD=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rebuild) REBUILD=1; shift ;;
    --tag) TAG=$2; shift 2 ;;
    *) echo "test-image: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "skip: buildah needs root here"; exit 77; }
command -v buildah >/dev/null && command -v mmdebstrap >/dev/null || { echo "skip: buildah/mmdebstrap missing (scripts/install-deps.sh --image)"; exit 77; }
B=(buildah --storage-driver vfs)
HOST_BIN=${HOST_BIN:-$SRC/build/cli/roberta}
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "$REBUILD" = 1 ] || ! "${B[@]}" inspect --type image "$TAG" >/dev/null 2>&1; then
  "$SRC/deploy/build-image.sh" --tag "$TAG"
fi

echo "== image config"
W0=$(mktemp -d /tmp/rc-image-inspect.XXXXXX)
"${B[@]}" inspect --type image "$TAG" > "$W0/inspect.json"
size=$("${B[@]}" images --format '{{.Size}}' "$TAG" | head -n1)
python3 - "$W0/inspect.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["Docker"]["config"]
assert c["Entrypoint"] == ["roberta"], c["Entrypoint"]
assert c["User"] not in ("", "root", "0"), c["User"]
labels = c.get("Labels") or {}
for k in ("com.amazonaws.sagemaker.capabilities.multi-models", "com.amazonaws.sagemaker.capabilities.accept-bind-to-port"):
    assert labels.get(k) == "true", (k, labels)
hc = c.get("Healthcheck") or {}
assert "/ping" in " ".join(hc.get("Test", [])), hc
print(f"ok: entrypoint {c['Entrypoint']}, user {c['User']}, labels, healthcheck {hc['Test'][0]}")
PY
echo "size: $size"

W=$(mktemp -d /tmp/rc-image-test.XXXXXX)
CTR=$("${B[@]}" from --pull-never "$TAG")
SERVER_PID=""
cleanup() {
  [ -n "$SERVER_PID" ] && kill -TERM "$SERVER_PID" 2>/dev/null || true
  "${B[@]}" rm "$CTR" >/dev/null 2>&1 || true
  rm -rf "$W" "$W0"
}
trap cleanup EXIT
chmod 755 "$W"
RUN=("${B[@]}" run --isolation chroot)

echo "== serve inside the image"
mkdir -p "$W/serve/model"
cp -r "$SRC/tests/data/tiny/." "$W/serve/model/"
chown -R 10001:10001 "$W/serve"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# chroot isolation shares the host's network: the server listens on this machine's loopback.
"${RUN[@]}" -v "$W/serve:/opt/ml" --env SAGEMAKER_BIND_TO_PORT="$PORT" "$CTR" -- roberta serve --management-port -1 \
  > "$W/serve.log" 2>&1 &
for _ in $(seq 300); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/ping', timeout=1)" 2>/dev/null && break
  sleep 0.2
done
SERVER_PID=$(ss -Hltnp "sport = :$PORT" | grep -o 'pid=[0-9]*' | head -n1 | cut -d= -f2)
[ -n "$SERVER_PID" ] || { cat "$W/serve.log"; fail "serve inside the image never answered /ping"; }
[ "$(stat -c %u /proc/"$SERVER_PID")" = 10001 ] || fail "the server runs as uid $(stat -c %u /proc/"$SERVER_PID"), not the image's user"
inside=$("$HOST_BIN" invoke --url "http://127.0.0.1:$PORT" "Covid cases are increasing fast!")
outside=$("$HOST_BIN" predict --model "$SRC/tests/data/tiny" "Covid cases are increasing fast!")
echo "inside: $inside"
python3 -c "import json,sys; a=json.loads(sys.argv[1]); a=a[0] if isinstance(a,list) else a; b=json.loads(sys.argv[2]); \
assert a['label']==b['label'] and abs(a['score']-b['score'])<1e-4, (a,b)" "$inside" "$outside" || fail "image answer differs from the host's: $outside"
# The HEALTHCHECK command as Docker would run it (CMD form: Test[1:] is argv).
python3 -c "import json,sys; print('\0'.join(json.load(open(sys.argv[1]))['Docker']['config']['Healthcheck']['Test'][1:]), end='')" \
  "$W0/inspect.json" > "$W/hc"
mapfile -d '' hc_argv < "$W/hc"
"${RUN[@]}" --env SAGEMAKER_BIND_TO_PORT="$PORT" "$CTR" -- "${hc_argv[@]}" || fail "HEALTHCHECK failed against a healthy server"
echo "ok: HEALTHCHECK passes"
kill -TERM "$SERVER_PID"
for _ in $(seq 300); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SERVER_PID" 2>/dev/null && fail "serve did not exit within 30 s of SIGTERM"
SERVER_PID=""
echo "ok: serve drained and exited on SIGTERM"

echo "== train inside the image (SageMaker training job layout)"
ML=$W/ml
mkdir -p "$ML/input/config" "$ML/input/data/train" "$ML/input/data/model"
head -n 64 "$SRC/data/tweeteval/sentiment/train_text.txt" > "$ML/input/data/train/train_text.txt"
head -n 64 "$SRC/data/tweeteval/sentiment/train_labels.txt" > "$ML/input/data/train/train_labels.txt"
head -n 16 "$SRC/data/tweeteval/sentiment/val_text.txt" > "$ML/input/data/train/val_text.txt"
head -n 16 "$SRC/data/tweeteval/sentiment/val_labels.txt" > "$ML/input/data/train/val_labels.txt"
cp -r "$SRC/tests/data/tiny/." "$ML/input/data/model/"
echo '{"epochs": "1", "batch_size": "16", "lr": "0.0005", "max_length": "48", "threads": "1"}' > "$ML/input/config/hyperparameters.json"
echo '{"current_host": "algo-1", "hosts": ["algo-1"]}' > "$ML/input/config/resourceconfig.json"
chown -R 10001:10001 "$ML"
"${RUN[@]}" -v "$ML:/opt/ml" "$CTR" -- roberta train > "$W/train.log" 2>&1 || { cat "$W/train.log"; fail "train in the image failed: $(cat "$ML/output/failure" 2>/dev/null)"; }
[ -s "$ML/model/model.safetensors" ] && [ -s "$ML/model/config.json" ] || fail "no model in /opt/ml/model"
[ ! -e "$ML/output/failure" ] || fail "failure file after success"
grep '^eval: step' "$W/train.log" | tail -n1
echo "ok: trained inside the image; /opt/ml/model: $(ls "$ML/model" | tr '\n' ' ')"
echo "PASS (image $TAG, $size)"
