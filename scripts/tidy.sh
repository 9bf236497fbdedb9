#!/usr/bin/env bash
# clang-tidy (.clang-tidy: function size, a few bug-prone patterns) over the
# given source files, or over every project .cpp when none are given, using
# build/compile_commands.json. Slow on the torch translation units; not part
# of the test command.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
[ -f build/compile_commands.json ] || { echo "tidy.sh: run scripts/setup.sh first" >&2; exit 1; }
if (($#)); then files=("$@"); else mapfile -t files < <(git ls-files -- '*.cpp' | grep -v '^tests/'); fi
exec clang-tidy -p build --quiet "${files[@]}"
