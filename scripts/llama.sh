#!/usr/bin/env bash
# Makes a built llama.cpp available and prints its build directory on the last line.
#
#   scripts/llama.sh            the pinned tree from node-llama-cpp@3.21.1 (npm), commit verified,
#                               with scripts/llama-graph-start.patch applied
#   scripts/llama.sh DIR        a user's own llama.cpp checkout
#   scripts/llama.sh npm:node-llama-cpp@X.Y.Z
#                               the llama.cpp another node-llama-cpp release carries (for a
#                               version-vs-version arm; its commit is recorded, not pinned)
#
# HETERODYNE_LLAMA_FLAGS adds CMake options (e.g. -DGGML_NATIVE=OFF for AVX2-only kernels);
# they are part of the cache key.
#
# The build (static libraries llama + ggml) lives in a cache directory keyed by (commit, flags),
# so later builds and CI reuse it. The peer tool llama-perplexity, which the tests and benchmarks
# compare against, is built into the same directory only when they are (CMake target
# llama_peer): it pulls in llama.cpp's common library, a third of the build, which `make demo`
# does not need. Nothing of llama.cpp is ever copied into this repository.
set -euo pipefail

PIN_PACKAGE="node-llama-cpp@3.21.1"
PIN_COMMIT="80fb11ac73e66d89eae2c6a91d8a77428fa733ed"
CACHE="${HETERODYNE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/heterodyne}"
JOBS="${JOBS:-$(nproc)}"
EXTRA_FLAGS="${HETERODYNE_LLAMA_FLAGS:-}"
# ggml compiles through ccache where it is installed (GGML_CCACHE); with paths taken relative to
# the cache, two commits of one tree built in their own directories share every unchanged object
# (a bisect's probes, scripts/bisect-git.sh).
export CCACHE_BASEDIR="$CACHE"

say() { echo "llama.sh: $*" >&2; }

# npm_source PACKAGE [COMMIT]: the llama.cpp tree a node-llama-cpp release carries as a git
# bundle, cloned once into the cache. With COMMIT the bundle's HEAD must be that commit.
npm_source() {
  local package="$1" expect="${2:-}"
  local src="$CACHE/llama-src/${expect:-$package}"
  if [ ! -f "$src/.heterodyne-verified" ]; then
    local work; work=$(mktemp -d)
    say "fetching $package from the npm registry"
    (cd "$work" && npm pack --silent "$package" >/dev/null) ||
      { say "npm pack $package failed"; rm -rf "$work"; exit 1; }
    tar -xzf "$work"/node-llama-cpp-*.tgz -C "$work" package/llama/gitRelease.bundle ||
      { say "$package carries no llama.cpp bundle"; rm -rf "$work"; exit 1; }
    rm -rf "$src" && mkdir -p "$(dirname "$src")"
    git clone -q "$work/package/llama/gitRelease.bundle" "$src" 2>/dev/null
    rm -rf "$work"
    local head; head=$(git -C "$src" rev-parse HEAD)
    if [ -n "$expect" ] && [ "$head" != "$expect" ]; then
      say "bundle HEAD is $head, expected $expect: refusing to build"
      rm -rf "$src"; exit 1
    fi
    touch "$src/.heterodyne-verified"
  fi
  echo "$src"
}

# with_graph_start SRC: heterodyne's one addition to llama.cpp, llama_set_graph_start (patched
# passes start at the patched point without a copy of the weights, docs/transplants.md), applied
# to the trees this script fetched itself. A user's own checkout is never edited: without it,
# patched passes run from the embeddings, which gives the same numbers. The applied patch is part
# of the tree's local changes, hence of the build key and of every run's provenance.
with_graph_start() {
  local src="$1" patch="$HERE/llama-graph-start.patch"
  local want; want=$(sha256sum "$patch" | cut -c1-16)
  exec 8>"$src.patch.lock"
  flock 8
  if [ "$(cat "$src/.heterodyne-patched" 2>/dev/null)" != "$want" ]; then
    git -C "$src" checkout -q -- . 2>/dev/null || true
    if git -C "$src" apply --check "$patch" 2>/dev/null; then
      git -C "$src" apply "$patch"
    else
      say "llama-graph-start.patch does not apply to $src: patched passes run from the embeddings"
    fi
    echo "$want" > "$src/.heterodyne-patched"
  fi
  exec 8>&-
}

HERE=$(cd "$(dirname "$0")" && pwd)
src="${1:-}"
case "$src" in
  "") src=$(npm_source "$PIN_PACKAGE" "$PIN_COMMIT"); with_graph_start "$src" ;;
  npm:node-llama-cpp@*) src=$(npm_source "${src#npm:}"); with_graph_start "$src" ;;
  npm:*) say "only node-llama-cpp releases carry llama.cpp: $src"; exit 2 ;;
esac
[ -d "$src" ] || { say "$src: no such directory"; exit 2; }
src=$(cd "$src" && pwd)
[ -f "$src/include/llama.h" ] || { say "$src is not a llama.cpp tree (no include/llama.h)"; exit 2; }

commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
# A user's checkout may carry local edits: they change the numbers, so they change the key.
dirty=$(git -C "$src" diff HEAD 2>/dev/null | sha256sum | cut -c1-12 || true)
[ "$(git -C "$src" status --porcelain 2>/dev/null | grep -v '^??' | wc -l)" = 0 ] && dirty=clean

FLAGS="-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON -DGGML_RPC=ON \
-DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
-DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF $EXTRA_FLAGS"
# Intel AMX kernels stay out of native builds: on an Intel Xeon host that reports AMX (Firecracker
# guest, Linux 6.18) ggml's AMX matmul dies of SIGILL at its first tileloadd, llama-perplexity
# included, for every Q8_0/Q4 model (docs/llama-facts.md). GCC's explicit -mno-* flags win over
# -march=native. HETERODYNE_LLAMA_AMX=on keeps them, on hosts where they work.
CPU_FLAGS=""
if [ "${HETERODYNE_LLAMA_AMX:-off}" != on ] && c++ -mno-amx-tile -E -x c++ /dev/null >/dev/null 2>&1; then
  CPU_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
fi
key=$(printf '%s\n%s\n%s\n%s\n%s\n' "$commit" "$dirty" "$FLAGS" "$CPU_FLAGS" "$(c++ --version | head -1)" | sha256sum | cut -c1-16)
build="$CACHE/llama-build/${commit:0:12}-$key"

mkdir -p "$build"
# Two builds of one tree (CI and a shell, two worktrees) must not run ninja in one directory.
exec 9>"$build.lock"
flock 9
if [ ! -f "$build/.heterodyne-built" ]; then
  say "building llama.cpp $commit into $build (once; later builds reuse it)"
  # shellcheck disable=SC2086
  CFLAGS="${CFLAGS:-} $CPU_FLAGS" CXXFLAGS="${CXXFLAGS:-} $CPU_FLAGS" \
    cmake -S "$src" -B "$build" -G Ninja $FLAGS >"$build/configure.log" 2>&1 ||
    { say "configure failed, see $build/configure.log"; exit 1; }
  cmake --build "$build" -j "$JOBS" --target llama ggml ggml-rpc >"$build/build.log" 2>&1 ||
    { say "build failed, see $build/build.log"; exit 1; }
  printf 'source=%s\ncommit=%s\nlocal_changes=%s\nflags=%s\n' "$src" "$commit" "$dirty" \
    "$FLAGS${CPU_FLAGS:+ CFLAGS=$CPU_FLAGS}" > "$build/heterodyne-llama.txt"
  touch "$build/.heterodyne-built"
fi
echo "$build"
