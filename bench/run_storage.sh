#!/usr/bin/env bash
# Runs bench/storage_bench against LocalStore and a local Ceph radosgw (S3),
# which it starts and stops. Usage: bash bench/run_storage.sh [--sizes 1,16,64,256] [--repeat 3]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CEPH_DIR="${CEPH_DIR:-$ROOT/build/ceph-bench}"
export CRUCIBLE_S3_PORT="${CRUCIBLE_S3_PORT:-7481}" CRUCIBLE_S3_MON_PORT="${CRUCIBLE_S3_MON_PORT:-6790}"
# 256 MB objects, several copies in flight: more than the tests' 1 GiB of OSD memory.
export CRUCIBLE_S3_MEMSTORE_BYTES="${CRUCIBLE_S3_MEMSTORE_BYTES:-4294967296}"
bash "$ROOT/scripts/s3/start_s3.sh"
trap 'bash "$ROOT/scripts/s3/stop_s3.sh"' EXIT
"$ROOT/build/bin/storage_bench" --s3-endpoint "http://127.0.0.1:$CRUCIBLE_S3_PORT" "$@"
