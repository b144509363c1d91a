#!/usr/bin/env bash
# Configure-only check of every build the README promises: seconds, where a broken build
# otherwise shows only at the end of its own long run (or not at all, for the ones CI does not
# build). scripts/test.sh runs it first. Each build configures afresh in its own scratch folder:
#   x86    the README's two commands in the order a newcomer runs them: scripts/demo.sh's
#          configure, then scripts/test.sh's, in one folder; the tests must be configured.
#   image  deploy/Dockerfile's build flags (its RC_IMAGE_CMAKE_FLAGS), and every file that
#          configure found must come from a package scripts/deps.list's build set installs
#          (what the image's build stage installs), so a library added to the build and not to
#          the list fails here.
#   arm64  the cross-build (cmake/toolchain-aarch64.cmake); its configure links a probe against
#          every external library for arm64 (cmake/rc_dependencies.cmake). Skipped, and said so,
#          where the cross compiler is not installed (scripts/build-arm64.sh installs it), unless
#          RC_REQUIRE_ARM64=1.
# Every configure builds the link probe of cmake/rc_dependencies.cmake for its architecture.
# Usage: scripts/check-builds.sh [scratch-dir]     (default build-check)
# Env:   CHECK_BUILDS (default "x86 image arm64"), RC_DEPS_LIST (see scripts/deps.sh).
# Exit:  0 every build configures, 1 one does not (named on stderr), 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SCRATCH=${1:-build-check}
case "$SCRATCH" in /*) ;; *) SCRATCH=$ROOT/$SCRATCH ;; esac
failed=()

configure_log() { echo "$SCRATCH/$1.log"; }
fail() {
  echo "check-builds: $1: $2" >&2
  failed+=("$1")
}

check_x86() {
  local dir=$SCRATCH/x86 log
  log=$(configure_log x86)
  rm -rf "$dir"
  # The order a newcomer runs them; test.sh's configure must turn the tests on whatever the folder held.
  if ! BUILD_DIR=$dir scripts/demo.sh --no-deps --configure-only > "$log" 2>&1; then
    fail x86 "scripts/demo.sh's configure failed (log: $log)"
    return
  fi
  if ! BUILD_DIR=$dir scripts/test.sh --no-deps --configure-only >> "$log" 2>&1; then
    fail x86 "scripts/test.sh's configure failed (log: $log)"
    return
  fi
  local tests
  tests=$( (cd "$dir" && ctest -N) 2>/dev/null | sed -n 's/^Total Tests: //p')
  if [ "${tests:-0}" -eq 0 ]; then
    fail x86 "after scripts/demo.sh, scripts/test.sh's configure has no tests in $dir (RC_BUILD_TESTS=$(sed -n 's/^RC_BUILD_TESTS:BOOL=//p' "$dir/CMakeCache.txt"))"
    return
  fi
  echo "check-builds: x86 ok (demo then test configure: $tests tests)"
}

# The packages that own the files a configure found (tools, CMake package folders, libraries,
# header folders: the absolute /usr paths of its cache), printed "path<TAB>owner, owner".
owners_of_found_files() {
  local cache=$1 path
  grep -v '^CMAKE_INSTALL_PREFIX:' "$cache" | sed -n 's/^[A-Za-z0-9_.+-]*:\(FILEPATH\|PATH\)=\(\/usr\/.*\)$/\2/p' |
    tr ';' '\n' | sort -u |
    while read -r path; do
      [ -e "$path" ] || continue
      owners=$(dpkg -S "$path" 2>/dev/null | sed -n "s|: $path\$||p" | head -n1 || true)
      if [ -z "$owners" ]; then  # merged /usr: dpkg may have registered /lib/... or the link's target
        for alt in "${path#/usr}" "$(readlink -f "$path")"; do
          owners=$(dpkg -S "$alt" 2>/dev/null | sed -n "s|: $alt\$||p" | head -n1 || true)
          [ -n "$owners" ] && break
        done
      fi
      [ -n "$owners" ] && printf '%s\t%s\n' "$path" "$owners"
    done
}

check_image() {
  local dir=$SCRATCH/image log flags packages
  log=$(configure_log image)
  flags=$(sed -n 's/^ARG RC_IMAGE_CMAKE_FLAGS="\(.*\)"$/\1/p' deploy/Dockerfile)
  if [ -z "$flags" ]; then
    fail image "no ARG RC_IMAGE_CMAKE_FLAGS=\"...\" line in deploy/Dockerfile"
    return
  fi
  if ! grep -q 'deps.sh build)' deploy/Dockerfile; then
    fail image "deploy/Dockerfile's build stage does not install scripts/deps.sh's build set"
    return
  fi
  rm -rf "$dir"
  # shellcheck disable=SC2086  # the flags are words
  if ! cmake -S . -B "$dir" -G Ninja $flags > "$log" 2>&1; then
    fail image "configure with deploy/Dockerfile's flags failed (log: $log)"
    return
  fi
  packages=$(scripts/deps.sh build)
  # What installing the build set brings: the set and everything it depends on, recursively.
  # shellcheck disable=SC2086
  apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances $packages 2>/dev/null | grep -v '^ ' | tr -d '<>' | sed 's/:amd64$//' > "$dir/closure.txt"
  # Plus what every Debian base has (Priority: required, mmdebstrap's minbase).
  dpkg-query -W -f='${Package} ${Priority}\n' | awk '$2 == "required" {print $1}' >> "$dir/closure.txt"
  sort -u -o "$dir/closure.txt" "$dir/closure.txt"
  local missing=0 path owners owner ok
  while IFS=$'\t' read -r path owners; do
    ok=0
    for owner in ${owners//,/ }; do
      grep -qx "${owner%%:*}" "$dir/closure.txt" && ok=1 && break
    done
    if [ "$ok" = 0 ]; then
      echo "check-builds: image: configure found $path, from $owners, which scripts/deps.list's build set does not install" >&2
      missing=1
    fi
  done < <(owners_of_found_files "$dir/CMakeCache.txt")
  if [ "$missing" = 1 ]; then
    fail image "the image's build stage would miss packages: add them to the build set of scripts/deps.list"
    return
  fi
  echo "check-builds: image ok (configures with: $flags; every file it found is from the build set)"
}

check_arm64() {
  local dir=$SCRATCH/arm64 log
  log=$(configure_log arm64)
  if ! command -v aarch64-linux-gnu-g++ > /dev/null; then
    if [ "${RC_REQUIRE_ARM64:-0}" = 1 ]; then
      fail arm64 "no aarch64-linux-gnu-g++ (scripts/build-arm64.sh installs it, as root)"
    else
      echo "check-builds: arm64 SKIPPED: no aarch64-linux-gnu-g++ (scripts/build-arm64.sh installs the cross toolchain)"
    fi
    return
  fi
  rm -rf "$dir"
  if ! cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchain-aarch64.cmake" > "$log" 2>&1; then
    fail arm64 "the cross-build does not configure (log: $log):"
    sed -n '/CMake Error/,/^-- Configuring incomplete/p' "$log" | head -n 30 >&2
    return
  fi
  echo "check-builds: arm64 ok (configures, the external libraries link for aarch64)"
}

mkdir -p "$SCRATCH"
for build in ${CHECK_BUILDS:-x86 image arm64}; do
  case "$build" in
    x86) check_x86 ;;
    image) check_image ;;
    arm64) check_arm64 ;;
    *) echo "check-builds: unknown build '$build' (x86, image, arm64)" >&2; exit 2 ;;
  esac
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "check-builds: FAILED: ${failed[*]}" >&2
  exit 1
fi
