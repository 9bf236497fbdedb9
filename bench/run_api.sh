#!/usr/bin/env bash
# The score API under load: wrk (Debian) with 100 connections for 10 s per
# route against bench/api_server (a synthetic state: 256 uids, 50 windows),
# each route's requests/s as a ratio of the trivial /healthz route measured
# in the same run, and its p99 latency.
#   bash bench/run_api.sh [seconds]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_PER_ROUTE=${1:-10}
command -v wrk >/dev/null || { echo "wrk is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
STATE=$(mktemp -d)
coproc SERVER { exec "$ROOT/build/bin/api_server_bench" "$STATE"; }
read -r _ PORT <&"${SERVER[0]}"
trap 'exec {SERVER[1]}>&-; wait; rm -rf "$STATE"' EXIT
run() {
  wrk -t2 -c100 -d"${SECONDS_PER_ROUTE}s" --latency "http://127.0.0.1:$PORT$1" | awk '
    /Requests\/sec/ {rps=$2}
    /^ +99%/ {p99=$2}
    END {print rps, p99}'
}
read -r base base_p99 < <(run /healthz)
printf '| route | requests/s | vs /healthz | p99 latency |\n|---|---|---|---|\n'
printf '| /healthz (baseline) | %s | 1.00x | %s |\n' "$base" "$base_p99"
for route in /v1/scores /v1/windows/25 /v1/miners/7 /v1/weights /v1/weights/history /v1/progress; do
  read -r rps p99 < <(run "$route")
  printf '| %s | %s | %sx | %s |\n' "$route" "$rps" "$(awk -v a="$rps" -v b="$base" 'BEGIN{printf "%.2f", a/b}')" "$p99"
done
