#!/usr/bin/env bash
# Every arrow runs down (docs/architecture.md): a folder includes only its
# own headers and those of folders below it, never a sibling's or a higher
# one's; no public header includes an internal one (internal_include/);
# and only the top floor (tools/, bench/) defines main(). Run by
# scripts/test.sh; prints each offending include and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."

# The floor of each folder, and the folder each include prefix lives in.
declare -A floor=([common]=0 [kernels]=1 [chain]=1 [storage]=1 [protocol]=2 [miner]=3 [validator]=3 [tools]=4 [bench]=5)
declare -A home=([common]=common [kernels]=kernels [chain]=chain [storage]=storage [protocol]=protocol
  [miner]=miner [validator]=validator [cli]=tools)

bad=0
for dir in "${!floor[@]}"; do
  while IFS=: read -r file line prefix; do
    target=${home[$prefix]:-}
    if [[ -z $target ]]; then
      echo "$file:$line: crucible/$prefix/ is no module's header folder"
      bad=1
    elif [[ $target != "$dir" && ${floor[$target]} -ge ${floor[$dir]} ]]; then
      echo "$file:$line: $dir/ (floor ${floor[$dir]}) includes crucible/$prefix/ from $target/ (floor ${floor[$target]})"
      bad=1
    fi
  done < <(grep -rnoE '#include "crucible/[a-z_]+/' "$dir" --include='*.cpp' --include='*.h' --include='*.cu' \
             --include='*.cuh' --include='*.in' | sed -E 's|#include "crucible/([a-z_]+)/|\1|')
done
# Internal headers (<folder>/internal_include/) stay out of every public header.
while IFS= read -r internal; do
  name=${internal#*/internal_include/}
  if hits=$(grep -rln "#include \"$name\"" ./*/include 2>/dev/null); then
    echo "public header(s) include the internal $name:" $hits
    bad=1
  fi
done < <(find . -path ./build -prune -o -path '*/internal_include/*.h' -print)
for dir in common kernels chain storage protocol miner validator; do
  if grep -rlE '^int main\(' "$dir" --include='*.cpp' >/dev/null; then
    echo "$dir/ defines main(): node binaries live on the top floor (tools/)"
    grep -rlE '^int main\(' "$dir" --include='*.cpp'
    bad=1
  fi
done
exit "$bad"
