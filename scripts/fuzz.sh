#!/usr/bin/env bash
# Builds the libFuzzer targets under Fuzz/Targets and runs each for the given
# number of seconds (default 60), starting from a copy of its committed seed
# corpus Fuzz/corpus/<target> (the committed corpus is not changed unless
# --merge is given). Prints executions and exec/s per target; exits non-zero
# on any finding (crash, trap, invariant violation, leak, timeout,
# out-of-memory) or build failure, with the input saved under fuzz-artifacts/.
#
#   scripts/fuzz.sh [--merge] [seconds] [target...]
#
#   seconds 0   replay the corpus only (every committed input once), no fuzzing
#   --merge     afterwards, add the new inputs that reach new coverage to
#               Fuzz/corpus/<target> (libFuzzer -merge=1; names are SHA-1s)
#
# Reproduce a finding:   .build/fuzz/<target> fuzz-artifacts/<target>-crash-…
# Minimize it:           .build/fuzz/<target> -minimize_crash=1 -runs=100000 <file>
#
# Each target is one Swift file compiled together with Fuzz/Support/*.swift and
# the core sources it names on a `// sources:` line (directories of
# Sources/ANCS; all of Sources/ANCS if the line is absent), as module ANCS, so
# internal state is reachable. Builds use a snapshot of the sources under
# .build/fuzz/src (stack traces name those copies).
#
# Leak detection stays on: the Swift runtime's metadata and caches are
# reachable from globals, so LeakSanitizer does not report them (checked with
# a deliberately leaking harness; none of the targets reports any), and a real
# leak in the core would be a finding.
set -euo pipefail
cd "$(dirname "$0")/.."

merge=0
if [ "${1:-}" = "--merge" ]; then merge=1; shift; fi
seconds=${1:-60}
shift || true
case "$seconds" in ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [--merge] [seconds] [target...]" >&2; exit 2 ;; esac

out=.build/fuzz
mkdir -p "$out" fuzz-artifacts
if [ $# -gt 0 ]; then targets=("$@"); else
  mapfile -t targets < <(ls Fuzz/Targets | sed -n 's/\.swift$//p' | sort)
fi

# Every target is built from one snapshot of the sources, taken now: the
# same code for all, whatever is edited while they build and run.
rm -rf "$out/src" && mkdir -p "$out/src/Sources" && cp -R Sources/ANCS "$out/src/Sources/" && cp -R Fuzz "$out/src/"

build() {  # target
  local file="$out/src/Fuzz/Targets/$1.swift" dirs=() sources=()
  [ -f "$file" ] || { echo "no such target: $1" > "$out/$1.build.log"; return 1; }
  read -r -a dirs <<< "$(sed -n 's|^// sources:||p' "$file" | head -1)"
  if [ ${#dirs[@]} -eq 0 ]; then dirs=(.); fi
  for dir in "${dirs[@]}"; do mapfile -t -O "${#sources[@]}" sources < <(find "$out/src/Sources/ANCS/$dir" -name '*.swift' | sort); done
  swiftc -sanitize=fuzzer,address -parse-as-library -O -g -module-name ANCS \
    "${sources[@]}" "$out"/src/Fuzz/Support/*.swift "$file" -o "$out/$1" > "$out/$1.build.log" 2>&1
}

final_stat() {  # name log
  grep -o "stat::$1: *[0-9]*" "$2" | grep -o '[0-9]*$' || echo 0
}

status=0
printf '%-22s %12s %10s  %s\n' target executions exec/s result
for target in "${targets[@]}"; do
  if ! build "$target"; then
    grep -v 'ld.gold: warning' "$out/$target.build.log" >&2 || true
    printf '%-22s %12s %10s  %s\n' "$target" - - "BUILD FAILED"
    status=1
    continue
  fi
  work=$(mktemp -d)
  if [ -d "Fuzz/corpus/$target" ]; then cp -R "Fuzz/corpus/$target/." "$work/"; fi
  log="$out/$target.log"
  if [ "$seconds" -eq 0 ]; then limit=(-runs=0); else limit=(-max_total_time="$seconds"); fi
  if "$out/$target" "$work" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="fuzz-artifacts/$target-" > "$log" 2>&1; then
    result=ok
    if [ $merge -eq 1 ]; then
      mkdir -p "Fuzz/corpus/$target"
      before=$(ls "Fuzz/corpus/$target" | wc -l)
      "$out/$target" -merge=1 "Fuzz/corpus/$target" "$work" > "$out/$target.merge.log" 2>&1
      result="ok, merged $(( $(ls "Fuzz/corpus/$target" | wc -l) - before )) new inputs"
    fi
  else
    what=$(grep -m1 -E 'invariant violated|Fatal error|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|SUMMARY' "$log" || true)
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | head -1)
    result="FINDING: ${what:-see $log} -> ${artifact:-$log}"
    status=1
  fi
  printf '%-22s %12s %10s  %s\n' "$target" "$(final_stat number_of_executed_units "$log")" "$(final_stat average_exec_per_sec "$log")" "$result"
  rm -rf "$work"
done
exit $status
