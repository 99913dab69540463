#!/usr/bin/env bash
# The public API against its recorded baseline (api/*.txt): one line per
# public declaration of each library product, from the compiler's symbol
# graph. Any difference fails:
#   - a line of the baseline that the code no longer has: a public symbol
#     removed, renamed or changed (a breaking change);
#   - a line the code has that the baseline lacks: a public symbol added,
#     not yet recorded.
# A change to the public API is made deliberately: the code, the baseline
# (`scripts/check-api.sh --update`) and an entry in CHANGELOG.md, together.
#
#   scripts/check-api.sh              compare (CI)
#   scripts/check-api.sh --update     rewrite the baseline from the code
#   scripts/check-api.sh --self-test  the check fails on a symbol removed
#                                     from the code and on one added to it
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

modules=(ANCS ANCSRuntime ANCSSimulation ANCSFormat ANCSCapture ANCSBumble ANCSBlueZ ANCSDBus ANCSDesktop)
baseline=api
current=.build/api-current

mode=check
case "${1:-}" in
  --update) mode=update ;;
  --self-test) mode=self-test ;;
  "") ;;
  *) echo "usage: scripts/check-api.sh [--update|--self-test]" >&2; exit 2 ;;
esac

# Writes one sorted text per module into $1: `kind  path  declaration`
# and `conformance  type  protocol`, public and open declarations only, members of other modules' types
# included (extensions), compiler-synthesized ones left out.
extract() {
  local out=$1
  rm -rf "$out"
  mkdir -p "$out"
  local dir
  dir=$(scripts/symbol-graphs.sh)
  python3 - "$dir" "$out" "${modules[@]}" <<'PY'
import json, os, sys
folder, out, modules = sys.argv[1], sys.argv[2], sys.argv[3:]
for module in modules:
    lines = set()
    for name in os.listdir(folder):
        if not (name == f"{module}.symbols.json" or name.startswith(f"{module}@")):
            continue
        with open(os.path.join(folder, name)) as handle:
            graph = json.load(handle)
        extended = "" if "@" not in name else name.split("@", 1)[1].split(".symbols.json")[0] + " "
        for symbol in graph.get("symbols", []):
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
                continue
            path = ".".join(symbol["pathComponents"])
            declaration = "".join(f["spelling"] for f in symbol.get("declarationFragments", []))
            declaration = " ".join(declaration.split())
            lines.add(f"{symbol['kind']['identifier'].removeprefix('swift.')}  {extended}{path}  {declaration}")
        # Conformances: a type that stops being Sendable or Hashable breaks its users too.
        paths = {s["identifier"]["precise"]: ".".join(s["pathComponents"]) for s in graph.get("symbols", [])
                 if s.get("accessLevel") in ("public", "open")}
        for relation in graph.get("relationships", []):
            if relation["kind"] != "conformsTo" or relation["source"] not in paths:
                continue
            target = relation.get("targetFallback") or paths.get(relation["target"], relation["target"])
            lines.add(f"conformance  {extended}{paths[relation['source']]}  {target.removeprefix('Swift.')}")
    with open(os.path.join(out, f"{module}.txt"), "w") as handle:
        handle.write("".join(line + "\n" for line in sorted(lines)))
PY
}

# Compares the texts in $1 (the code) with those in $2 (the baseline);
# prints every difference and returns 1 if there is one.
compare() {
  local code=$1 recorded=$2 status=0 module
  for module in "${modules[@]}"; do
    if [ ! -f "$recorded/$module.txt" ]; then
      echo "api: $module has no baseline ($recorded/$module.txt)"; status=1; continue
    fi
    local removed added
    removed=$(comm -13 "$code/$module.txt" "$recorded/$module.txt")
    added=$(comm -23 "$code/$module.txt" "$recorded/$module.txt")
    if [ -n "$removed" ]; then
      echo "api: $module: removed, renamed or changed since the baseline (breaking):"
      echo "$removed" | sed 's/^/  - /'
      status=1
    fi
    if [ -n "$added" ]; then
      echo "api: $module: public and not in the baseline:"
      echo "$added" | sed 's/^/  + /'
      status=1
    fi
  done
  return $status
}

case $mode in
  update)
    extract "$current"
    mkdir -p "$baseline"
    for module in "${modules[@]}"; do cp "$current/$module.txt" "$baseline/$module.txt"; done
    echo "api: baseline rewritten ($(cat "$baseline"/*.txt | wc -l) public declarations); record the change in CHANGELOG.md"
    ;;
  check)
    extract "$current"
    if ! compare "$current" "$baseline"; then
      echo "api: the public API differs from its baseline. If the change is meant, run scripts/check-api.sh --update and record it in CHANGELOG.md." >&2
      exit 1
    fi
    echo "api: $(cat "$current"/*.txt | wc -l) public declarations in ${#modules[@]} modules, as recorded"
    ;;
  self-test)
    # The comparison, on the recorded baseline: a symbol the code lost (a
    # line only in the baseline) and a symbol the code gained (a line only
    # in the code) must each fail; the baseline against itself must pass.
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$work/code" "$work/recorded"
    cp "$baseline"/*.txt "$work/code/"
    cp "$baseline"/*.txt "$work/recorded/"
    compare "$work/code" "$work/recorded" >/dev/null || { echo "api self-test: the baseline differs from itself" >&2; exit 1; }
    # Removed (or renamed): the code lacks the baseline's first line of ANCS.
    tail -n +2 "$baseline/ANCS.txt" >"$work/code/ANCS.txt"
    if out=$(compare "$work/code" "$work/recorded"); then
      echo "api self-test: a removed public symbol passed" >&2; exit 1
    fi
    echo "$out" | grep -q "removed, renamed or changed" || { echo "api self-test: the removal was not named: $out" >&2; exit 1; }
    # Renamed: one line of the code changed.
    { echo "func  Consumer.renamedForTheSelfTest(at:)  mutating func renamedForTheSelfTest(at now: Timestamp) -> [ConsumerAction]"; tail -n +2 "$baseline/ANCS.txt"; } | sort >"$work/code/ANCS.txt"
    if out=$(compare "$work/code" "$work/recorded"); then
      echo "api self-test: a renamed public symbol passed" >&2; exit 1
    fi
    echo "$out" | grep -q "renamedForTheSelfTest" || { echo "api self-test: the new name was not shown: $out" >&2; exit 1; }
    # Added: the code has a line the baseline lacks.
    cp "$baseline/ANCS.txt" "$work/code/ANCS.txt"
    tail -n +2 "$baseline/ANCS.txt" >"$work/recorded/ANCS.txt"
    if compare "$work/code" "$work/recorded" >/dev/null; then
      echo "api self-test: an added public symbol passed" >&2; exit 1
    fi
    echo "api self-test: a removed, a renamed and an added public symbol each fail the check"
    ;;
esac
