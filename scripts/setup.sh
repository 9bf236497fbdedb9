#!/usr/bin/env bash
# Sets up everything crucible needs on Debian 12 and builds it into build/.
# Idempotent: a second run with nothing to do finishes in seconds.
#   - Debian packages (architecture.md): apt-get update once, install only what is missing
#   - npm test tools from tools/package.json + lockfile (npm ci when the lockfile changed)
#   - configure (once) and build with Ninja into build/, binaries in build/bin/
# Usage: setup.sh [--demo]
#   (none)  everything: the test servers and tools too, and every target
#           (tests, fuzzers, benchmarks); what scripts/test.sh needs.
#   --demo  only what running a network needs (scripts/demo.sh, the
#           quickstart, an operator's machine): no S3 server, browser,
#           clang or load tool, and only the three binaries are built.
#           A later run without --demo adds the rest to the same build/.
# Environment: JOBS (build parallelism, default: number of cores),
#              CRUCIBLE_CMAKE_ARGS (extra configure arguments, e.g. -DCMAKE_PREFIX_PATH=...).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
log() { printf 'setup: %s\n' "$*" >&2; }

MODE=all
case "${1:-}" in
  "") ;;
  --demo) MODE=demo ;;
  *) echo "usage: scripts/setup.sh [--demo]" >&2; exit 2 ;;
esac

# What building and running the nodes needs. GoogleTest and Google
# Benchmark are small and let one configured build/ serve both modes.
PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache ca-certificates curl
  libtorch-dev libopenblas0-pthread libgloo-dev
  libsecp256k1-dev libcurl4-openssl-dev librocksdb-dev libboost-dev libfmt-dev
  libgtest-dev googletest libgmock-dev libbenchmark-dev nlohmann-json3-dev
  libtomlplusplus-dev libcli11-dev prometheus-cpp-dev libsodium-dev libssl-dev libzstd-dev libxxhash-dev
)
# What only the test suite and the developer tools need: the S3 server
# (radosgw), the dashboard's browser, the fuzzers' clang, format and tidy,
# ctags for the function-size check, the load generator, systemd-analyze
# for the unit files, numpy for interop.
if [ "$MODE" = all ]; then
  PACKAGES+=(python3-numpy clang-14 libclang-rt-14-dev clang-format clang-tidy universal-ctags wrk systemd chromium
    radosgw ceph-mon ceph-osd)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  log "installing ${#missing[@]} Debian packages: ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# npm test tools, pinned by tools/package-lock.json.
stamp=tools/node_modules/.crucible-lock-sha256
want=$(sha256sum tools/package-lock.json | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  log "installing npm test tools (npm ci in tools/)"
  (cd tools && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" > "$stamp"
fi

# Configure once (again only if the build dir is missing or broken), then build.
# Packages installed just now (e.g. clang-14 after a --demo setup) are found
# by configuring again.
if [ ! -f build/build.ninja ] || ((${#missing[@]})); then
  log "configuring build/"
  # shellcheck disable=SC2086
  cmake -S . -B build -G Ninja ${CRUCIBLE_CMAKE_ARGS:-}
fi
# Paths relative to the checkout in ccache's hashes: a fresh clone elsewhere
# (as CI makes) still hits the cache.
export CCACHE_BASEDIR="$ROOT"
if [ "$MODE" = demo ]; then
  log "building the three binaries"
  cmake --build build -j "${JOBS:-$(nproc)}" --target crucible crucible-miner crucible-validator
else
  log "building"
  cmake --build build -j "${JOBS:-$(nproc)}"
fi
log "done: binaries in build/bin/"
