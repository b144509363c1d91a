#!/usr/bin/env bash
# The CPU test suite built with AddressSanitizer + UndefinedBehaviorSanitizer (GCC, the
# `asan` CMake preset, build/asan). Not part of scripts/test.sh: a second full build with
# instrumented tests does not fit CI's 20 minutes on 2 cores (docs/security.md). Any
# sanitizer report fails the test that triggered it.
# Usage: scripts/test-sanitize.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
cmake --preset asan
cmake --build --preset asan -j"$(nproc)"
ctest --preset asan --no-tests=error -j"$(nproc)" "$@"
