#!/usr/bin/env bash
# scripts/timed.sh LOG "phase" command...: runs the command, then says how long it took, on
# stderr and as a line "seconds<TAB>phase" appended to LOG (make demo prints them all at the end).
set -uo pipefail
log=$1 phase=$2
shift 2
start=$(date +%s.%N)
"$@"
status=$?
seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
printf '%s\t%s\n' "$seconds" "$phase" >> "$log"
[ "$status" = 0 ] && echo "== $phase: ${seconds} s" >&2
exit "$status"
