#!/usr/bin/env bash
# The house rule "a function stays under 80 lines" (docs/development.md),
# checked by the test command: universal-ctags finds every function
# definition outside tests/ and its length (first to last line). A
# function over the limit fails unless scripts/function_size_allow.txt
# lists it, at no more than the length written there; an entry whose
# function is back under the limit (or gone) fails too, so the list only
# shrinks. clang-tidy's readability-function-size (scripts/tidy.sh) says
# the same per file but needs every translation unit compiled, minutes of
# the test command; this takes a second.
#   --write   rewrite the allow list from the tree as it is (for a reviewer
#             to read in the diff, never to grow it silently)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
LIMIT=80
ALLOW=scripts/function_size_allow.txt
command -v ctags >/dev/null || { echo "function_size.sh: universal-ctags is missing (scripts/setup.sh)" >&2; exit 1; }

# Every function definition, as ctags writes it; a run that found none is an
# error, not a pass.
TAGS=$(ctags -R --languages=C++,CUDA --kinds-C++=f --kinds-CUDA=f --fields=+ne -o - \
  common chain storage kernels protocol miner validator tools bench)
[ "$(grep -c . <<<"$TAGS")" -gt 500 ] || { echo "function_size.sh: ctags found too few functions" >&2; exit 1; }

# path<TAB>function<TAB>lines, longest of a name per file, over the limit.
measure() {
  printf '%s\n' "$TAGS" |
    awk -F'\t' -v limit="$LIMIT" '{
      line = ""; end = "";
      for (i = 4; i <= NF; i++) {
        if ($i ~ /^line:/) line = substr($i, 6);
        if ($i ~ /^end:/) end = substr($i, 5);
      }
      if (line == "" || end == "") next;
      n = end - line + 1; key = $2 "\t" $1;
      if (n > limit && n > longest[key]) longest[key] = n;
    } END { for (k in longest) print k "\t" longest[k] }' | sort
}

if [ "${1:-}" = --write ]; then
  { echo "# Functions over $LIMIT lines, each at most as long as written here (scripts/function_size.sh)."
    echo "# Shorten one and delete its line; never add one."
    measure; } > "$ALLOW"
  exit 0
fi

fail=0
declare -A allowed
while IFS=$'\t' read -r path fn n; do
  [[ -z "$path" || "$path" == \#* ]] && continue
  allowed["$path"$'\t'"$fn"]=$n
done < "$ALLOW"
declare -A seen
while IFS=$'\t' read -r path fn n; do
  key="$path"$'\t'"$fn"
  seen["$key"]=1
  if [ -z "${allowed[$key]:-}" ]; then
    echo "function_size.sh: $path: $fn is $n lines (at most $LIMIT): split it" >&2
    fail=1
  elif [ "$n" -gt "${allowed[$key]}" ]; then
    echo "function_size.sh: $path: $fn grew to $n lines (listed at ${allowed[$key]}, at most $LIMIT): split it" >&2
    fail=1
  fi
done < <(measure)
for key in "${!allowed[@]}"; do
  if [ -z "${seen[$key]:-}" ]; then
    echo "function_size.sh: ${key/$'\t'/: } is no longer over $LIMIT lines: delete its line in $ALLOW" >&2
    fail=1
  fi
done
exit "$fail"
