#!/usr/bin/env bash
# The GitHub Action's body (action.yml), runnable anywhere: builds heterodyne unless
# HETERODYNE_BIN names one, runs `check` once, appends the markdown report to
# $GITHUB_STEP_SUMMARY and passed / first-divergent-tap / report to $GITHUB_OUTPUT, and exits
# with check's code (0 pass, 1 divergence, 2 bad configuration).
#   HD_REFERENCE, HD_MODEL   required
#   HD_ARGS                  more check flags, split on spaces
#   HD_LLAMA_SOURCE          build against this llama.cpp checkout
#   HD_BUILD                 build directory (default: build-action in this repository)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
: "${HD_REFERENCE:?HD_REFERENCE (the reference directory) is required}"
: "${HD_MODEL:?HD_MODEL (the candidate GGUF) is required}"
summary="${GITHUB_STEP_SUMMARY:-/dev/null}"
outputs="${GITHUB_OUTPUT:-/dev/null}"

bin="${HETERODYNE_BIN:-}"
if [ -z "$bin" ]; then
  build="${HD_BUILD:-$here/build-action}"
  make -C "$here" bin BUILD="$build" LLAMA_SOURCE="${HD_LLAMA_SOURCE:-}" >&2
  bin="$build/heterodyne"
fi

read -ra extra <<< "${HD_ARGS:-}"
report="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/heterodyne-check.json"
rm -f "$report"
set +e
"$bin" check --reference "$HD_REFERENCE" --model "$HD_MODEL" "${extra[@]}" \
  --format markdown --json-out "$report" > "$report.md"
code=$?
set -e

cat "$report.md" >> "$summary"
if [ -s "$report" ]; then
  python3 - "$report" >> "$outputs" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("passed=" + ("true" if r["passed"] else "false"))
print("first-divergent-tap=" + (r["first_divergent_tap"] or ""))
PY
  echo "report=$report" >> "$outputs"
else  # a bad configuration: check said why on stderr
  printf '### heterodyne check: could not run (exit %s)\n\nSee the step log.\n' "$code" >> "$summary"
  echo "passed=false" >> "$outputs"
fi
exit "$code"
