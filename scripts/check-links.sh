#!/usr/bin/env bash
# Checks the relative links of the repository's Markdown files, as GitHub
# renders them: every `[text](path)`, `[text](path#anchor)`, `(#anchor)`,
# image and reference definition (`[name]: path`) outside fenced code blocks
# and code spans. The path must exist in the repository (relative to the
# file, or to the repository's root when it starts with `/`), and an anchor
# must name a heading of the target file by GitHub's rule: lowercase; every
# character that is not a letter, a digit, a space, a hyphen or an
# underscore removed; spaces made hyphens; the second heading with the same
# slug gets `-1`, the third `-2`. Links with a scheme (https:, mailto:,
# doc:) are not checked. Files: `git ls-files '*.md'` and the Markdown files
# not yet added (ignored files left out); nothing under a `.build` folder.
#
#   scripts/check-links.sh               # the repository; exit 1 on a broken link
#   scripts/check-links.sh --root DIR    # another git work tree
#   scripts/check-links.sh --self-test   # the checker against a small tree of known links
#
# Prints `FILE:LINE: broken link: TARGET (why)` for each broken link, else
# one line: `links: N links in M files resolve`.
set -euo pipefail

tmp=""
cleanup() { [ -z "$tmp" ] || rm -rf "$tmp" "$tmp.stderr"; }
trap cleanup EXIT

# Runs the checker on the tree $tmp; sets out (its standard output) and status.
run_on_tmp() {
  status=0
  out=$(bash "$0" --root "$tmp" 2>"$tmp.stderr") || status=$?
}

self_test() {
  local expected content
  tmp=$(mktemp -d)
  git -C "$tmp" init -q
  mkdir -p "$tmp/docs"
  cat >"$tmp/README.md" <<'EOF'
# Self test

A [good page](docs/PAGE.md), a [good anchor](docs/PAGE.md#the-second-part-2),
one [to the second heading of a
name](docs/PAGE.md#notes-1) and [one here](#self-test).
```
[in a fence](missing-in-fence.md)
```
`[in a code span](missing-in-span.md)`, [a site](https://example.com/x.md).
A [missing page](docs/MISSING.md) and a [missing heading](docs/PAGE.md#no-such-heading).
EOF
  cat >"$tmp/docs/PAGE.md" <<'EOF'
# Page
## The second part: 2
## Notes
## Notes
Back to the [README](../README.md).
EOF
  expected="README.md:10: broken link: docs/MISSING.md (no such file in the repository)
README.md:10: broken link: docs/PAGE.md#no-such-heading (no heading with that anchor in docs/PAGE.md)"
  run_on_tmp
  if [ "$status" -ne 1 ] || [ "$out" != "$expected" ]; then
    echo "check-links self-test: expected exit 1 and exactly:" >&2
    printf '%s\n' "$expected" | sed 's/^/  /' >&2
    echo "got exit $status and:" >&2
    cat <(printf '%s\n' "$out") "$tmp.stderr" | sed 's/^/  /' >&2
    return 1
  fi
  # The same tree with those two links mended passes: the 7 links outside
  # code, the https one left out.
  content=$(cat "$tmp/README.md")
  content=${content//docs\/MISSING.md/docs\/PAGE.md}
  content=${content//\#no-such-heading/\#notes}
  printf '%s\n' "$content" >"$tmp/README.md"
  expected="links: 7 links in 2 files resolve"
  run_on_tmp
  if [ "$status" -ne 0 ] || [ "$out" != "$expected" ]; then
    echo "check-links self-test: expected exit 0 and \"$expected\", got exit $status and:" >&2
    cat <(printf '%s\n' "$out") "$tmp.stderr" | sed 's/^/  /' >&2
    return 1
  fi
  echo "check-links self-test: a missing file and a missing heading found, the good links pass"
}

case "${1:-}" in
  --self-test)
    self_test
    exit
    ;;
  --root)
    root=${2:?--root needs a directory}
    ;;
  "")
    root="$(dirname "$0")/.."
    ;;
  *)
    echo "usage: scripts/check-links.sh [--self-test | --root DIR]" >&2
    exit 64
    ;;
esac
cd "$root"

python3 - <<'PY'
import os
import re
import subprocess
import sys
import unicodedata
from urllib.parse import unquote

def git_files(*patterns):
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *patterns],
                         check=True, capture_output=True).stdout.decode()
    return sorted({f for f in out.split("\0") if f and os.path.exists(f)})

