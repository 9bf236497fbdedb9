#!/usr/bin/env bash
# The GPU benchmarks in one go (docs/gpu.md, docs/benchmarks.md), for a
# machine with a CUDA GPU, the CUDA toolkit (nvcc), CMake, Ninja and Python
# torch with its libtorch, but none of the Debian -dev libraries crucible
# builds against, and no network.
#
#   bash bench/gpu.sh fetch   # where apt works (e.g. after scripts/setup.sh):
#                             # the .deb files into bench/gpu-debs/ (ignored by git)
#   bash bench/gpu.sh         # on the GPU machine, with bench/gpu-debs/ copied there
#
# The run unpacks the .deb files with `dpkg -x` into a prefix under the
# build folder (never into /), builds against it and torch's libtorch, and
# runs, writing everything to one file ($OUT/gpu-results.md when $OUT is
# set, else build-gpu/gpu-results.md):
#   1. the backend-ops test on the GPU (every op against the CPU reference);
#   2. codec_bench --device cuda: the codec against torch's own GPU ops, with
#      the device's copy bandwidth, on the LLaMA-like set and at 1B;
#   3. eval_bench at 1b: miners evaluated per minute, 20 miners;
#   4. the replica and the miner's inner loop on the GPU against the CPU
#      (model_tests, miner_tests: *OnCuda*), and two ranks on the GPU
#      against one (RankGroupOnCuda: c10d/Gloo, if the libtorch has it).
# Made to finish within 8 minutes on a 16-core machine with an H100/H200.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
DEBS="$ROOT/bench/gpu-debs"
# What the build needs from Debian, as -dev packages (scripts/setup.sh has them all).
DEV=(pkgconf libsecp256k1-dev libcurl4-openssl-dev librocksdb-dev libboost-dev libfmt-dev libgtest-dev googletest
     libgmock-dev libbenchmark-dev nlohmann-json3-dev libtomlplusplus-dev libcli11-dev prometheus-cpp-dev
     libsodium-dev libssl-dev libzstd-dev libxxhash-dev libgloo-dev)
# The base system and the compiler's own: always there, never to shadow.
BASE='^(libc6|libc6-dev|libc-dev-bin|libgcc-s1|libstdc\+\+6|gcc-12-base|libgcc-12-dev|libstdc\+\+-12-dev|linux-libc-dev|libcrypt1|libcrypt-dev|libnsl.*|libtirpc.*|perl.*|debconf|dpkg|tar|zlib1g|libzstd1|liblzma5|libbz2-1.0|libselinux1|libpcre2-8-0|libgomp1|libquadmath0|libatomic1|libasan8|liblsan0|libtsan2|libubsan1|libitm1|libcc1-0|gcc-12|g\+\+-12|cpp-12|binutils.*|libbinutils|libctf.*|libgprofng0|libjansson4|libisl23|libmpc3|libmpfr6|libgmp10|libzstd-dev|libc6-i386|lib32.*|libx32.*)$'

if [ "${1:-run}" = fetch ]; then
  mkdir -p "$DEBS"
  mapfile -t closure < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
    --no-replaces --no-enhances "${DEV[@]}" | grep -v '^ ' | grep -v '^<' | sort -u | grep -Ev "$BASE")
  (cd "$DEBS" && apt-get download "${closure[@]}" "libzstd-dev" >/dev/null)
  echo "gpu.sh: $(ls "$DEBS"/*.deb | wc -l) packages, $(du -sh "$DEBS" | cut -f1) in $DEBS"
  exit 0
fi

B="$ROOT/build-gpu"
mkdir -p "$B"
RESULTS="${OUT:-$B}/gpu-results.md"
: > "$RESULTS"
say() { printf '%s\n' "$@" | tee -a "$RESULTS"; }
run() {  # a step, its output kept in the results, its time and exit code said
  local title=$1 limit=$2
  shift 2
  say "" "## $title" "" '```'
  local t0=$SECONDS
  timeout "$limit" "$@" 2>&1 | tee -a "$RESULTS"
  local rc=${PIPESTATUS[0]}
  say '```' "" "($title: exit $rc, $((SECONDS - t0)) s)"
  return "$rc"
}

