#!/usr/bin/env bash
# The test command: installs Debian dependencies (root), builds, runs every CPU test.
# Usage: scripts/test.sh [--no-deps] [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--no-deps" ]; then
  shift
elif [ "$(id -u)" -eq 0 ]; then
  scripts/install-deps.sh
fi

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRC_WERROR=${RC_WERROR:-OFF}
cmake --build "$BUILD_DIR" -j"$(nproc)"
cd "$BUILD_DIR"
ctest --output-on-failure -LE "gpu|slow" -j"$(nproc)" "$@"
