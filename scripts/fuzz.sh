#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each (default 600) on a corpus
# kept in build/fuzz-corpus/<target>/, and prints the executions and any
# crash. Build first (scripts/setup.sh builds the targets with clang-14).
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SECONDS_EACH=${1:-600}
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(packet_fuzz peer_json_fuzz location_fuzz safetensors_fuzz manifest_fuzz tokenizer_fuzz config_fuzz
  abi_rlp_fuzz sketch_fuzz)
rc=0
for t in "${TARGETS[@]}"; do
  bin=build/bin/$t
  [ -x "$bin" ] || { echo "fuzz.sh: $bin is not built" >&2; exit 1; }
  corpus=build/fuzz-corpus/$t
  mkdir -p "$corpus"
  [ -d "tests/fuzz/seeds/${t%_fuzz}" ] && cp -n "tests/fuzz/seeds/${t%_fuzz}"/* "$corpus"/ 2>/dev/null || true
  log=build/fuzz-corpus/$t.log
  echo "fuzz.sh: $t for ${SECONDS_EACH}s"
  if CRUCIBLE_FUZZ_SEED_DIR="$corpus" "$bin" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 \
      -malloc_limit_mb=512 -print_final_stats=1 -artifact_prefix="build/fuzz-corpus/$t-" "$corpus" >"$log" 2>&1; then
    grep -E '^stat::number_of_executed_units' "$log" | sed "s/^/  $t: /"
  else
    echo "  $t: CRASH (see $log)"; rc=1
  fi
done
exit "$rc"
