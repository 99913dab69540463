#!/usr/bin/env bash
# Every benchmark table of BENCHMARKS.md, one command (section numbers as there):
#
#   scripts/bench.sh           everything below
#   scripts/bench.sh --cpu     section 1 only (the protocol core)
#
#   1. the protocol core: the package-benchmark suites in Benchmarks/ (time
#      and heap allocations per operation: Notification Source decode,
#      Control Point encode, the standard Data Source workload at ATT MTU 23,
#      185 and 517, checked against the workload's checksum before it is
#      timed, the engines), then ds-throughput (the same workload as MB/s and
#      ns per response, median of 5, next to the reference figures, and heap
#      allocations per notification and per value);
#   2, 4. air time over the simulated link, memory over a long run (`ancs bench`);
#   3. the Embedded footprint (scripts/check-embedded.sh).
#
# The workload is generated first into .build/bench-workload by
# scripts/gen_ds_workload.py; the benchmarks read it from there.
#
# The tables of BENCHMARKS.md that a script prints whole (the footprint of
# section 3, the firmware figures of section 8) are regenerated in place by
# scripts/update-tables.sh, which runs those scripts.
set -euo pipefail
cd "$(dirname "$0")/.."

cpu_only=false
case "${1:-}" in
  --cpu) cpu_only=true ;;
  "") ;;
  *) echo "usage: scripts/bench.sh [--cpu]" >&2; exit 2 ;;
esac

echo "## Machine"
echo
lscpu | grep -E '^(Model name|CPU\(s\)|Thread\(s\) per core|L2 cache|L3 cache):' | sed 's/^/    /'
echo "    $(swift --version 2>/dev/null | head -n 1)"
echo

echo "## Standard Data Source workload"
echo
python3 scripts/gen_ds_workload.py --out .build/bench-workload | sed 's/^/    /'
python3 scripts/gen_ds_workload.py --out .build/bench-workload --check >/dev/null
echo

echo "## 1. Protocol core: time and heap allocations per operation (package-benchmark)"
echo
# (the plugin's build progress lines filtered out; a failure still stops here)
set +e
swift package --package-path Benchmarks benchmark --no-progress 2>&1 \
  | grep -vE '^(\[[0-9]+/[0-9]+\]|Building|Build )|running with the Swift runtime interposer|skipping LD_PRELOAD'
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "error: the package-benchmark run failed ($status)" >&2
  exit "$status"
fi

echo "## 1. Protocol core: Data Source throughput next to the reference figures (ds-throughput)"
echo
swift build --package-path Benchmarks -c release --product ds-throughput >/dev/null
Benchmarks/.build/release/ds-throughput
echo

if ! $cpu_only; then
  echo "## 2, 4. Air time and memory (ancs bench)"
  echo
  swift build -c release --product ancs >/dev/null
  .build/release/ancs bench
  echo

  echo "## 3. Footprint on a microcontroller (scripts/check-embedded.sh)"
  echo
  scripts/check-embedded.sh
fi
