#!/usr/bin/env bash
# Builds the web UI (web/) into OUT: app.js and app.css, which CMake embeds in the binary.
#   scripts/web.sh WEB_DIR OUT_DIR
# Packages come from the npm registry (package-lock.json pins them), installed once into
# web/node_modules; esbuild compiles the TypeScript and bundles uPlot.
set -euo pipefail
web=$(cd "$1" && pwd); out=$2
mkdir -p "$out"
cd "$web"
if [ ! -x node_modules/.bin/esbuild ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "web.sh: installing the web UI's packages from the npm registry" >&2
  npm ci --no-audit --no-fund --silent
fi
# The entry: every kind's page (src/kind_*.ts registers itself, kind_views.ts), then the app.
# A new kind's file is bundled without an edit anywhere else.
entry=""
for f in src/kind_*.ts; do entry+="import \"./${f%.ts}\";"$'\n'; done
entry+='import "./src/main";'
printf '%s\n' "$entry" | node_modules/.bin/esbuild --bundle --minify --format=iife --target=es2020 \
  --sourcefile=entry.ts --loader=ts --outfile="$out/app.js" --log-level=warning
node_modules/.bin/esbuild src/style.css --bundle --minify --outfile="$out/app.css" --log-level=warning
