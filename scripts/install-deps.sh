#!/usr/bin/env bash
# Installs everything roberta.cpp needs to build, test and benchmark, from Debian 12 only.
# Run as root (or with sudo) on a fresh machine; safe to run again.
# Usage: scripts/install-deps.sh [--image] [--scaleout]
#   --image     also buildah + mmdebstrap (deploy/build-image.sh, scripts/test-image.sh)
#   --scaleout  also nginx-light (scripts/test-scaleout.sh)
# Neither is needed by scripts/test.sh (CI): those tests carry the `slow` label.
set -euo pipefail

extra=()
for arg in "$@"; do
  case "$arg" in
    --image) extra+=(buildah mmdebstrap) ;;
    --scaleout) extra+=(nginx-light) ;;
    *) echo "install-deps: unknown option '$arg' (--image, --scaleout)" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: run as root (e.g. sudo $0)" >&2
  exit 2
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# libopenblas0-pthread: without it python3-torch links the slow reference BLAS (libblas3),
# ~14x slower fp32 matmuls, and the PyTorch baseline of docs/ANCHORS.md (OpenBLAS) is not met.
# ocl-icd-opencl-dev: Debian's dnnl-config.cmake looks for OpenCL (its GPU runtime is OpenCL).
# protobuf-compiler: tests decode our TensorBoard records with protoc against the Event schema.
# clang-16 + libfuzzer-16-dev + libclang-rt-16-dev (its ASan/UBSan/libFuzzer runtimes; not pulled in by
# clang-16 without recommends) (+ libomp-16-dev, OpenMP for clang): the fuzz build (scripts/fuzz.sh).
# libgloo-dev: CPU collectives of data-parallel training (src/dist); iproute2: the two-"node"
# network-namespace test (tests/dist); openmpi-bin: mpirun launches the 2-rank test (only the
# launcher: the collectives stay gloo). clang-format: the format check (scripts/check-format.sh).
apt-get install -y -q --no-install-recommends \
  build-essential cmake ninja-build pkg-config git ca-certificates \
  libdnnl-dev ocl-icd-opencl-dev opencl-headers \
  nlohmann-json3-dev libcli11-dev \
  libgtest-dev libgmock-dev libbenchmark-dev \
  libutf8proc-dev libzip-dev libarchive-dev \
  libboost1.74-dev libssl-dev libcurl4-openssl-dev libre2-dev \
  wrk curl bc protobuf-compiler \
  python3 python3-torch python3-numpy \
  libopenblas0-pthread \
  clang-16 libfuzzer-16-dev libclang-rt-16-dev libomp-16-dev \
  libgloo-dev iproute2 openmpi-bin clang-format
if [ ${#extra[@]} -gt 0 ]; then
  apt-get install -y -q --no-install-recommends "${extra[@]}"
fi

# Reference tools (tools/*.py) run on Debian's own Python, where python3-torch lives.
/usr/bin/python3 -c 'import torch; print("install-deps: torch", torch.__version__)'
