#!/usr/bin/env bash
# The repository stands alone: a clone with nothing beside it builds, tests
# and benchmarks. Fails, naming each file and line, if a tracked file refers
# to the folder `shared` beside the repository, or to what such a folder
# held (vectors, bench, spec, third_party, seeds, labs, hooks): the test
# vectors are in Tests/Vectors, the workload generator is
# scripts/gen_ds_workload.py, the protocol is docs/PROTOCOL.md and the NimBLE
# source is in third_party/.
#
#   scripts/check-standalone.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# Written so that none of them matches this file.
patterns=(
  '\.\.[/\\]shared\b'                                   # a relative path up and into it
  "['\"]\\.\\.['\"][[:space:]]*,[[:space:]]*['\"]shared['\"]"  # os.path.join's parts
  'PathComponent\([[:space:]]*"shared"[[:space:]]*\)'   # a URL's path components
  '\bshared/(vectors|bench|spec|third_party|seeds|labs|hooks)\b'  # what it held
)
args=()
for pattern in "${patterns[@]}"; do args+=(-e "$pattern"); done

# -I: binary files (archives, fuzzing inputs) are not text that names a path.
if found=$(git grep -n -I -E "${args[@]}" -- .); then
  echo "check-standalone: these tracked files refer to a folder beside the repository;" >&2
  echo "the repository must build and test with nothing beside it:" >&2
  printf '%s\n' "$found" | sed 's/^/  /' >&2
  echo "check-standalone: failed in $(printf '%s\n' "$found" | cut -d: -f1 | sort -u | wc -l) file(s)" >&2
  exit 1
fi
echo "check-standalone: $(git ls-files | wc -l) tracked files, none refers to a folder beside the repository"
