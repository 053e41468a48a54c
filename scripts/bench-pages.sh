#!/usr/bin/env bash
# make bench-pages: serve's pages over the demo's results (make demo first), on this machine.
#  1. every page of every demo result ready in Chromium within 1 s (web/test/page_timing.mjs);
#  2. the largest result's JSON fetched as curl --compressed does, against plain: medians of 5
#     fetches each, when the server makes the result (the file touched before each fetch: what a
#     user meets on opening it) and when it has kept it (what the page's later fetches meet).
set -euo pipefail
HD=${1:-build/heterodyne}
DEMO=${2:-out/demo}
ls "$DEMO"/*.hdy > /dev/null 2>&1 || { echo "bench-pages: no results in $DEMO: run make demo first" >&2; exit 2; }
log=$(mktemp)
"$HD" serve --models "$DEMO" --experiments "$DEMO" --port 0 2> "$log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 100); do grep -q "serving on" "$log" && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$log" | head -1)
[ -n "$url" ] || { cat "$log" >&2; exit 1; }
base=${url%%/?token=*}
token=${url#*token=}
largest=$(ls -S "$DEMO"/*.hdy | head -1)
name=$(basename "$largest" .hdy)
result="$base/api/experiments/$name/result?token=$token"
fetch() { curl -s -o /dev/null -w '%{time_total}\n' "$@" "$result"; }
median() { sort -g | sed -n 3p; }
made() { for _ in 1 2 3 4 5; do touch "$largest"; fetch "$@"; done | median; }
kept() { fetch "$@" > /dev/null; for _ in 1 2 3 4 5; do fetch "$@"; done | median; }
made_plain=$(made); made_compressed=$(made --compressed)
kept_plain=$(kept); kept_compressed=$(kept --compressed)
size_plain=$(curl -s "$result" | wc -c)
size_br=$(curl -s -H 'Accept-Encoding: br' "$result" -o - | wc -c)
echo "== $name.hdy's result: ${size_plain} B plain, ${size_br} B as curl --compressed gets it (br)"
awk -v mc="$made_compressed" -v mp="$made_plain" -v kc="$kept_compressed" -v kp="$kept_plain" 'BEGIN {
  printf "   made for the request: plain %.3f s, compressed %.3f s: %.2fx (target <= 1.5x)\n", mp, mc, mc / mp
  printf "   kept by the server:   plain %.4f s, compressed %.4f s: %.2fx (curl decompressing)\n", kp, kc, kc / kp }'
names=$(ls "$DEMO"/*.hdy | xargs -n1 basename | sed 's/\.hdy$//' | paste -sd,)
echo "== every page in Chromium (budget 1000 ms)"
HD_PAGE_BUDGET_MS=1000 node web/test/ui.test.mjs timing "$url" "$(mktemp -d)" "$names"
