#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs the whole test suite.
# Exits non-zero on any failure. Extra arguments go to ctest (e.g. -R Config).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh
ctest --test-dir build --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
