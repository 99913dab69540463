#!/usr/bin/env bash
# Every benchmark table, one command:
#   1. CPU time and heap allocations per operation (package-benchmark, in
#      Benchmarks/), including the standard Data Source workload at MTU 23,
#      185 and 517, checked against the workload's checksum;
#   2. air time over the simulated link and memory over 100 000
#      notifications (`ancs bench`);
#   3. the Embedded footprint (scripts/check-embedded.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 ../shared/bench/gen_ds_workload.py --out .build/bench-workload
export ANCS_BENCH_WORKLOAD="$PWD/.build/bench-workload"
(cd Benchmarks && swift package benchmark --format markdown "$@")
swift build -c release --product ancs
.build/release/ancs bench
scripts/check-embedded.sh
