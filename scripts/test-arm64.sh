#!/usr/bin/env bash
# The arm64 test stage: runs the cross-built test suites (scripts/build-arm64.sh) under qemu-user
# once per aarch64 code path, by choosing the emulated CPU (QEMU_CPU), and checks that each run
# detected the path it was meant to (RC_TEST_EXPECT_ISA, tests/kernels/test_isa_paths.cpp):
#   neon       QEMU_CPU=cortex-a72      Armv8.0 Advanced SIMD only
#   neon_bf16  QEMU_CPU=max,sve=off     + BF16, I8MM (BFMMLA, SMMLA), no SVE
#   sve        QEMU_CPU=max,sve256=on   + SVE at 256 bits, as Graviton3 (Neoverse V1)
#   generic    QEMU_CPU=max,sve256=on with RC_CPU_ISA=generic (the portable loops)
# No binfmt_misc is needed for the test binaries: ctest runs each through qemu-aarch64-static
# (cmake/toolchain-aarch64.cmake), and tests that start our binaries through /bin/sh or
# test::Subprocess prefix RC_TEST_EMULATOR (tests/support/emulator.h). The tests whose launcher
# or script execs `roberta` itself (torchrun, mpirun, the node clients, death tests) need the
# kernel to run an aarch64 ELF: --binfmt registers Debian's qemu-aarch64 handler for that.
# Usage: scripts/test-arm64.sh [--build] [--binfmt] [--paths "neon sve ..."] [extra ctest args]
#   --build   run scripts/build-arm64.sh --no-deps first
#   --binfmt  (root) mount binfmt_misc if needed and register /usr/lib/binfmt.d/qemu-aarch64.conf
#             unless an aarch64 handler is there; it stays registered until reboot
# Env:  BUILD_DIR (default build-arm64), JOBS (ctest -j, default nproc),
#       LABELS (ctest -L regex; default: every CPU suite, as scripts/test.sh),
#       OMP_NUM_THREADS (default 1: see below).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build-arm64}
JOBS=${JOBS:-$(nproc)}
paths="neon neon_bf16 sve generic"
binfmt=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) scripts/build-arm64.sh --no-deps "$BUILD_DIR"; shift ;;
    --binfmt) binfmt=1; shift ;;
    --paths) paths=$2; shift 2 ;;
    --help|-h) sed -n '2,20p' "$0"; exit 0 ;;
    *) break ;;
  esac
done

QEMU=$(command -v qemu-aarch64-static || true)
if [ -z "$QEMU" ]; then
  echo "test-arm64: no qemu-aarch64-static; install qemu-user-static (scripts/build-arm64.sh does)" >&2
  exit 2
fi
if [ ! -f "$BUILD_DIR/CTestTestfile.cmake" ]; then
  echo "test-arm64: no arm64 build in $BUILD_DIR; run scripts/build-arm64.sh first (or pass --build)" >&2
  exit 2
fi

if [ "$binfmt" = 1 ]; then
  misc=/proc/sys/fs/binfmt_misc
  conf=/usr/lib/binfmt.d/qemu-aarch64.conf
  [ -f "$conf" ] || { echo "test-arm64: no $conf; install qemu-user-static" >&2; exit 2; }
  [ -e "$misc/register" ] || mount -t binfmt_misc binfmt_misc "$misc" ||
    { echo "test-arm64: cannot mount binfmt_misc (needs root, and a VM rather than a container)" >&2; exit 2; }
  if [ ! -e "$misc/qemu-aarch64" ]; then
    cat "$conf" > "$misc/register" || { echo "test-arm64: cannot register $conf (needs root)" >&2; exit 2; }
  fi
  echo "test-arm64: binfmt_misc runs aarch64 ELF files through $(sed -n 's/^interpreter //p' "$misc/qemu-aarch64")"
fi

label_args=(-LE "gpu|slow")
if [ -n "${LABELS:-}" ]; then
  label_args=(-L "$LABELS" -LE "gpu|slow")
fi

export RC_TEST_EMULATOR="$QEMU"
# One OpenMP thread unless asked: under qemu-user GOMP's busy-wait on emulated atomics can spin
# for minutes where one thread takes under a second (docs/arm64.md). OMP_NUM_THREADS=2 to check
# the threaded splits too.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
failed=()
total_start=$(date +%s)
for path in $paths; do
  unset RC_CPU_ISA
  case "$path" in
    neon) cpu="cortex-a72" ;;
    neon_bf16) cpu="max,sve=off" ;;
    sve) cpu="max,sve256=on" ;;
    generic) cpu="max,sve256=on"; export RC_CPU_ISA=generic ;;
    *) echo "test-arm64: unknown path '$path' (neon|neon_bf16|sve|generic)" >&2; exit 2 ;;
  esac
  export QEMU_CPU="$cpu" RC_TEST_EXPECT_ISA="$path"
  echo "=== test-arm64: path $path (QEMU_CPU=$cpu${RC_CPU_ISA:+, RC_CPU_ISA=$RC_CPU_ISA}) ==="
  start=$(date +%s)
  # The Python tests (PyTorch reference, layering check) run on the host, not on the arm64
  # build: once on x86 is enough.
  if (cd "$BUILD_DIR" && ctest --output-on-failure --no-tests=error "${label_args[@]}" \
        -E '^(python_reference_selftest|layering|layering_check_can_fail)$' \
        -j"$JOBS" --timeout 1800 "$@"); then
    echo "=== test-arm64: path $path passed in $(($(date +%s) - start)) s ==="
  else
    echo "=== test-arm64: path $path FAILED after $(($(date +%s) - start)) s ==="
    failed+=("$path")
  fi
done
echo "test-arm64: all paths took $(($(date +%s) - total_start)) s wall with -j$JOBS; CPU time of the tests"
echo "(user, system; independent of other load on the machine, the figure to size CI with):"
times | tail -1
if [ ${#failed[@]} -gt 0 ]; then
  echo "test-arm64: FAILED on: ${failed[*]}" >&2
  exit 1
fi
echo "test-arm64: OK ($paths)"
