#!/usr/bin/env bash
# Scale-out behind a load balancer, on loopback: N `roberta serve` replicas behind nginx (Debian's
# nginx-light, run from a temporary prefix, no system config touched), nginx retrying another
# replica on connection failure (proxy_next_upstream).
#   1. throughput through nginx with 1 and with 2 replicas x 1 compute thread (wrk, bounded);
#   2. under load, SIGTERM one replica: 0 client-visible errors (it drains; nginx moves on);
#   3. under load, SIGKILL one replica: only requests in flight on it at the kill may fail,
#      none started after it.
# Prints the figures (docs/deploy.md records them) and exits non-zero if 2. or 3. fail.
# Usage: scripts/test-scaleout.sh [path/to/roberta]   (DURATION=8 seconds per run, CONNECTIONS=8)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(readlink -f "${1:-$SRC/build/cli/roberta}")
DURATION=${DURATION:-8}
CONNECTIONS=${CONNECTIONS:-8}
PY=python3
command -v nginx >/dev/null || { echo "skip: nginx not installed (apt-get install nginx-light)"; exit 77; }
command -v wrk >/dev/null || { echo "skip: wrk not installed"; exit 77; }
[ -x "$BIN" ] || { echo "test-scaleout: $BIN not built" >&2; exit 2; }

W=$(mktemp -d /tmp/rc-scaleout.XXXXXX)
chmod 755 "$W"
declare -A PIDS=()
NGINX_PID=""
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  [ -n "$NGINX_PID" ] && kill -QUIT "$NGINX_PID" 2>/dev/null || true
  sleep 0.3
  rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

echo "== model: roberta init --config small (4 layers x 256)"
"$BIN" init --config small --tokenizer "$SRC/assets/tokenizer/roberta-base" --labels negative,neutral,positive \
  --output "$W/model" > /dev/null

declare -a PORTS=("$(free_port)" "$(free_port)")
start_replica() {  # start_replica INDEX: one compute thread, one batch at a time
  "$BIN" serve --model "m=$W/model" --host 127.0.0.1 --port "${PORTS[$1]}" --management-port -1 \
    --threads 1 --inference-threads 1 --http-threads 1 > "$W/replica$1.log" 2>&1 &
  PIDS[$1]=$!
  for _ in $(seq 300); do
    $PY -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:${PORTS[$1]}/ping', timeout=1)" 2>/dev/null && return 0
    kill -0 "${PIDS[$1]}" 2>/dev/null || { cat "$W/replica$1.log"; fail "replica $1 died at start"; }
    sleep 0.1
  done
  fail "replica $1 not ready after 30 s"
}

LB_PORT=$(free_port)
start_nginx() {  # start_nginx N: nginx in front of replicas 0..N-1
  [ -n "$NGINX_PID" ] && { kill -QUIT "$NGINX_PID"; for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done; }
  local servers="" i
  for ((i = 0; i < $1; i++)); do servers+="    server 127.0.0.1:${PORTS[$i]} max_fails=1 fail_timeout=2s;"$'\n'; done
  cat > "$W/nginx.conf" <<CONF
worker_processes 1;
error_log $W/nginx-error.log warn;
pid $W/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $W/client_body; proxy_temp_path $W/proxy;
  fastcgi_temp_path $W/fastcgi; uwsgi_temp_path $W/uwsgi; scgi_temp_path $W/scgi;
  upstream roberta {
$servers    keepalive 32;
  }
  server {
    listen 127.0.0.1:$LB_PORT;
    location / {
      proxy_pass http://roberta;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      # Another replica on a refused or dropped connection or a draining replica's 503. POST is
      # retried too (non_idempotent): classification has no side effects, so a request that a
      # killed replica never answered is safe to send again.
      proxy_next_upstream error timeout http_502 http_503 non_idempotent;
      proxy_next_upstream_tries 3;
      proxy_connect_timeout 1s;
      proxy_read_timeout 30s;
    }
  }
}
CONF
  nginx -p "$W" -c "$W/nginx.conf" -g 'daemon off;' &
  NGINX_PID=$!
  for _ in $(seq 100); do
    $PY -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$LB_PORT/ping', timeout=1)" 2>/dev/null && return 0
    sleep 0.1
  done
  cat "$W/nginx-error.log"; fail "nginx not ready"
}

cat > "$W/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"inputs": "Covid cases are increasing fast! Stay home and keep safe, everyone."}'
wrk.headers["Content-Type"] = "application/json"
LUA
rps() {  # rps URL: wrk's Requests/sec; non-2xx or socket errors fail the run
  wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s "$W/post.lua" "$1" > "$W/wrk.txt" 2>&1
  if grep -qE 'Non-2xx|Socket errors' "$W/wrk.txt"; then cat "$W/wrk.txt"; fail "errors under plain load"; fi
  awk '/Requests\/sec/ {print $2}' "$W/wrk.txt"
}

start_replica 0
start_replica 1
echo "== 1. throughput ($CONNECTIONS connections, ${DURATION} s each; loopback; load average $(cut -d' ' -f1 /proc/loadavg))"
direct=$(rps "http://127.0.0.1:${PORTS[0]}/invocations")
start_nginx 1
one=$(rps "http://127.0.0.1:$LB_PORT/invocations")
start_nginx 2
two=$(rps "http://127.0.0.1:$LB_PORT/invocations")
ratio=$($PY -c "print(round($two / $one, 2))")
echo "direct to one replica: $direct req/s; nginx + 1 replica: $one req/s; nginx + 2 replicas: $two req/s (x$ratio)"
echo "{\"direct\": $direct, \"nginx_1\": $one, \"nginx_2\": $two, \"ratio\": $ratio, \"cores\": $(nproc), \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}" \
  > "${SCALEOUT_RESULT:-/dev/null}"

under_load() {  # under_load SIGNAL: load through nginx, SIGNAL to replica 1 after a third of the run
  $PY "$SRC/tests/deploy/loadgen.py" --url "http://127.0.0.1:$LB_PORT/invocations" --connections "$CONNECTIONS" \
    --duration "$DURATION" > "$W/load.json" &
  local load=$! t_kill
  sleep "$($PY -c "print($DURATION / 3)")"
  kill -"$1" "${PIDS[1]}"
  t_kill=$($PY -c "import json,time; print(time.monotonic())")
  wait "$load"
  wait "${PIDS[1]}" 2>/dev/null || true
  echo "$t_kill"
}

echo "== 2. SIGTERM one of two replicas under load"
under_load TERM > /dev/null
$PY - "$W/load.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"SIGTERM: {r['requests']} requests, {r['errors']} errors")
sys.exit(0 if r["errors"] == 0 and r["requests"] > 0 else f"FAIL: client-visible errors after SIGTERM: {r['error_list']}")
PY
grep -q . "$W/replica1.log" || true

echo "== 3. SIGKILL one of two replicas under load"
start_replica 1
start_nginx 2
under_load KILL > /dev/null
$PY - "$W/load.json" "$DURATION" "$CONNECTIONS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
kill_at = float(sys.argv[2]) / 3
# In flight at the kill: started before it and ended after it. At most one per connection.
late = [e for e in r["error_list"] if e["start"] > kill_at + 0.5]
print(f"SIGKILL: {r['requests']} requests, {r['errors']} errors ({len(late)} started after the kill)")
ok = r["requests"] > 0 and not late and r["errors"] <= int(sys.argv[3])
sys.exit(0 if ok else f"FAIL: errors beyond the in-flight ones: {r['error_list']}")
PY
echo PASS
