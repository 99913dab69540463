#!/usr/bin/env bash
# Builds the ANCSRuntime documentation catalog with DocC and fails on any
# broken symbol link or article reference (missing parameter docs are allowed).
set -euo pipefail
cd "$(dirname "$0")/.."
graphs=.build/symbol-graphs
rm -rf "$graphs" .build/docs
mkdir -p "$graphs"
swift build --target ANCSRuntime -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$graphs" >/dev/null
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
