#!/usr/bin/env bash
# deploy/k8s validated offline: Kubernetes JSON schemas from the npm package kubernetes-models
# (installed once from the npm registry into a cache, pinned by package-lock.json), plus the
# checks of tests/deploy/k8s-validate/validate.mjs. Then three broken copies must be refused,
# so the validator is known to bite. Skipped (77) without node/npm or when npm cannot install.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
command -v node >/dev/null && command -v npm >/dev/null || { echo "skip: node/npm not installed"; exit 77; }
CACHE=${RC_K8S_VALIDATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/roberta-k8s-validate}
mkdir -p "$CACHE"
cp "$SRC/tests/deploy/k8s-validate/"{package.json,package-lock.json,validate.mjs} "$CACHE/"
if [ ! -d "$CACHE/node_modules/kubernetes-models" ]; then
  (cd "$CACHE" && npm ci --no-audit --no-fund --silent) || { echo "skip: npm ci failed (no registry?)"; exit 77; }
fi
node "$CACHE/validate.mjs" "$SRC"/deploy/k8s/*.yaml

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
refused() {  # refused NAME SED-EXPR: the edited copy must fail validation
  mkdir -p "$WORK/$1"
  cp "$SRC"/deploy/k8s/*.yaml "$WORK/$1/"
  sed -i "$2" "$WORK/$1/deployment.yaml"
  if node "$CACHE/validate.mjs" "$WORK/$1"/*.yaml > "$WORK/$1.log" 2>&1; then
    echo "FAIL: broken manifest '$1' passed"; exit 1
  fi
  echo "ok: $1 refused: $(grep -m1 'k8s: .*: \|k8s: [a-zA-Z]' "$WORK/$1.log" | head -n1)"
}
refused port-as-string 's/containerPort: 8080/containerPort: "8080"/'
refused short-grace 's/terminationGracePeriodSeconds: 45/terminationGracePeriodSeconds: 5/'
refused wrong-probe-path '/readinessProbe:/,/path:/s|/ping|/health|'
refused undefined-var 's/\$(THREADS)/$(NUM_THREADS)/'
echo PASS
