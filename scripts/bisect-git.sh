#!/usr/bin/env bash
# The llama.cpp commits `heterodyne bisect --llama-src DIR` walks. They are checked out in a
# private clone of DIR in the cache, never in DIR itself (a user's checkout is not ours to move).
#
#   scripts/bisect-git.sh clone DIR            the clone's path (made once, fetched from DIR
#                                              on every call: DIR's branches and tags)
#   scripts/bisect-git.sh resolve DIR CLONE REV  REV's commit hash (as DIR names it; the clone
#                                              must have it)
#   scripts/bisect-git.sh range CLONE GOOD BAD "<hash> <subject>" per commit from GOOD to BAD
#                                              along BAD's first-parent line, GOOD first
#   scripts/bisect-git.sh checkout CLONE HASH  the clone's work tree at HASH (the caller holds
#                                              CLONE.lock while it builds from it)
#
# The clone is keyed by DIR's root commit, so every checkout of one history shares a clone and
# its build directories sit at one depth: ccache (CCACHE_BASEDIR, scripts/llama.sh) then reuses
# the objects of one probe's build for the next, and only the files a commit changed compile.
set -euo pipefail
say() { echo "bisect-git.sh: $*" >&2; }
CACHE="${HETERODYNE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/heterodyne}"
export GIT_TERMINAL_PROMPT=0 LC_ALL=C

case "${1:-}" in
  clone)
    dir="${2:?clone DIR}"
    [ -d "$dir" ] || { say "--llama-src '$dir' is not a directory"; exit 2; }
    git -C "$dir" rev-parse --git-dir >/dev/null 2>&1 ||
      { say "--llama-src '$dir' is not a git checkout of llama.cpp (git finds no repository)"; exit 2; }
    [ -f "$dir/include/llama.h" ] || { say "--llama-src '$dir' is not a llama.cpp tree (no include/llama.h)"; exit 2; }
    dir=$(cd "$dir" && pwd -P)
    [ "$(git -C "$dir" rev-parse --show-toplevel)" = "$dir" ] ||
      { say "--llama-src '$dir' is inside a git repository, not the top of one: give the llama.cpp checkout itself"; exit 2; }
    root=$(git -C "$dir" rev-list --max-parents=0 HEAD | sort | head -1)
    clone="$CACHE/bisect-src/${root:0:16}"
    mkdir -p "$CACHE/bisect-src"
    exec 9>"$clone.lock"
    flock 9
    if [ ! -d "$clone/.git" ]; then
      rm -rf "$clone"
      git clone -q --no-checkout "$dir" "$clone" || { say "cannot clone $dir"; exit 1; }
    fi
    git -C "$clone" remote set-url origin "$dir"
    git -C "$clone" fetch -q --force --tags origin '+refs/heads/*:refs/remotes/origin/*' \
      '+refs/remotes/*:refs/remotes/src/*' ||
      { say "cannot fetch from $dir into $clone"; exit 1; }
    echo "$clone" ;;
  resolve)
    # Read in DIR, as the user names it there (its branches, tags, hashes); the clone has it.
    dir="${2:?}" clone="${3:?}" rev="${4:?}"
    hash=$(git -C "$dir" rev-parse -q --verify "$rev^{commit}" 2>/dev/null) ||
      { say "'$rev' names no commit of the --llama-src checkout (a branch, tag or hash it has; git fetch --tags there for release tags)"; exit 2; }
    git -C "$clone" cat-file -e "$hash^{commit}" 2>/dev/null ||
      { say "'$rev' ($hash) is on no branch or tag of the --llama-src checkout: a bisect walks committed history"; exit 2; }
    echo "$hash" ;;
  range)
    clone="${2:?}" good="${3:?}" bad="${4:?}"
    git -C "$clone" merge-base --is-ancestor "$good" "$bad" ||
      { say "--good $good is not an ancestor of --bad $bad: give the older commit as --good"; exit 2; }
    # grep reads it all (no -q): under pipefail, git killed by SIGPIPE would fail the test.
    git -C "$clone" rev-list --first-parent "$bad" | grep -x "$good" >/dev/null ||
      { say "--good $good is not on --bad $bad's first-parent line (a merged branch): give a commit of the line bad was made on"; exit 2; }
    echo "$good $(git -C "$clone" log -1 --format=%s "$good")"
    git -C "$clone" log --first-parent --reverse --format='%H %s' "$good..$bad" ;;
  checkout)
    clone="${2:?}" hash="${3:?}"
    git -C "$clone" checkout -q --force --detach "$hash" && git -C "$clone" clean -q -fdx ;;
  *) say "usage: scripts/bisect-git.sh clone|resolve|range|checkout …"; exit 2 ;;
esac
