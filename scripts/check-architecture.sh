#!/usr/bin/env bash
# Fails when docs/ARCHITECTURE.md's target graph and Package.swift differ:
# every target with exactly its dependencies, in any order. Run from anywhere;
# ARCHITECTURE_PAGE names another page to check (for the check's own test).
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGE_JSON=$(swift package dump-package) python3 - "${ARCHITECTURE_PAGE:-docs/ARCHITECTURE.md}" <<'PY'
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
if problems:
    print(f"{page_path} does not match Package.swift:", *problems, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print(f"architecture: {len(actual)} targets, {page_path} matches Package.swift")
PY
