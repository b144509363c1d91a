#!/usr/bin/env bash
# CI step for the CUDA backend on a machine WITHOUT a GPU: configure with RC_WITH_CUDA=ON,
# compile the CUDA code for sm_80 and sm_90 (so it never rots), build the roberta CLI and the
# GPU tests, and run the host-side tests. GPU tests run too: without a device they skip.
# Prints the compile time of the CUDA targets.
# Usage: scripts/build-cuda.sh [build-dir]       (default build-cuda-ci)
# Env:   CUDA_HOME (default /usr/local/cuda), CUDA_ARCHS (default "80;90"), JOBS (default nproc),
#        RC_WERROR (default OFF), CUDA_BUILD_OPT (default release: -O2 as shipped; compile-check:
#        the host C++ at -O0 without debug info, which scripts/test.sh uses since this build only
#        proves that the CUDA configuration compiles, links and passes its host-side tests;
#        the device code is optimised by ptxas either way. compile-check builds only the layers
#        that read RC_WITH_CUDA / RC_WITH_NCCL (kernels, device, dist, train) and the tests over
#        them, not the roberta CLI and test_cli_device: serve, hub, net and cli have no
#        CUDA-dependent line, and building them was half of this stage's time. The CLI's device
#        handling is covered by test_cli_device in the CPU build and test_cuda_host here; the
#        release build, which gpu-check.sh runs, still builds and runs both; objects: only
#        compiles, at -O0, the CUDA code and every host file whose code depends on the CUDA /
#        NCCL switches, GPU tests included, linking nothing: what scripts/test.sh runs in CI,
#        in ~2 of compile-check's ~4 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${1:-build-cuda-ci}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
CUDA_ARCHS=${CUDA_ARCHS:-80;90}
JOBS=${JOBS:-$(nproc)}

if [ ! -x "$CUDA_HOME/bin/nvcc" ]; then
  echo "build-cuda: no nvcc at $CUDA_HOME/bin/nvcc; set CUDA_HOME" >&2
  exit 2
fi

# NCCL (data-parallel training on GPUs, src/dist/nccl_collective.cpp) whenever its header is
# there, so that path compiles in CI too; RC_WITH_NCCL=OFF in the environment turns it off.
NCCL=${RC_WITH_NCCL:-}
if [ -z "$NCCL" ]; then
  if [ -f "$CUDA_HOME/include/nccl.h" ] || [ -f "${NCCL_HOME:-/nonexistent}/include/nccl.h" ]; then NCCL=ON; else NCCL=OFF; fi
fi

case "${CUDA_BUILD_OPT:-release}" in
  release) build_type=(-DCMAKE_BUILD_TYPE=Release) ;;
  compile-check | objects) build_type=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_CUDA_FLAGS_DEBUG=) ;;
  *) echo "build-cuda: CUDA_BUILD_OPT must be release, compile-check or objects, got '$CUDA_BUILD_OPT'" >&2; exit 2 ;;
esac

cmake -S . -B "$BUILD_DIR" -G Ninja "${build_type[@]}" -DRC_WITH_CUDA=ON -DRC_WITH_NCCL="$NCCL" \
  -DCMAKE_CUDA_COMPILER="$CUDA_HOME/bin/nvcc" -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS" \
  -DRC_BUILD_BENCH=${RC_BUILD_BENCH:-OFF} -DRC_WERROR=${RC_WERROR:-OFF}

start=$(date +%s)
cmake --build "$BUILD_DIR" -j"$JOBS" --target rc_kernels_cuda
end=$(date +%s)
cmake --build "$BUILD_DIR" -j"$JOBS" --target rc_dist  # gloo, and NCCL when on
echo "build-cuda: rc_dist built with RC_WITH_NCCL=$NCCL"
echo "build-cuda: CUDA targets (rc_kernels_cuda, rc_device_cuda) compiled in $((end - start)) s with -j$JOBS"

# tests/<folder>/test_x[_slow|_gpu].cpp is linked into test_<folder>[_slow|_gpu] (tests/CMakeLists.txt).
test_target_of() {
  local folder name
  folder=${1#tests/}; folder=${folder%%/*}; name=$(basename "$1" .cpp)
  case "$name" in
    *_slow) echo "test_${folder}_slow" ;;
    *_gpu) echo "test_${folder}_gpu" ;;
    *) echo "test_${folder}" ;;
  esac
}

if [ "${CUDA_BUILD_OPT:-release}" = objects ]; then
  # Compile only, nothing linked or run (what scripts/test.sh does in CI): every translation
  # unit whose code changes with the switches. Those are the files that test RC_WITH_CUDA /
  # RC_WITH_NCCL themselves or include, directly or through other headers, a header that
  # does; found here by grep so that a new one is never missed. Linking and the host-side
  # tests are the compile-check and release modes.
  marker='RC_WITH_(CUDA|NCCL)'
  headers=$(grep -rlE "$marker" src tests --include=*.h | sed -E 's#^(src|tests)/##' | sort -u)
  while :; do
    pattern=$(echo "$headers" | sed 's/[.]/[.]/g' | paste -sd'|')
    grown=$( { echo "$headers"; grep -rlE "#include \"($pattern)\"" src tests --include=*.h |
      sed -E 's#^(src|tests)/##'; } | sort -u)
    [ "$grown" = "$headers" ] && break
    headers=$grown
  done
  objects=()
  for f in $( { grep -rlE "$marker" src tests --include=*.cpp; grep -rlE "#include \"($pattern)\"" src tests --include=*.cpp; } |
             grep -v '^src/[a-z]*/cuda/' | sort -u); do
    case "$f" in
      src/*) layer=${f#src/}; layer=${layer%%/*}; objects+=("src/CMakeFiles/rc_$layer.dir/${f#src/}.o") ;;
      tests/*) objects+=("tests/CMakeFiles/$(test_target_of "$f").dir/${f#tests/}.o") ;;
    esac
  done
  cmake --build "$BUILD_DIR" -j"$JOBS" --target "${objects[@]}"
  echo "build-cuda: OK (compiled ${#objects[@]} host files that depend on the CUDA / NCCL switches; nothing linked)"
  exit 0
fi

# The GPU test executables, and of test_unit the suites of the CUDA host side
# (tests/unit/test_cuda_host.cpp: Cuda*) and, with the CLI, of test_cli_device.cpp (CliDevice).
gpu_tests=$(cd tests && ls */test_*_gpu.cpp 2>/dev/null | sed -E 's#^([a-z]+)/.*#test_\1_gpu#' | sort -u)
if [ "${CUDA_BUILD_OPT:-release}" = compile-check ]; then
  cli_targets=()
  unit_filter='Cuda*'
else
  cli_targets=(roberta)
  unit_filter='Cuda*:CliDevice.*'
fi
cmake --build "$BUILD_DIR" -j"$JOBS" --target "${cli_targets[@]}" $gpu_tests test_unit
for t in $gpu_tests; do
  "$BUILD_DIR/tests/$t" --gtest_brief=1
done
"$BUILD_DIR/tests/test_unit" --gtest_brief=1 --gtest_filter="$unit_filter"
echo "build-cuda: OK"
