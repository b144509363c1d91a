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

# The house format first: it takes seconds and says which files to clang-format.
scripts/check-format.sh

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRC_WERROR=${RC_WERROR:-OFF}
cmake --build "$BUILD_DIR" -j"$(nproc)"
(cd "$BUILD_DIR" && ctest --output-on-failure -LE "gpu|slow" -j"$(nproc)" "$@")

# The CUDA backend is compiled (sm_80, sm_90) on every run where the toolkit is installed, so it
# never rots although this machine has no GPU; its GPU tests skip without a device. The host
# C++ of this second build is compiled at -O0 (CUDA_BUILD_OPT=compile-check): it checks that
# the CUDA configuration compiles, links and passes its host-side tests, and took 6.3 instead
# of 9.1 minutes on 2 Zen 3 cores. scripts/gpu-check.sh builds Release for the GPU runs.
# The check compiles for sm_90 only (the H200 the GPU checks run on): the CUDA sources have no
# per-architecture code (no __CUDA_ARCH__ branch), so a second architecture compiled the same
# lines again; scripts/build-cuda.sh alone still builds sm_80 and sm_90.
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ "${RC_SKIP_CUDA:-0}" != 1 ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
  CUDA_ARCHS=${CUDA_ARCHS:-90} CUDA_BUILD_OPT=${CUDA_BUILD_OPT:-compile-check} scripts/build-cuda.sh "${BUILD_DIR}-cuda"
else
  echo "test.sh: no CUDA toolkit at $CUDA_HOME (or RC_SKIP_CUDA=1): CUDA backend not compiled"
fi

# Fuzz smoke: every libFuzzer target for 5 s (ASan + UBSan, clang-16, its own build folder);
# any crash, sanitizer report or input slower than 1 s fails the run. 5 s rather than 10 keeps
# CI under its 20 minutes (each target still runs 3,000-36,000 inputs from its corpus); the
# long runs are scripts/fuzz.sh's own command. Measured cost on 2 cores in docs/security.md.
# RC_SKIP_FUZZ=1 skips it; FUZZ_SECONDS changes the time.
if [ "${RC_SKIP_FUZZ:-0}" != 1 ] && command -v clang++-16 >/dev/null; then
  FUZZ_BUILD_DIR="${BUILD_DIR}-fuzz" RC_WERROR=${RC_WERROR:-OFF} scripts/fuzz.sh "${FUZZ_SECONDS:-5}"
else
  echo "test.sh: no clang++-16 (or RC_SKIP_FUZZ=1): fuzz smoke not run"
fi
