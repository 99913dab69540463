#!/usr/bin/env bash
# CI step for scripts/install.sh: installs into a fresh prefix, then checks
# the binary is self-contained: no Swift library among what it loads, and it
# runs with the toolchain off PATH and an empty environment, finding the
# Bumble host program it ships (with the build's copy out of reach).
set -euo pipefail
# The checks match on whole outputs (grep -q PATTERN <<< "$(...)"): piped,
# grep -q stops at its first match, and a writer with more to write then
# dies on the closed pipe, which pipefail reports as a failed check.
cd "$(dirname "$0")/.."
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
start=$(date +%s)
scripts/install.sh "$prefix"
echo "install: $(( $(date +%s) - start )) s"

binary="$prefix/lib/swift-ancs/ancs"
echo "== ldd $binary"
ldd "$binary"
if ldd "$binary" | grep -E 'libswift|libFoundation|libdispatch|libBlocksRuntime|not found'; then
  echo "install: the binary needs the Swift toolchain's libraries"; exit 1
fi

# Packed relative relocations where the build can make them (scripts/release-flags.sh).
source scripts/release-flags.sh
if [ "$release_relr" = yes ]; then
  grep -q '\.relr\.dyn' <<< "$(readelf -SW "$binary")" || { echo "install: no packed relocations (.relr.dyn) in the binary"; exit 1; }
  echo "install: relative relocations packed (.relr.dyn)"
fi

run() { env -i PATH=/usr/bin:/bin HOME="$prefix" "$@"; }
echo "== ancs demo --fast (empty environment, PATH=/usr/bin:/bin)"
run "$prefix/bin/ancs" demo --fast | tail -1
run "$prefix/bin/ancs" --version
for shell in bash zsh fish; do
  grep -q listen <<< "$(run "$prefix/bin/ancs" --generate-completion-script "$shell")" || { echo "install: no $shell completions"; exit 1; }
done

# The Bumble host program ships beside the binary: with the build's copy
# moved away, the installed binary still starts it (here a Python that
# exits at once, so the host "exits with status 1" rather than ancs trapping
# on a missing resource bundle).
built="$(swift build "${release_flags[@]}" --show-bin-path)/swift-ancs_ANCSBumble.resources"
mv "$built" "$built.aside"
trap 'mv "$built.aside" "$built"; rm -rf "$prefix"' EXIT
out=$(run ANCS_BUMBLE_PYTHON=/bin/false "$prefix/bin/ancs" provide --stack bumble:usb:0 2>&1 || true)
echo "$out" | tail -1
grep -q "Bumble host (pid [0-9]*) exited" <<< "$out" || { echo "install: the installed binary did not find its Bumble host"; exit 1; }
echo "install: self-contained binary ok"
