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
# (scripts/symbol-graphs.sh: dumped once for this check and the API's.)
dumped=$(scripts/symbol-graphs.sh)
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
