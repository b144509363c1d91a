#!/usr/bin/env bash
# Cross-builds roberta.cpp for aarch64 (Graviton) on a Debian 12 x86-64 machine, with Debian's
# multiarch packages (the same libraries as the x86 build, in their :arm64 flavour) and
# cmake/toolchain-aarch64.cmake. The result runs here under qemu-user (scripts/test-arm64.sh).
# Usage: scripts/build-arm64.sh [--no-deps] [build-dir]      (default build-arm64)
# Env:   JOBS (default nproc), RC_WERROR (default OFF), RC_BUILD_BENCH (default OFF),
#        TARGETS (default: everything; e.g. "roberta test_layernorm" builds only those).
set -euo pipefail
cd "$(dirname "$0")/.."

deps=1
if [ "${1:-}" = "--no-deps" ]; then
  deps=0
  shift
fi
BUILD_DIR=${1:-build-arm64}
JOBS=${JOBS:-$(nproc)}

if [ "$deps" = 1 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "build-arm64: installing the arm64 packages needs root (or pass --no-deps)" >&2
    exit 2
  fi
  # The packages come from scripts/deps.list, as the x86 build's do: its arm64 column says, for
  # each library of the build and test sets (and the arm64 set: the cross compiler, qemu, the
  # runtime libraries the unpacked ones need), whether the amd64 package serves (tools,
  # Architecture: all headers), the :arm64 one installs beside it (multiarch), or it is unpacked.
  sets=(build test arm64)
  if [ "${RC_BUILD_BENCH:-OFF}" = ON ]; then
    sets+=(bench)
  fi
  install=$(scripts/deps.sh --arm64-install "${sets[@]}")
  unpack=$(scripts/deps.sh --arm64-unpack "${sets[@]}")
  export DEBIAN_FRONTEND=noninteractive
  # Multiarch: arm64 libraries install beside the amd64 ones (/usr/lib/aarch64-linux-gnu).
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
  fi
  apt-get update -q -o DPkg::Lock::Timeout=900
  # shellcheck disable=SC2086  # one package a word
  apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=900 $install
  # Packages whose :arm64 flavour cannot be co-installed with the amd64 one (libdnnl-dev: "trying
  # to overwrite shared dnnl_config.h", which differs in DNNL_GPU_RUNTIME; libgloo-dev: installs
  # into /usr/lib, no arch triplet) are unpacked into /opt/roberta-arm64/PREFIX, where
  # cmake/toolchain-aarch64.cmake points dnnl_DIR and Gloo_DIR. A prefix is unpacked again when
  # the list of its packages changed.
  for prefix in $(echo "$unpack" | cut -d' ' -f1 | sort -u); do
    dir=/opt/roberta-arm64/$prefix
    want=$(echo "$unpack" | awk -v p="$prefix" '$1 == p {print $2}' | sort)
    [ "$(cat "$dir/.packages" 2>/dev/null)" = "$want" ] && continue
    tmp=$(mktemp -d)
    chmod 755 "$tmp"  # apt's _apt user downloads into it
    # shellcheck disable=SC2086
    (cd "$tmp" && apt-get download -q $want)
    rm -rf "$dir"
    mkdir -p "$dir"
    for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$dir"; done
    rm -rf "$tmp"
    # Gloo's CMake targets name absolute /usr/lib and /usr/include paths: point them here.
    if [ -d "$dir/usr/share/cmake/Gloo" ]; then
      sed -i "s|\"/usr/lib/|\"$dir/usr/lib/|g; s|\"/usr/include|\"$dir/usr/include|g" \
        "$dir"/usr/share/cmake/Gloo/GlooTargets*.cmake
    fi
    echo "$want" > "$dir/.packages"
  done
fi

if ! command -v aarch64-linux-gnu-g++ >/dev/null; then
  echo "build-arm64: no aarch64-linux-gnu-g++; run without --no-deps (as root) to install crossbuild-essential-arm64" >&2
  exit 2
fi

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# The same options as the x86 build (scripts/test.sh); only the toolchain differs. The configure
# links a probe against every external library (cmake/rc_dependencies.cmake), so a missing
# arm64 library fails here, in seconds, not at the end of the build.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-aarch64.cmake" "${launcher[@]}" \
  -DRC_WERROR="${RC_WERROR:-OFF}" -DRC_BUILD_BENCH="${RC_BUILD_BENCH:-OFF}"

start=$(date +%s)
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j"$JOBS" ${TARGETS:+--target $TARGETS}
echo "build-arm64: built in $(($(date +%s) - start)) s with -j$JOBS into $BUILD_DIR"
file "$BUILD_DIR/cli/roberta" 2>/dev/null || true
