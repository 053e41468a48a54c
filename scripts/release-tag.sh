#!/usr/bin/env bash
# The llama.cpp release tag (bNNNN) a node-llama-cpp release carries, from its package's
# llama/llama.cpp.info.json: fetched with `npm pack` (the npm registry is the only network a
# user has) and cached in $CACHE/releases/, so a release is fetched once.
#
#   scripts/release-tag.sh X.Y.Z      prints the tag on the last line
set -euo pipefail
say() { echo "release-tag.sh: $*" >&2; }
CACHE="${HETERODYNE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/heterodyne}"
version="${1:-}"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || { say "'$version' is not a release X.Y.Z"; exit 2; }
cached="$CACHE/releases/$version.tag"
if [ ! -s "$cached" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm_config_fetch_retries=0 npm pack --silent "node-llama-cpp@$version" >/dev/null 2>"$work/err") ||
    { say "npm pack node-llama-cpp@$version failed: $(tail -1 "$work/err")"; exit 1; }
  tar -xzf "$work"/node-llama-cpp-*.tgz -C "$work" package/llama/llama.cpp.info.json 2>/dev/null ||
    { say "node-llama-cpp@$version carries no llama/llama.cpp.info.json"; exit 1; }
  tag=$(sed -n 's/.*"tag"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$work/package/llama/llama.cpp.info.json")
  [[ "$tag" =~ ^[A-Za-z0-9._-]+$ ]] || { say "node-llama-cpp@$version names no llama.cpp tag"; exit 1; }
  mkdir -p "$CACHE/releases"
  echo "$tag" > "$cached.tmp" && mv "$cached.tmp" "$cached"
fi
cat "$cached"
