#!/usr/bin/env bash
# Builds `ancs` as a self-contained binary (the Swift runtime and Foundation
# linked in statically: the machine that runs it needs no Swift toolchain)
# and installs it under PREFIX (default ~/.local):
#   PREFIX/lib/swift-ancs/ancs                                 the binary
#   PREFIX/lib/swift-ancs/swift-ancs_ANCSBumble.resources/     the Bumble host program it runs
#   PREFIX/lib/swift-ancs/LICENSE, NOTICE                      what the binary contains, and its licences
#   PREFIX/bin/ancs -> ../lib/swift-ancs/ancs
# The binary finds its resources beside itself (through the link), so the
# two stay together. libdbus-1 (for `ancs listen` with BlueZ) is loaded at
# run time from the system, as in a debug build.
set -euo pipefail
prefix=${1:-$HOME/.local}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
cd "$(dirname "$0")/.."
source scripts/release-flags.sh
swift build "${release_flags[@]}" --product ancs
bin=$(swift build "${release_flags[@]}" --show-bin-path)
home="$prefix/lib/swift-ancs"
mkdir -p "$prefix/bin" "$home"
rm -rf "$home/ancs" "$home/swift-ancs_ANCSBumble.resources"
cp "$bin/ancs" "$home/ancs"
cp -R "$bin/swift-ancs_ANCSBumble.resources" "$home/"
cp LICENSE NOTICE "$home/"
# Python caches are not shipped.
find "$home/swift-ancs_ANCSBumble.resources" -name __pycache__ -prune -exec rm -rf {} +
ln -sfn ../lib/swift-ancs/ancs "$prefix/bin/ancs"
echo "installed $prefix/bin/ancs ($("$prefix/bin/ancs" --version))"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "note: $prefix/bin is not on PATH" ;;
esac
