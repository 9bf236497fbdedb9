#!/usr/bin/env bash
# clang-format (.clang-format) over the project's C++ and CUDA sources.
#   scripts/format.sh          rewrite files in place
#   scripts/format.sh --check  list files that differ and exit 1 (the test command runs this)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CLANG_FORMAT=${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}
if [ -z "$CLANG_FORMAT" ]; then
  echo "format.sh: clang-format not found (scripts/setup.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.h' '*.cu' | grep -v '^tools/node_modules/')
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    if ! "$CLANG_FORMAT" --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
  done
  if ((${#bad[@]})); then
    printf 'format.sh: not formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  exit 0
fi
"$CLANG_FORMAT" -i "${files[@]}"
