#!/usr/bin/env bash
# The test command: installs Debian dependencies (root), builds, runs every CPU test.
# Usage: scripts/test.sh [--no-deps] [--configure-only] [extra ctest args]
#   --configure-only  configure the build folder for the tests and stop (scripts/check-builds.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

deps=1 configure_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --no-deps) deps=0; shift ;;
    --configure-only) configure_only=1; shift ;;
    *) break ;;
  esac
done
if [ "$deps" = 1 ] && [ "$(id -u)" -eq 0 ]; then
  scripts/install-deps.sh
fi

BUILD_DIR=${BUILD_DIR:-build}
# Tests on whatever the folder held before: scripts/demo.sh configures a fresh folder with
# RC_BUILD_TESTS=OFF, and a cache keeps that unless told otherwise.
# Unity builds of the layer libraries (RC_UNITY, 8 files a unit): measured on a clean clone, 2
# quiet Ice Lake vCPUs, 10.2 min for the whole build against 14.0 without (the libraries' compile
# CPU time 457 s against 834); the same 930 tests pass. RC_UNITY also makes each test
# executable one unit (tests/CMakeLists.txt): their compile 484 CPU-s -> 242, the same tests
# registered. RC_UNITY=OFF builds file by file.
configure() {
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRC_BUILD_TESTS=ON -DRC_WERROR="${RC_WERROR:-OFF}" \
    -DRC_UNITY="${RC_UNITY:-ON}"
}
if [ "$configure_only" = 1 ]; then
  configure
  exit 0
fi

# The house format first: it takes seconds and says which files to clang-format.
scripts/check-format.sh
# Then every build the README promises, configured only (x86 after the demo, the image's flags,
# the arm64 cross-build with a link probe of its libraries): seconds, where a broken one would
# otherwise show only in its own long run.
scripts/check-builds.sh "${BUILD_DIR}-check"

configure
cmake --build "$BUILD_DIR" -j"$(nproc)"
# A run that executes no test fails (--no-tests=error): "No tests were found" is not a pass.
(cd "$BUILD_DIR" && ctest --output-on-failure --no-tests=error -LE "gpu|slow" -j"$(nproc)" "$@")

# The CUDA backend is compiled on every run where the toolkit is installed, so it never rots
# although this machine has no GPU: CUDA_BUILD_OPT=objects compiles the device code (sm_90, the
# H200 the GPU checks run on; the sources have no per-architecture branch) and every host file
# whose code depends on RC_WITH_CUDA / RC_WITH_NCCL, GPU tests included, at -O0, linking
# nothing: 1.7 minutes instead of compile-check's 3.6, which kept CI past 20 minutes. Linking
# and the host-side tests of that build are their own command (README: CUDA_BUILD_OPT=
# compile-check scripts/build-cuda.sh); scripts/gpu-check.sh builds Release for the GPU runs.
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ "${RC_SKIP_CUDA:-0}" != 1 ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
  CUDA_ARCHS=${CUDA_ARCHS:-90} CUDA_BUILD_OPT=${CUDA_BUILD_OPT:-objects} scripts/build-cuda.sh "${BUILD_DIR}-cuda"
else
  echo "test.sh: no CUDA toolkit at $CUDA_HOME (or RC_SKIP_CUDA=1): CUDA backend not compiled"
fi

# Fuzz smoke: every libFuzzer target for 5 s (ASan + UBSan, clang-16, its own build folder);
# any crash, sanitizer report or input slower than 1 s fails the run. 5 s rather than 10 keeps
# CI under its 20 minutes (each target still runs 2,200-30,600 inputs from its corpus); the
# long runs are scripts/fuzz.sh's own command. Measured cost on 2 cores in docs/security.md.
# RC_SKIP_FUZZ=1 skips it; FUZZ_SECONDS changes the time.
if [ "${RC_SKIP_FUZZ:-0}" != 1 ] && command -v clang++-16 >/dev/null; then
  FUZZ_BUILD_DIR="${BUILD_DIR}-fuzz" RC_WERROR=${RC_WERROR:-OFF} scripts/fuzz.sh "${FUZZ_SECONDS:-5}"
else
  echo "test.sh: no clang++-16 (or RC_SKIP_FUZZ=1): fuzz smoke not run"
fi
