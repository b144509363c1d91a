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
  export DEBIAN_FRONTEND=noninteractive
  # Multiarch: arm64 libraries install beside the amd64 ones (/usr/lib/aarch64-linux-gnu).
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
  fi
  apt-get update -q -o DPkg::Lock::Timeout=900
  # The arm64 twins of scripts/install-deps.sh's -dev packages. Header-only packages
  # (nlohmann-json, CLI11, opencl-headers) are Architecture: all and serve both builds.
  # qemu-user-static runs the tests; binutils-aarch64-linux-gnu (from crossbuild-essential)
  # disassembles for the instruction checks of docs/arm64.md.
  apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=900 \
    crossbuild-essential-arm64 cmake ninja-build pkg-config ccache qemu-user-static \
    libdnnl2:arm64 \
    nlohmann-json3-dev libcli11-dev \
    libgtest-dev:arm64 libgmock-dev:arm64 \
    libutf8proc-dev:arm64 libzip-dev:arm64 libarchive-dev:arm64 \
    libboost1.74-dev:arm64 libssl-dev:arm64 libcurl4-openssl-dev:arm64
  # libdnnl-dev:arm64 cannot be co-installed with libdnnl-dev:amd64 (dpkg: "trying to overwrite
  # shared dnnl_config.h", which differs in DNNL_GPU_RUNTIME), so its headers and CMake config
  # are unpacked into a private prefix that cmake/toolchain-aarch64.cmake points dnnl_DIR at.
  dnnl_prefix=/opt/roberta-arm64/dnnl
  if [ ! -f "$dnnl_prefix/usr/lib/aarch64-linux-gnu/cmake/dnnl/dnnl-config.cmake" ]; then
    tmp=$(mktemp -d)
    chmod 755 "$tmp"  # apt's _apt user downloads into it
    (cd "$tmp" && apt-get download -q libdnnl-dev:arm64 libdnnl2:arm64)
    mkdir -p "$dnnl_prefix"
    for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$dnnl_prefix"; done
    rm -rf "$tmp"
  fi
  # libgloo-dev installs into /usr/lib, not a multiarch folder, so its :arm64 flavour cannot be
  # co-installed with the amd64 one either: unpacked into a private prefix too, with the absolute
  # /usr/lib paths of its CMake targets pointed there (cmake/toolchain-aarch64.cmake sets Gloo_DIR).
  gloo_prefix=/opt/roberta-arm64/gloo
  if [ ! -f "$gloo_prefix/usr/share/cmake/Gloo/GlooConfig.cmake" ]; then
    tmp=$(mktemp -d)
    chmod 755 "$tmp"
    (cd "$tmp" && apt-get download -q libgloo-dev:arm64 libgloo0:arm64)
    mkdir -p "$gloo_prefix"
    for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$gloo_prefix"; done
    sed -i "s|\"/usr/lib/|\"$gloo_prefix/usr/lib/|g; s|\"/usr/include|\"$gloo_prefix/usr/include|g" \
      "$gloo_prefix"/usr/share/cmake/Gloo/GlooTargets*.cmake
    rm -rf "$tmp"
  fi
  if [ "${RC_BUILD_BENCH:-OFF}" = ON ]; then
    apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=900 libbenchmark-dev:arm64
  fi
fi

if ! command -v aarch64-linux-gnu-g++ >/dev/null; then
  echo "build-arm64: no aarch64-linux-gnu-g++; run without --no-deps (as root) to install crossbuild-essential-arm64" >&2
  exit 2
fi

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# The same options as the x86 build (scripts/test.sh); only the toolchain differs.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-aarch64.cmake" "${launcher[@]}" \
  -DRC_WERROR="${RC_WERROR:-OFF}" -DRC_BUILD_BENCH="${RC_BUILD_BENCH:-OFF}"

start=$(date +%s)
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j"$JOBS" ${TARGETS:+--target $TARGETS}
echo "build-arm64: built in $(($(date +%s) - start)) s with -j$JOBS into $BUILD_DIR"
file "$BUILD_DIR/cli/roberta" 2>/dev/null || true