say "# crucible on a GPU: $(date -u +%Y-%m-%dT%H:%MZ)" ""
say "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo 'nvidia-smi not found')"
say "- nvcc: $(nvcc --version 2>/dev/null | tail -1 || echo 'not found')"
say "- cores: $(nproc), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
# CRUCIBLE_TORCH_PREFIX: another libtorch's CMake folder (to try the script where python has no torch).
TORCH=${CRUCIBLE_TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)}
say "- torch: $(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(), "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI)' 2>&1)"
if [ -z "$TORCH" ]; then say "gpu.sh: python3 cannot import torch: nothing to build against"; exit 1; fi
if ! ls "$DEBS"/*.deb >/dev/null 2>&1; then say "gpu.sh: no .deb files in $DEBS: run 'bash bench/gpu.sh fetch' where apt works"; exit 1; fi

# 1. The -dev libraries into a prefix.
P="$B/prefix"
if [ ! -f "$P/.unpacked" ]; then
  rm -rf "$P" && mkdir -p "$P"
  for d in "$DEBS"/*.deb; do dpkg -x "$d" "$P"; done
  touch "$P/.unpacked"
fi
ARCH_LIB="$P/usr/lib/x86_64-linux-gnu"
export PATH="$P/usr/bin:$PATH"
export PKG_CONFIG_PATH="$ARCH_LIB/pkgconfig:$P/usr/share/pkgconfig:$P/usr/lib/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$P"
export LD_LIBRARY_PATH="$ARCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CPATH="$P/usr/include${CPATH:+:$CPATH}"
export LIBRARY_PATH="$ARCH_LIB${LIBRARY_PATH:+:$LIBRARY_PATH}"
# Absolute library paths inside the unpacked CMake and .so link files point at /usr: make them point here.
if [ ! -f "$P/.relocated" ]; then
  grep -rlIZ --include='*.cmake' -e '/usr/lib/x86_64-linux-gnu' -e '"/usr/include' "$P" 2>/dev/null |
    xargs -0 -r sed -i -e "s#\([\" ;]\)/usr/lib/x86_64-linux-gnu#\1$ARCH_LIB#g" -e "s#\([\" ;]\)/usr/include#\1$P/usr/include#g"
  # Dangling absolute symlinks (libfoo.so -> /usr/lib/...) become relative.
  find "$P" -type l | while read -r l; do
    t=$(readlink "$l")
    case "$t" in /*) [ -e "$P$t" ] && ln -sf "$P$t" "$l" ;; esac
  done
  touch "$P/.relocated"
fi

# A step whose output goes to its own log; the results get its last lines.
quiet() {
  local title=$1 limit=$2 log="$B/$1.log"
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$log" 2>&1
  local rc=$?
  say "" "## $title: exit $rc, $((SECONDS - t0)) s (log: $log)"
  if [ "$rc" -ne 0 ]; then say '```' "$(tail -40 "$log")" '```'; fi
  return "$rc"
}

# 2. Configure and build what the benchmarks need.
quiet configure 300 cmake -S . -B "$B/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCRUCIBLE_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$TORCH;$P/usr;$ARCH_LIB/cmake" -DCMAKE_CUDA_HOST_COMPILER=g++ || exit 1
quiet build 420 cmake --build "$B/build" -j "$(nproc)" --target kernels_tests codec_bench eval_bench || exit 1

# 3. Run.
BIN="$B/build/bin"
run "backend-ops test (every op on every backend)" 120 "$BIN/kernels_tests" --gtest_filter='Every/BackendOps.*:BackendDiscovery.*:BackendCodec.*'
run "codec against torch's GPU ops (LLaMA-like 25M and 1B)" 240 "$BIN/codec_bench" --device cuda --set all --repeat 3
run "validator evaluation at 1b: 20 miners" 240 "$BIN/eval_bench" --model configs/models/1b.toml --device cuda --miners 20 --samples 4

# 4. The nodes' model on the GPU (last: their build needs every library):
#    the replica and the miner's inner loop on CUDA against the CPU.
if quiet "build model_tests miner_tests" 300 cmake --build "$B/build" -j "$(nproc)" --target model_tests miner_tests; then
  run "replica on the GPU" 60 "$BIN/model_tests" --gtest_filter='ReplicaOnCuda.*'
  run "miner inner loop on the GPU (bf16 autocast)" 60 "$BIN/miner_tests" --gtest_filter='InnerLoopOnCuda.*'
  run "a miner of two ranks (c10d/Gloo) on the GPU against one" 60 "$BIN/miner_tests" \
    --gtest_filter='RankGroupOnCuda.*:RankGroup.*'
fi
say "" "results: $RESULTS"
