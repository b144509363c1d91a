#!/usr/bin/env bash
# The README's install times: each install step (demo: install-deps.sh --demo; tests: all sets)
# on a fresh Debian 12 minbase chroot (mmdebstrap), download and install timed apart. Root.
# Usage: [WORK=/var/tmp] tools/measure_install_times.sh   → $WORK/install-times.txt
set -euo pipefail
R=$(cd "$(dirname "$0")/.." && pwd)
for mode in demo full; do
  root=${WORK:-/var/tmp}/rc-install-$mode
  rm -rf "$root"
  mmdebstrap --variant=minbase --include=ca-certificates bookworm "$root" http://deb.debian.org/debian > "${WORK:-/var/tmp}/mm-$mode.log" 2>&1
  mkdir -p "$root/root/rc"
  cp -r "$R/scripts" "$root/root/rc/"
  mount -t proc proc "$root/proc"
  flag=""; [ $mode = demo ] && flag="--demo"
  pkgs=$(chroot "$root" bash -c "cd /root/rc && scripts/install-deps.sh $flag --print" | tr '\n' ' ')
  chroot "$root" apt-get update -qq
  t0=$(date +%s.%N)
  chroot "$root" bash -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --download-only $pkgs" > "${WORK:-/var/tmp}/dl-$mode.log" 2>&1
  t1=$(date +%s.%N)
  chroot "$root" bash -c "cd /root/rc && DEBIAN_FRONTEND=noninteractive scripts/install-deps.sh $flag" > "${WORK:-/var/tmp}/inst-$mode.log" 2>&1
  t2=$(date +%s.%N)
  umount "$root/proc"
  echo "$mode download $(echo "$t1-$t0"|bc) s, install (incl. apt-get update) $(echo "$t2-$t1"|bc) s" >> "${WORK:-/var/tmp}/install-times.txt"
  du -sh "$root/var/cache/apt/archives" >> "${WORK:-/var/tmp}/install-times.txt"
  rm -rf "$root"
done
