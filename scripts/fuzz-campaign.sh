#!/usr/bin/env bash
# A long fuzzing campaign: each target runs until it has executed N inputs
# (default 10 000 000), with its dictionary, from the committed corpus; new
# coverage is merged into Fuzz/corpus/<target>, which is then minimized
# (libFuzzer -merge=1 into an empty folder: the fewest inputs that keep all
# the coverage). Targets run one after another; a finding stops nothing
# else and is reported at the end. Prints one table, and keeps each run's
# log under .build/fuzz/campaign/.
#
#   scripts/fuzz-campaign.sh [--max-len N] [executions] [target...]
#
# --max-len N bounds the inputs (see scripts/fuzz.sh): the engine targets'
# inputs are sequences of operations, and an execution costs in proportion
# to its input's length.
#
# Reproduce a finding as scripts/fuzz.sh says; add its input to
# Fuzz/corpus/<target> with a regression test, then run the campaign again.
set -uo pipefail
cd "$(dirname "$0")/.."

max_len=()
if [ "${1:-}" = --max-len ]; then max_len=(--max-len "${2:-}"); shift 2; fi
runs=${1:-10000000}
shift || true
case "$runs" in ''|*[!0-9]*) echo "usage: scripts/fuzz-campaign.sh [--max-len N] [executions] [target...]" >&2; exit 2 ;; esac
if [ $# -gt 0 ]; then targets=("$@"); else
  mapfile -t targets < <(ls Fuzz/Targets | sed -n 's/\.swift$//p' | sort)
fi
logs=.build/fuzz/campaign
mkdir -p "$logs"
status=0
rows=()
for target in "${targets[@]}"; do
  start=$(date +%s)
  scripts/fuzz.sh --merge --runs "$runs" "${max_len[@]}" 0 "$target" > "$logs/$target.txt" 2>&1
  code=$?
  elapsed=$(( $(date +%s) - start ))
  line=$(grep "^$target " "$logs/$target.txt" | tail -1)
  [ $code -eq 0 ] || status=1
  # Minimize: the fewest inputs that keep the merged corpus's coverage.
  before=$(ls "Fuzz/corpus/$target" | wc -l)
  if [ $code -eq 0 ] && [ -x ".build/fuzz/$target" ]; then
    minimized=$(mktemp -d)
    if ".build/fuzz/$target" -merge=1 "$minimized" "Fuzz/corpus/$target" > "$logs/$target.minimize.txt" 2>&1; then
      rm -f "Fuzz/corpus/$target"/*
      cp "$minimized"/* "Fuzz/corpus/$target/" 2>/dev/null || true
    fi
    rm -rf "$minimized"
  fi
  after=$(ls "Fuzz/corpus/$target" | wc -l)
  rows+=("$(printf '%-22s %8ss  corpus %4s -> %4s  %s' "$target" "$elapsed" "$before" "$after" "${line#"$target"}")")
done
printf '%-22s %9s  %-20s  %s\n' target time corpus "executions exec/s result"
for row in "${rows[@]}"; do echo "$row"; done
exit $status
