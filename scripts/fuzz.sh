#!/usr/bin/env bash
# Builds every libFuzzer target under Fuzz/Targets and runs each for the given
# number of seconds (default 60), starting from the committed seed corpus in
# Fuzz/corpus/<target> (copied, so the committed corpus is not changed).
# Prints executions per target; exits non-zero on any finding (crash, trap,
# timeout, out-of-memory), with the input saved under fuzz-artifacts/.
#
#   scripts/fuzz.sh [seconds] [target...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
out=.build/fuzz
mkdir -p "$out" fuzz-artifacts

mapfile -t core < <(find Sources/ANCS -name '*.swift' | sort)
if [ $# -gt 0 ]; then targets=("$@"); else
  mapfile -t targets < <(ls Fuzz/Targets | sed 's/\.swift$//' | sort)
fi

status=0
printf '%-22s %12s %10s %s\n' target executions exec/s result
for target in "${targets[@]}"; do
  swiftc -sanitize=fuzzer,address -parse-as-library -O -g -module-name ANCS \
    "${core[@]}" Fuzz/Support/*.swift "Fuzz/Targets/$target.swift" -o "$out/$target" 2> "$out/$target.build.log" \
    || { cat "$out/$target.build.log" >&2; exit 1; }
  work=$(mktemp -d)
  [ -d "Fuzz/corpus/$target" ] && cp -r "Fuzz/corpus/$target/." "$work/"
  log="$out/$target.log"
  if "$out/$target" "$work" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="fuzz-artifacts/$target-" >"$log" 2>&1; then
    result=ok
  else
    result="FINDING (see $log and fuzz-artifacts/)"
    status=1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  rate=$(( runs / (seconds > 0 ? seconds : 1) ))
  printf '%-22s %12s %10s %s\n' "$target" "$runs" "$rate" "$result"
  rm -rf "$work"
done
exit $status
