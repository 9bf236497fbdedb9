#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), checks the formatting, the
# functions' size (scripts/function_size.sh) and that every include runs
# down the module floors (scripts/layers.sh), then runs
# the whole test suite. Exits non-zero on any failure, and when a process
# the suite started is still running after it. Extra arguments go to ctest
# (e.g. -R Config).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh
bash scripts/format.sh --check
bash scripts/function_size.sh
bash scripts/layers.sh

# Processes a test may start: none of them may outlive the suite. pgrep
# matches the process name, which the kernel cuts to 15 characters.
NAMES='^(anvil|crucible|crucible-miner|crucible-valida.*|radosgw|ceph-mon|ceph-osd|[a-z_]+_fuzz?)$'
before=$(pgrep "$NAMES" 2>/dev/null | sort || true)
rc=0
ctest --test-dir build --output-on-failure -j "${JOBS:-$(nproc)}" "$@" || rc=$?

left=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
  now=$(pgrep "$NAMES" 2>/dev/null | sort || true)
  left=$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$now") | sed '/^$/d')
  [ -z "$left" ] && break
  sleep 1
done
if [ -n "$left" ]; then
  echo "test.sh: processes started by the suite are still running:" >&2
  for pid in $left; do ps -o pid=,ppid=,args= -p "$pid" >&2 || true; done
  for pid in $left; do kill -9 "$pid" 2>/dev/null || true; done
  rc=1
fi

# The container image (deploy/docker): built and run where a Docker engine
# answers and no arguments narrowed the suite; said so otherwise.
if [ "$#" -eq 0 ] && [ "${CRUCIBLE_SKIP_DOCKER:-0}" != 1 ] && docker info >/dev/null 2>&1; then
  docker build -q -f deploy/docker/Dockerfile --target runtime -t crucible:test . >/dev/null &&
    docker run --rm crucible:test crucible --version || { echo "test.sh: the container image failed" >&2; rc=1; }
else
  echo "test.sh: no Docker engine here (or CRUCIBLE_SKIP_DOCKER=1): the image in deploy/docker was not built"
fi
exit "$rc"
