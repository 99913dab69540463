#!/usr/bin/env bash
# Prints the folder that holds the public symbol graphs of the package's
# debug build (`swift package dump-symbol-graph`, which builds first).
# scripts/check-api.sh and scripts/check-docs.sh both read them: they are
# dumped again only when a source, the manifest or a built module is newer
# than the last dump.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.build/symbol-graphs.folder
log=.build/symbol-graphs.log
if [ -f "$stamp" ] && [ -d "$(cat "$stamp")" ] &&
   [ -z "$(find Sources Package.swift .build/debug/Modules -newer "$stamp" -print -quit 2>/dev/null)" ]; then
  cat "$stamp"
  exit 0
fi
rm -f "$stamp"
mkdir -p .build
swift package dump-symbol-graph --minimum-access-level public > "$log" 2>&1 \
  || { cat "$log" >&2; echo "symbol graphs: the dump failed" >&2; exit 1; }
folder=$(sed -n 's/^Files written to //p' "$log" | tail -1)
[ -n "$folder" ] && [ -d "$folder" ] || { cat "$log" >&2; echo "symbol graphs: no folder in the output" >&2; exit 1; }
echo "$folder" > "$stamp"
echo "$folder"
