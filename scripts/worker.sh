#!/usr/bin/env bash
# Builds heterodyne-worker against another llama.cpp build and prints its path on the last line.
#
#   scripts/worker.sh SPEC
#     SPEC = SOURCE[,CMAKE_OPTION=VALUE...]
#     SOURCE = pinned | /path/to/llama.cpp | npm:node-llama-cpp@X.Y.Z
#   e.g. pinned,GGML_NATIVE=OFF      the pinned tree with AVX2-only kernels (no AVX-512)
#        npm:node-llama-cpp@3.20.0   the llama.cpp of an earlier node-llama-cpp release
#
# llama.cpp is built by scripts/llama.sh (cached by commit and flags); the worker itself is an
# incremental CMake build in $CACHE/workers/<key>, so it follows this checkout's engine code.
# heterodyne calls this on first use of --a-llama-build / --b-llama-build.
set -euo pipefail
say() { echo "worker.sh: $*" >&2; }
[ $# -eq 1 ] && [ -n "$1" ] || { say "usage: scripts/worker.sh SOURCE[,OPTION=VALUE...]"; exit 2; }

here=$(cd "$(dirname "$0")/.." && pwd)
CACHE="${HETERODYNE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/heterodyne}"
IFS=',' read -r -a parts <<< "$1"
source_spec="${parts[0]}"
flags=""
for opt in "${parts[@]:1}"; do
  [[ "$opt" =~ ^[A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*$ ]] || { say "'$opt' is not OPTION=VALUE"; exit 2; }
  flags+=" -D$opt"
done
case "$source_spec" in
  pinned) llama_source="" ;;
  npm:node-llama-cpp@[0-9]*.[0-9]*.[0-9]*) llama_source="$source_spec" ;;
  npm:*) say "'$source_spec' is not npm:node-llama-cpp@X.Y.Z (a release, e.g. npm:node-llama-cpp@3.21.1)"; exit 2 ;;
  *)
    [ -d "$source_spec" ] || { say "'$source_spec' is not pinned, npm:node-llama-cpp@X.Y.Z or a directory"; exit 2; }
    [ -f "$source_spec/include/llama.h" ] || { say "'$source_spec' is not a llama.cpp tree (no include/llama.h)"; exit 2; }
    llama_source=$(cd "$source_spec" && pwd) ;;
esac

# A checkout is keyed by its commit and local edits too: the worker compiles against its headers
# and links the llama.cpp build of that commit, so another commit checked out there (a bisect's
# next probe, a user's git pull) is another worker, never the last one rebuilt in place.
tree_state=""
if [ -d "$llama_source" ]; then
  tree_state="$(git -C "$llama_source" rev-parse HEAD 2>/dev/null || true) $(git -C "$llama_source" diff HEAD 2>/dev/null | sha256sum | cut -c1-12)"
fi
key=$({ printf '%s\n%s\n%s\n' "$here" "$llama_source" "$flags"; [ -z "$tree_state" ] || echo "$tree_state"; } |
  sha256sum | cut -c1-16)
build="$CACHE/workers/$key"
mkdir -p "$build"
if [ ! -f "$build/build.ninja" ]; then
  say "configuring a worker for '$1' in $build (llama.cpp is built once if it is not cached: minutes)"
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHETERODYNE_WORKER_ONLY=ON \
    -DHETERODYNE_LLAMA_SOURCE="$llama_source" -DHETERODYNE_LLAMA_FLAGS="${flags# }" >"$build/configure.log" 2>&1 ||
    { rm -f "$build/build.ninja"; say "configure failed (llama.cpp's build or ours), see $build/configure.log"; exit 1; }
fi
cmake --build "$build" --target heterodyne-worker >"$build/build.log" 2>&1 ||
  { say "the worker did not compile against this llama.cpp, see $build/build.log"; exit 1; }
echo "$build/heterodyne-worker"
