#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs the main job: the local
# network demo (build/bin/crucible demo). Extra arguments go to the demo.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh
exec build/bin/crucible demo "$@"