def skipped(path):
    return ".build" in path.split("/")

files = git_files()
existing = set(files)
for f in files:
    parts = f.split("/")
    for i in range(1, len(parts)):
        existing.add("/".join(parts[:i]))
markdown = [f for f in files if f.lower().endswith((".md", ".markdown")) and not skipped(f)]

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")

def blank_fences(lines):
    """The lines with those of fenced code blocks (fences included) made empty."""
    out, fence = [], None
    for line in lines:
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip().strip(fence[0]):
                fence = None
            out.append("")
        else:
            out.append(line)
    return out

# A code span does not cross a blank line.
CODE_SPAN = re.compile(r"(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.S)

def blank_code_spans(text):
    # Keeps line breaks, so that offsets still give line numbers.
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)

def slug(heading):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = re.sub(r"<[^>]+>", "", text)                        # HTML tags
    text = text.strip().lower()
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in " -_" or cat[0] in "LN" or cat[0] == "M":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")

HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
HTML_ANCHOR = re.compile(r"<a\s[^>]*\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)

anchor_cache = {}

def anchors(path):
    if path not in anchor_cache:
        with open(path, encoding="utf-8") as f:
            lines = blank_fences(f.read().split("\n"))
        seen, found = {}, set()
        for line in lines:
            for m in HTML_ANCHOR.finditer(line):
                found.add(m.group(1))
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2) or "")
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        anchor_cache[path] = found
    return anchor_cache[path]

# [text](target "title"), ![alt](target), [text](<target>); the text may hold
# brackets one level deep and span lines.
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)"
                    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*(<[^>\n]*>|\S+)", re.M)
SCHEME = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|//)")
LINE_ANCHOR = re.compile(r"^L\d+(?:C\d+)?(?:-L\d+(?:C\d+)?)?$")

broken, checked = [], 0
for md in markdown:
    with open(md, encoding="utf-8") as f:
        text = "\n".join(blank_fences(f.read().split("\n")))
    text = blank_code_spans(text)
    targets = [(m.start(1), m.group(1)) for m in INLINE.finditer(text)]
    targets += [(m.start(1), m.group(1)) for m in DEFINITION.finditer(text)]
    for offset, target in sorted(targets):
        target = target[1:-1] if target.startswith("<") else target
        if not target or SCHEME.match(target):
            continue
        checked += 1
        line = text.count("\n", 0, offset) + 1

        def report(why):
            broken.append(f"{md}:{line}: broken link: {target} ({why})")

        path, _, anchor = target.partition("#")
        path = unquote(path.split("?")[0])
        if path:
            base = "" if path.startswith("/") else os.path.dirname(md)
            resolved = os.path.normpath(os.path.join(base, path.lstrip("/"))).replace(os.sep, "/")
            if resolved == "." or resolved.startswith("../"):
                report("outside the repository")
                continue
            if resolved not in existing:
                report("no such file in the repository")
                continue
        else:
            resolved = md
        if not anchor:
            continue
        anchor = unquote(anchor)
        if resolved.lower().endswith((".md", ".markdown")) and os.path.isfile(resolved):
            if anchor not in anchors(resolved):
                report(f"no heading with that anchor in {resolved}")
        elif os.path.isfile(resolved):
            if not LINE_ANCHOR.match(anchor):
                report(f"{resolved} is not Markdown: only line anchors (#L10) are checked there")
        else:
            report(f"{resolved} is a folder: it has no anchors")

for b in broken:
    print(b)
if broken:
    print(f"links: {len(broken)} of {checked} links broken", file=sys.stderr)
    sys.exit(1)
print(f"links: {checked} links in {len(markdown)} files resolve")
PY
