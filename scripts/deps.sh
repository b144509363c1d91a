#!/usr/bin/env bash
# Reads scripts/deps.list, the one list of Debian packages, for the scripts that install them.
# Usage: scripts/deps.sh SET...                 the packages of those sets, one a line
#        scripts/deps.sh --arm64-install SET...  what scripts/build-arm64.sh installs for them
#                                                (NAME for host packages, NAME:arm64 otherwise)
#        scripts/deps.sh --arm64-unpack SET...   "PREFIX NAME:arm64" lines: packages unpacked into
#                                                /opt/roberta-arm64/PREFIX
#        scripts/deps.sh --check                 validate the list, print nothing
# Sets: build demo test bench fuzz arm64 image scaleout. Env: RC_DEPS_LIST (another list file).
# Exit: 0 ok, 2 usage, 3 a malformed list (the line is named).
set -euo pipefail
list=${RC_DEPS_LIST:-$(dirname "$0")/deps.list}
mode=sets
case "${1:-}" in
  --arm64-install) mode=arm64-install; shift ;;
  --arm64-unpack) mode=arm64-unpack; shift ;;
  --check) mode=check; shift ;;
  -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
known="build demo test bench fuzz arm64 image scaleout"
for set in "$@"; do
  case " $known " in *" $set "*) ;; *) echo "deps.sh: unknown set '$set' (one of: $known)" >&2; exit 2 ;; esac
done
[ -r "$list" ] || { echo "deps.sh: cannot read $list" >&2; exit 3; }
[ "$mode" = check ] || [ $# -gt 0 ] || { echo "deps.sh: name at least one set (one of: $known)" >&2; exit 2; }

awk -v mode="$mode" -v wanted=" $* " -v known=" $known " -v list="$list" '
  function fail(msg) { printf "deps.sh: %s:%d: %s\n", list, NR, msg > "/dev/stderr"; bad = 1; exit 3 }
  /^[ \t]*(#|$)/ { next }
  {
    if (NF != 3) fail("want 3 columns (set, package, arm64), got " NF)
    if (index(known, " " $1 " ") == 0) fail("unknown set \x27" $1 "\x27")
    if ($2 !~ /^[a-z0-9][a-z0-9.+-]+$/) fail("not a Debian package name: \x27" $2 "\x27")
    n = split($3, how, ",")
    for (i = 1; i <= n; i++)
      if (how[i] !~ /^(host|arm64|-|unpack=[a-z0-9_-]+)$/) fail("arm64 column must be host, arm64, unpack=NAME or -, got \x27" how[i] "\x27")
    if (index(wanted, " " $1 " ") == 0) next
    if (mode == "sets") { print $2; next }
    for (i = 1; i <= n; i++) {
      if (mode == "arm64-install" && how[i] == "host") print $2
      else if (mode == "arm64-install" && how[i] == "arm64") print $2 ":arm64"
      else if (mode == "arm64-unpack" && how[i] ~ /^unpack=/) print substr(how[i], 8) " " $2 ":arm64"
    }
  }
' "$list"
