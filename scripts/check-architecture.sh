#!/usr/bin/env bash
# Fails when docs/ARCHITECTURE.md and the code differ:
#   - its target graph and Package.swift: every target with exactly its
#     dependencies, in any order;
#   - its layer drawing and that graph: a target drawn above what it uses
#     (or beside it, unless the line says `A → B`), a drawn name no target has;
#   - a path it names (`Sources/...`, `docs/...`, a file `Name.swift`) that
#     does not exist;
#   - a backticked type (`ConsumerClientEvent`, `ANCSJSON.consumerEvent`) no
#     Swift source declares (D-Bus names it quotes are listed below).
# Run from anywhere; ARCHITECTURE_PAGE names another page to check.
#
#   scripts/check-architecture.sh --self-test
#
# checks the page, then that the check fails on three broken copies of it (a
# renamed file, an undeclared type, two layers swapped).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --self-test ]; then
  PACKAGE_JSON=$(swift package dump-package)   # once for the four runs below
  export PACKAGE_JSON
  "$0"
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  page=docs/ARCHITECTURE.md
  sed 's#Sources/ANCSRuntime/ConsumerClient.swift#Sources/ANCSRuntime/ConsumerActor.swift#' "$page" > "$scratch/path.md"
  sed 's#`BlueZConsumerTransport`#`BlueZConsumerLink`#' "$page" > "$scratch/type.md"
  python3 - "$page" "$scratch/layers.md" <<'SWAP'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
runtime = next(i for i, l in enumerate(lines) if "ANCSRuntime (actors" in l)
core = next(i for i, l in enumerate(lines) if "ANCS (codec" in l)
lines[runtime], lines[core] = lines[core], lines[runtime]
open(sys.argv[2], "w", encoding="utf-8").write("\n".join(lines))
SWAP
  for broken in path type layers; do
    cmp -s "$page" "$scratch/$broken.md" && { echo "self-test: the $broken copy is not broken" >&2; exit 1; }
    if ARCHITECTURE_PAGE="$scratch/$broken.md" "$0" 2> "$scratch/$broken.log"; then
      echo "self-test: the check passed a page with a broken $broken" >&2; exit 1
    fi
    echo "architecture self-test: a broken $broken fails: $(head -n 2 "$scratch/$broken.log" | tail -n 1 | sed 's/^ *//')"
  done
  exit 0
fi
PACKAGE_JSON=${PACKAGE_JSON:-$(swift package dump-package)} python3 - "${ARCHITECTURE_PAGE:-docs/ARCHITECTURE.md}" <<'PY'
import json, os, re, sys
page_path = sys.argv[1]
page = open(page_path, encoding="utf-8").read()
package = json.loads(os.environ["PACKAGE_JSON"])

def name(dependency):
    kind, value = next(iter(dependency.items()))
    return f"{value[0]}({value[1]})" if kind == "product" else value[0]

actual = {t["name"]: sorted(name(d) for d in t["dependencies"]) for t in package["targets"]}
block = re.search(r"<!-- targets: begin.*?-->(.*?)<!-- targets: end -->", page, re.S)
if not block:
    sys.exit(f"{page_path}: no targets block (<!-- targets: begin --> ... <!-- targets: end -->)")
written = {}
for line in block.group(1).strip().splitlines():
    match = re.fullmatch(r"- `([^`]+)` → (.*)", line.strip())
    if not match:
        sys.exit(f"{page_path}: cannot read the target line {line!r}")
    deps = [] if match.group(2) == "(nothing)" else re.findall(r"`([^`]+)`", match.group(2))
    written[match.group(1)] = sorted(deps)
problems = []
for target in sorted(set(actual) | set(written)):
    if target not in written:
        problems.append(f"{target}: in Package.swift, not on the page")
    elif target not in actual:
        problems.append(f"{target}: on the page, not in Package.swift")
    elif actual[target] != written[target]:
        problems.append(f"{target}: Package.swift has {', '.join(actual[target]) or 'nothing'}; "
                        f"the page says {', '.join(written[target]) or 'nothing'}")

# The layer drawing (the first code block after "In layers"), bottom up: a
# target uses only targets on lower lines, or one beside it joined by "→".
drawing = re.search(r"In layers.*?```\n(.*?)```", page, re.S)
if not drawing:
    problems.append("no layer drawing (a code block after \"In layers\")")
else:
    rows = drawing.group(1).rstrip("\n").split("\n")
    level = {}
    for row_index, row in enumerate(rows):
        words = re.findall(r"[A-Za-z][A-Za-z0-9]*", re.sub(r"\(.*?\)", "", row))
        drawn = [w for w in words if w in actual]
        for word in re.findall(r"\b(ANCS[A-Za-z0-9]*|C[A-Z][A-Za-z]+)\b", re.sub(r"\(.*?\)", "", row)):
            if word not in actual:
                problems.append(f"layer drawing: {word} is not a target")
        for target in drawn:
            level[target] = len(rows) - row_index  # bottom row: 1
    for target, height in level.items():
        for dependency in actual[target]:
            if dependency not in level:
                continue
            same_row_arrow = re.search(rf"\b{target}\s*→\s*{dependency}\b", drawing.group(1))
            if level[dependency] > height or (level[dependency] == height and not same_row_arrow):
                problems.append(f"layer drawing: {target} uses {dependency}, "
                                f"which is drawn {'above' if level[dependency] > height else 'beside'} it")

# Paths and files named on the page.
tracked = os.popen("git ls-files").read().split()
basenames = {path.rsplit("/", 1)[-1] for path in tracked}
for token in sorted(set(re.findall(r"`([^`\s]+)`", page))):
    if "(" in token or token.startswith(("-", ".")):
        continue
    if "/" in token and re.match(r"(Sources|Tests|docs|scripts|integrations|firmware|Fuzz|Benchmarks|Examples)/", token):
        if not os.path.exists(token.rstrip("/")):
            problems.append(f"{token}: no such path")
    elif re.fullmatch(r"[\w.-]+\.(swift|py|c|h|md|sh)", token) and token not in basenames:
        problems.append(f"{token}: no such file")

# Backticked types: declared somewhere in Sources (a target name is a module).
QUOTED_NAMES = {"PropertiesChanged", "Value"}  # D-Bus's signal and property, not Swift types
declared = set()
for path in tracked:
    if path.startswith("Sources/") and path.endswith(".swift"):
        text = open(path, encoding="utf-8").read()
        declared.update(re.findall(r"\b(?:struct|enum|class|actor|protocol|typealias)\s+([A-Z][A-Za-z0-9_]*)", text))
# (A file name such as `CHANGELOG.md` is a file, checked above, not a type.)
for token in sorted(set(re.findall(r"`([A-Z][A-Za-z0-9]*)(?:\.(?!(?:swift|py|c|h|md|sh|txt)`)[A-Za-z0-9.]*)?`", page))):
    if token in actual or token in QUOTED_NAMES or token.endswith("Tests") or token == "Package":
        continue
    if token not in declared:
        problems.append(f"`{token}`: no Swift source declares it")

if problems:
    print(f"{page_path} does not match the code:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print(f"architecture: {len(actual)} targets, {page_path} matches Package.swift, its layer drawing, paths and types")
PY
