#!/usr/bin/env bash
# Installs the Debian 12 packages of scripts/deps.list (the one list; scripts/deps.sh reads it).
# Run as root (or with sudo); safe to run again.
# Usage: scripts/install-deps.sh [--demo] [--image] [--scaleout] [--print]
#   (none)      everything scripts/test.sh needs: build, demo, test, bench and fuzz sets
#   --demo      only what scripts/demo.sh needs: the build and demo sets (no PyTorch, clang, MPI)
#   --image     also buildah + mmdebstrap (deploy/build-image.sh, scripts/test-image.sh)
#   --scaleout  also nginx-light (scripts/test-scaleout.sh)
#   --print     print the packages, install nothing (no root needed)
# The image and scaleout tests carry the `slow` label: scripts/test.sh (CI) needs neither.
# The arm64 cross-build installs its own (scripts/build-arm64.sh, same list).
set -euo pipefail
deps=$(dirname "$0")/deps.sh

sets=(build demo test bench fuzz)
extra=()
print=0
for arg in "$@"; do
  case "$arg" in
    --demo) sets=(build demo) ;;
    --image) extra+=(image) ;;
    --scaleout) extra+=(scaleout) ;;
    --print) print=1 ;;
    *) echo "install-deps: unknown option '$arg' (--demo, --image, --scaleout, --print)" >&2; exit 2 ;;
  esac
done
# An assignment, so that a malformed list stops the script (set -e).
packages=$("$deps" "${sets[@]}" ${extra[@]+"${extra[@]}"})
if [ "$print" = 1 ]; then
  echo "$packages"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: run as root (e.g. sudo $0)" >&2
  exit 2
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q -o DPkg::Lock::Timeout=900
# shellcheck disable=SC2086  # one package a word
apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=900 $packages

if echo "$packages" | grep -qx python3-torch; then
  # Reference tools (tools/*.py) run on Debian's own Python, where python3-torch lives.
  /usr/bin/python3 -c 'import torch; print("install-deps: torch", torch.__version__)'
fi
