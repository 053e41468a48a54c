#!/usr/bin/env bash
# Installs everything heterodyne builds and tests with, from Debian packages only.
# Safe to run again: apt skips what is already there.
#   scripts/install-deps.sh          everything: the build, and what the tests start (a browser,
#                                    a Slurm cluster)
#   scripts/install-deps.sh build    what configuring and building needs, no more: `make demo`
#                                    on a fresh machine does not wait for chromium and Slurm
set -euo pipefail
PKGS="build-essential cmake ninja-build git pkg-config python3 \
libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev libssl-dev libzstd-dev \
libgtest-dev libgmock-dev libbenchmark-dev libcpp-httplib-dev sqlite3 ccache"
if [ "${1:-all}" != build ]; then
  PKGS="$PKGS chromium slurmctld slurmd slurm-client munge"
fi
missing=""
# node and npm may come from elsewhere than Debian (the image has its own); only ask apt when absent.
command -v npm >/dev/null || missing=" nodejs npm"
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "install-deps: installing$missing" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
