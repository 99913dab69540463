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
#   --runs N    stop after N executions instead of after a time (seconds is
#               then the time limit, 0 for none)
#   --max-len N the longest input libFuzzer makes (default: libFuzzer's
#               choice, from the corpus: up to 4096 bytes here); shorter
#               inputs run faster, for long campaigns
#
# Targets build and run side by side, ANCS_FUZZ_JOBS at a time (default:
# one per core); each row is printed when all are done, in order.
#
# Each target uses the dictionary of the format its input carries
# (Fuzz/dict: Control Point commands for control-point and provider, Data
# Source responses for data-source, data-source-parser and consumer,
# Notification Source events).
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
runs=0
max_len=0
while [ $# -gt 0 ]; do
  case "$1" in
    --merge) merge=1; shift ;;
    --runs) runs=${2:-}; shift 2 ;;
    --max-len) max_len=${2:-}; shift 2 ;;
    *) break ;;
  esac
done
case "$runs$max_len" in ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [--merge] [--runs N] [--max-len N] [seconds] [target...]" >&2; exit 2 ;; esac
seconds=${1:-60}
shift || true
case "$seconds" in ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [--merge] [--runs N] [seconds] [target...]" >&2; exit 2 ;; esac

dictionary() {  # target
  case "$1" in
    control-point|provider) echo Fuzz/dict/control-point.dict ;;
    data-source|data-source-parser|consumer) echo Fuzz/dict/data-source.dict ;;
    notification-source) echo Fuzz/dict/notification-source.dict ;;
  esac
}

out=.build/fuzz
mkdir -p "$out" fuzz-artifacts
if [ $# -gt 0 ]; then targets=("$@"); else
  mapfile -t targets < <(ls Fuzz/Targets | sed -n 's/\.swift$//p' | sort)
fi

# Every target is built from one snapshot of the sources, taken now: the
# same code for all, whatever is edited while they build and run.
# (A folder of its own per run, so runs of different targets can overlap.)
src=$(mktemp -d "$out/src.XXXXXX")
trap 'rm -rf "$src"' EXIT
mkdir -p "$src/Sources" && cp -R Sources/ANCS "$src/Sources/" && cp -R Fuzz "$src/"

build() {  # target
  local file="$src/Fuzz/Targets/$1.swift" dirs=() sources=()
  [ -f "$file" ] || { echo "no such target: $1" > "$out/$1.build.log"; return 1; }
  read -r -a dirs <<< "$(sed -n 's|^// sources:||p' "$file" | head -1)"
  if [ ${#dirs[@]} -eq 0 ]; then dirs=(.); fi
  for dir in "${dirs[@]}"; do mapfile -t -O "${#sources[@]}" sources < <(find "$src/Sources/ANCS/$dir" -name '*.swift' | sort); done
  swiftc -sanitize=fuzzer,address -parse-as-library -O -g -module-name ANCS \
    "${sources[@]}" "$src"/Fuzz/Support/*.swift "$file" -o "$out/$1" > "$out/$1.build.log" 2>&1
}

final_stat() {  # name log
  grep -o "stat::$1: *[0-9]*" "$2" | grep -o '[0-9]*$' || echo 0
}

status=0
printf '%-22s %12s %10s  %s\n' target executions exec/s result
# One target: built, then run; prints its row, and exits non-zero on a finding or a failed build.
one() { # target
  local target=$1 work log limit dict result what artifact
  if ! build "$target"; then
    grep -v 'ld.gold: warning' "$out/$target.build.log" >&2 || true
    printf '%-22s %12s %10s  %s\n' "$target" - - "BUILD FAILED"
    return 1
  fi
  work=$(mktemp -d)
  if [ -d "Fuzz/corpus/$target" ]; then cp -R "Fuzz/corpus/$target/." "$work/"; fi
  log="$out/$target.log"
  if [ "$runs" -gt 0 ]; then
    limit=(-runs="$runs")
    if [ "$seconds" -gt 0 ]; then limit+=(-max_total_time="$seconds"); fi
  elif [ "$seconds" -eq 0 ]; then limit=(-runs=0); else limit=(-max_total_time="$seconds"); fi
  dict=$(dictionary "$target")
  if [ -n "$dict" ] && [ -f "$dict" ]; then limit+=(-dict="$dict"); fi
  if [ "$max_len" -gt 0 ]; then limit+=(-max_len="$max_len"); fi
  local status=0
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
  return $status
}

# Each build and each run is single-threaded: $ANCS_FUZZ_JOBS targets (by
# default one per core) build and run side by side; the rows come in order.
parallel=${ANCS_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
case "$parallel" in ''|*[!0-9]*|0) parallel=1 ;; esac
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  ( status=0; one "$target" > "$out/$target.row" 2> "$out/$target.row.err" || status=$?; echo "$status" > "$out/$target.status" ) &
done
wait
for target in "${targets[@]}"; do
  cat "$out/$target.row"
  cat "$out/$target.row.err" >&2
  [ "$(cat "$out/$target.status" 2>/dev/null || echo 1)" = 0 ] || status=1
done
exit $status
