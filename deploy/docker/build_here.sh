#!/usr/bin/env bash
# Builds deploy/docker/Dockerfile and runs the image, on a Debian 12 machine
# without a Docker engine or a reachable image registry (as the machines
# crucible is developed on): podman builds it, and the debian:12 and
# debian:12-slim base images are made with debootstrap from Debian's mirror,
# the same apt source scripts/setup.sh uses. Needs root (debootstrap, and
# podman's chroot isolation where the machine is itself a container).
#   bash deploy/docker/build_here.sh [IMAGE]     (default crucible:local)
# Installs podman and debootstrap with apt when missing; idempotent: the
# base images are made once.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
IMAGE=${1:-crucible:local}
WORK=${CRUCIBLE_CONTAINER_WORK:-/var/tmp/crucible-container}
log() { printf 'build_here: %s\n' "$*" >&2; }

missing=()
for p in podman debootstrap; do command -v "$p" >/dev/null || missing+=("$p"); done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# vfs: no overlay mounts, which a container inside a container may not have.
export STORAGE_DRIVER=${STORAGE_DRIVER:-vfs}
if ! podman image exists docker.io/library/debian:12; then
  log "making the debian:12 base image with debootstrap (bookworm, minbase)"
  rm -rf "$WORK/rootfs"
  mkdir -p "$WORK"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" http://deb.debian.org/debian
  rm -rf "$WORK/rootfs/var/cache/apt/archives/"*.deb "$WORK/rootfs/var/lib/apt/lists/"*
  tar -C "$WORK/rootfs" -c . | podman import - docker.io/library/debian:12
  rm -rf "$WORK/rootfs"
fi
# debian:12-slim differs from debian:12 by its removed documentation only.
podman image exists docker.io/library/debian:12-slim ||
  podman tag docker.io/library/debian:12 docker.io/library/debian:12-slim

# A machine behind a TLS-intercepting proxy trusts the proxy's CA in its own
# npm config (cafile) or NODE_EXTRA_CA_CERTS; the build's `npm ci` is given
# the same bundle and an npmrc naming it, mounted for the build only (never
# in the image).
ca=()
bundle=$(npm config get cafile 2>/dev/null || true)
[ -f "$bundle" ] || bundle=${NODE_EXTRA_CA_CERTS:-}
if [ -n "$bundle" ] && [ -f "$bundle" ]; then
  mkdir -p "$WORK"
  echo "cafile=/run/host-ca.crt" > "$WORK/npmrc"
  ca=(--volume "$bundle:/run/host-ca.crt:ro" --volume "$WORK/npmrc:/root/.npmrc:ro")
fi
log "building $IMAGE"
podman build --pull=never --isolation chroot --network host "${ca[@]}" \
  -f deploy/docker/Dockerfile --target runtime -t "$IMAGE" .
log "running it"
if ! podman run --rm --network host "$IMAGE" crucible --version; then
  # A machine that is itself a container may not let podman make the
  # namespaces `run` needs; a build step runs in the image by chroot.
  log "podman run is not possible here; running the binaries in the image as a build step instead"
  printf 'FROM %s\nRUN crucible --version && crucible-miner --version && crucible-validator --version\n' "$IMAGE" |
    podman build --pull=never --isolation chroot --network host --no-cache -f - "$WORK"
fi
