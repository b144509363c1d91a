# Shared by the official-client tests (hf-client/, openai-client/): sourced, not run.
#   npm_client_cache DIR MODULE CACHE      copies DIR's package.json, lock and client.mjs into
#                                          CACHE and installs the pinned client there once; exits
#                                          77 (skipped, never passed) without node/npm or module
#   serve NAME MODEL_DIR [FLAGS...]        `$BIN serve` on a free loopback port (sets PORT), its
#                                          log in $WORK/NAME.log; waits for /ping, fails if it dies
# The caller sets BIN and WORK; servers started here are stopped by the EXIT trap set here.

npm_client_cache() {
  local dir=$1 module=$2 cache=$3
  command -v node >/dev/null && command -v npm >/dev/null || { echo "skip: node/npm not installed"; exit 77; }
  mkdir -p "$cache"
  cp "$dir/"{package.json,package-lock.json,client.mjs} "$cache/"
  if ! (cd "$cache" && node -e "import(\"$module\")" 2>/dev/null); then
    (cd "$cache" && npm ci --no-audit --no-fund --silent) || { echo "skip: npm ci failed (no registry?)"; exit 77; }
  fi
  (cd "$cache" && node -e "import(\"$module\")") || { echo "skip: $module does not load"; exit 77; }
}

SERVE_PIDS=()
stop_servers() {
  for pid in "${SERVE_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${SERVE_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap stop_servers EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

serve() {
  PORT=$(free_port)
  "$BIN" serve --model "$1=$2" --host 127.0.0.1 --port "$PORT" --management-port -1 --precision fp32 \
    --threads 1 "${@:3}" > "$WORK/$1.log" 2>&1 &
  SERVE_PIDS+=($!)
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$PORT/ping" >/dev/null 2>&1 && return 0
    kill -0 "${SERVE_PIDS[-1]}" 2>/dev/null || { cat "$WORK/$1.log"; echo "FAIL: serve $1 exited"; exit 1; }
    sleep 0.1
  done
  cat "$WORK/$1.log"; echo "FAIL: serve $1 not ready in 30 s"; exit 1
}
