#!/usr/bin/env bash
# llama-server from the pinned tree, for the server arms' peer test (tests/test_server_peer.cpp):
# scripts/llama.sh with the server on builds it in a directory of its own (the flags are part of
# the cache key, so the libllama every other target links is untouched), once per machine. No
# web UI: its assets would come from Hugging Face, which is not reachable (and not needed).
#   scripts/llama-server.sh [LLAMA_SOURCE] LINK    -> LINK points at bin/llama-server
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
link="${@: -1}"
src=()
[ $# -ge 2 ] && src=("$1")
export HETERODYNE_LLAMA_FLAGS="${HETERODYNE_LLAMA_FLAGS:-} -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF"
build=$("$HERE/llama.sh" "${src[@]}" | tail -1)
exec 9>"$build.lock"
flock 9
if [ ! -x "$build/bin/llama-server" ] || [ ! -f "$build/.heterodyne-server-built" ]; then
  echo "llama-server.sh: building llama-server in $build (once)" >&2
  cmake --build "$build" -j "${JOBS:-$(nproc)}" --target llama-server >"$build/server-build.log" 2>&1 ||
    { echo "llama-server.sh: build failed, see $build/server-build.log" >&2; exit 1; }
  touch "$build/.heterodyne-server-built"
fi
ln -sfn "$build/bin/llama-server" "$link"
