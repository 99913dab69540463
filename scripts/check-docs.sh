#!/usr/bin/env bash
# Builds the ANCSRuntime documentation catalog with DocC and fails on any
# broken symbol link or article reference (missing parameter docs are allowed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/check-links.sh --self-test
scripts/check-links.sh
graphs=.build/symbol-graphs
rm -rf "$graphs" .build/docs
mkdir -p "$graphs"
# The symbol graphs of the debug build as it is (no rebuild with other
# flags): ANCSRuntime's and the core's, whose types its pages link to.
swift package dump-symbol-graph --minimum-access-level public > .build/docs-symbol-graphs.log 2>&1 \
  || { cat .build/docs-symbol-graphs.log; exit 1; }
dumped=$(sed -n 's/^Files written to //p' .build/docs-symbol-graphs.log | tail -1)
cp "$dumped/ANCS.symbols.json" "$dumped/ANCSRuntime.symbols.json" "$dumped/ANCSRuntime@ANCS.symbols.json" "$graphs/"
docc=$(command -v docc || echo /opt/swift/usr/bin/docc)
out=$("$docc" convert Sources/ANCSRuntime/ANCSRuntime.docc --additional-symbol-graph-dir "$graphs" \
  --fallback-display-name ANCSRuntime --fallback-bundle-identifier org.swift-ancs.ANCSRuntime \
  --output-path .build/docs --analyze 2>&1) || { echo "$out"; exit 1; }
problems=$(echo "$out" | grep -E "^(warning|error)" | grep -v "is missing documentation" || true)
if [ -n "$problems" ]; then
  echo "$problems"
  echo "docs: the catalog has broken references"
  exit 1
fi
echo "docs: ANCSRuntime catalog builds, every reference resolves"
