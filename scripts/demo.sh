#!/usr/bin/env bash
# Sets up what the demo needs (scripts/setup.sh --demo: no test servers, only
# the three binaries built), then runs the main job: the local network demo
# (build/bin/crucible demo). Extra arguments go to the demo.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh --demo
exec build/bin/crucible demo "$@"
