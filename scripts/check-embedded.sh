#!/usr/bin/env bash
# Builds the protocol core with Embedded Swift for Cortex-M4 and RISC-V and
# prints its code and data size. Fails if the core uses anything Embedded
# Swift forbids (Foundation, untyped throws, existentials, reflection).
#
#   scripts/check-embedded.sh            whole core, both targets
#
# Sizes are of the relocatable object (text/data/bss as llvm-size reports).
set -euo pipefail
cd "$(dirname "$0")/.."
out=".build/embedded"
mkdir -p "$out"

swiftc_bin=$(command -v swiftc)
size_bin=$(command -v llvm-size || ls /usr/bin/llvm-size-* 2>/dev/null | head -n 1 || true)
if [ -z "$size_bin" ]; then
  echo "error: llvm-size not found (Debian package: llvm)" >&2
  exit 1
fi

all_sources=$(find Sources/ANCS -name '*.swift' | sort)

build() { # name target sources...
  local name=$1 target=$2; shift 2
  "$swiftc_bin" -target "$target" -enable-experimental-feature Embedded -wmo \
    -parse-as-library -Osize -module-name ANCS -c "$@" -o "$out/$name-$target.o"
}

printf '%-10s %-26s %8s %8s %8s\n' build target text data bss
for target in armv7em-none-none-eabi riscv32-none-none-eabi; do
  build core "$target" $all_sources
  "$size_bin" "$out/core-$target.o" | awk -v t="$target" 'NR==2 { printf "%-10s %-26s %8s %8s %8s\n", "core", t, $1, $2, $3 }'
done
