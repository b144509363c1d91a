#!/usr/bin/env bash
# Builds the roberta.cpp container image (deploy/Dockerfile) with no image registry:
#   1. a Debian 12 minbase root file system from Debian's own packages (mmdebstrap), through
#      the apt mirror this machine already uses (/etc/apt/sources.list{,.d}), imported as the
#      base image localhost/debian:bookworm-minbase-ARCH (FROM scratch + the rootfs tarball);
#   2. `buildah bud` of deploy/Dockerfile on that base (vfs storage, chroot isolation: works
#      unprivileged-ish in containers and sandboxes where overlayfs and runc do not).
#
# Usage: deploy/build-image.sh [--arch amd64|arm64] [--tag NAME] [--rebuild-base] [--export FILE.tar]
#   --arch arm64 (Graviton) on an x86 host needs qemu-user-static registered in binfmt_misc.
#   --export writes a docker-archive (`docker load -i FILE.tar`, then push to ECR).
# Needs root, buildah, mmdebstrap (scripts/install-deps.sh --image installs them).
set -euo pipefail
cd "$(dirname "$0")/.."

ARCH=$(dpkg --print-architecture)
TAG=localhost/roberta:latest
REBUILD_BASE=0
EXPORT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) ARCH=$2; shift 2 ;;
    --tag) TAG=$2; shift 2 ;;
    --rebuild-base) REBUILD_BASE=1; shift ;;
    --export) EXPORT=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$ARCH" in amd64|arm64) ;; *) echo "build-image: --arch must be amd64 or arm64, got '$ARCH'" >&2; exit 2 ;; esac
for tool in buildah mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "build-image: $tool is missing; hint: scripts/install-deps.sh --image" >&2; exit 1; }
done

BUILDAH=(buildah --storage-driver vfs)
BASE_TAG=localhost/debian:bookworm-minbase-$ARCH
WORK=${RC_IMAGE_WORK:-/var/tmp/roberta-image}
mkdir -p "$WORK"
t0=$(date +%s)

# The apt sources of this machine, so the rootfs comes from the same mirror (and works where
# only that mirror is reachable). deb822 .sources files and one-line .list files both work.
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -s "$f" ] && grep -qv '^\s*\(#\|$\)' "$f" && sources+=("$f")
done
[ ${#sources[@]} -gt 0 ] || { echo "build-image: no apt sources in /etc/apt; hint: configure apt first" >&2; exit 1; }

if [ "$REBUILD_BASE" = 1 ] || ! "${BUILDAH[@]}" inspect --type image "$BASE_TAG" >/dev/null 2>&1; then
  echo "build-image: mmdebstrap bookworm minbase ($ARCH) from ${sources[*]}"
  # Docs, man pages and locales are never installed (dpkg path-exclude, kept in the image so
  # later apt-get installs skip them too); copyright files are kept (licences).
  mmdebstrap --variant=minbase --architectures="$ARCH" --mode=root --format=tar \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    bookworm "$WORK/rootfs-$ARCH.tar" "${sources[@]}"
  ctr=$("${BUILDAH[@]}" from scratch)
  "${BUILDAH[@]}" add "$ctr" "$WORK/rootfs-$ARCH.tar" /
  "${BUILDAH[@]}" config --arch "$ARCH" --os linux --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/bash "$ctr"
  "${BUILDAH[@]}" commit --rm "$ctr" "$BASE_TAG"
  rm -f "$WORK/rootfs-$ARCH.tar"
  echo "build-image: base $BASE_TAG ready after $(( $(date +%s) - t0 )) s"
fi

# --format docker: HEALTHCHECK is a Docker-format field (OCI images drop it).
"${BUILDAH[@]}" bud --isolation chroot --format docker --layers \
  --arch "$ARCH" --build-arg BASE="$BASE_TAG" -f deploy/Dockerfile -t "$TAG" .

size=$("${BUILDAH[@]}" inspect --type image --format '{{.FromImageID}}' "$TAG" >/dev/null 2>&1; \
       "${BUILDAH[@]}" images --format '{{.Size}}' "$TAG" | head -1)
echo "build-image: $TAG ($ARCH) built in $(( $(date +%s) - t0 )) s, size $size"
if [ -n "$EXPORT" ]; then
  rm -f "$EXPORT"
  "${BUILDAH[@]}" push "$TAG" "docker-archive:$EXPORT:${TAG#localhost/}"
  echo "build-image: exported to $EXPORT ($(du -h "$EXPORT" | cut -f1))"
fi
