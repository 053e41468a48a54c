#!/usr/bin/env bash
# Runs every libFuzzer target built in BUILD for SECONDS each, FUZZ_JOBS at a time (2), from the seed
# corpora in fuzz/corpus/<target> (new inputs go to BUILD/corpus/<target>, crashes to
# BUILD/artifacts). Prints one line per target: executions, corpus size, findings.
set -uo pipefail
build="${1:?usage: fuzz.sh BUILD SECONDS}"; seconds="${2:-600}"
here="$(cd "$(dirname "$0")/.." && pwd)"
export HD_FUZZ_MODEL="${HD_FUZZ_MODEL:-$here/../shared/models/stories260K.gguf}"
mkdir -p "$build/artifacts" "$build/logs"
run_one() {
  local t="$1"
  mkdir -p "$build/corpus/$t"
  "$build/fuzz/fuzz_$t" "$build/corpus/$t" "$here/fuzz/corpus/$t" -max_total_time="$seconds" \
    -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
    > "$build/logs/$t.log" 2>&1
  local rc=$?
  local execs; execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/logs/$t.log" | grep -o '[0-9]*$')
  local found; found=$(ls "$build/artifacts" 2>/dev/null | grep -c "^$t-" || true)
  echo "fuzz_$t: exit $rc, ${execs:-?} executions in ${seconds} s, corpus $(ls "$build/corpus/$t" | wc -l) inputs, $found finding(s)"
}
targets=(safetensors experiment manifest text serve gguf report sbatch)
if [ ! -f "$HD_FUZZ_MODEL" ]; then
  echo "fuzz_text skipped: no model at $HD_FUZZ_MODEL (set HD_FUZZ_MODEL)"
  targets=(safetensors experiment manifest serve report sbatch)
fi
status=0
jobs_at_once="${FUZZ_JOBS:-2}"
for ((i = 0; i < ${#targets[@]}; i += jobs_at_once)); do
  pids=()
  for ((j = i; j < i + jobs_at_once && j < ${#targets[@]}; ++j)); do
    run_one "${targets[j]}" & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
done
ls "$build/artifacts" | grep -q . && { echo "findings in $build/artifacts"; status=1; }
exit $status
