#!/usr/bin/env bash
# Compiles Swift sources with Embedded Swift into one object for a firmware,
# whole program:
#
#   scripts/embedded/whole-program.sh TARGET KEEP OUTPUT.o [swiftc arguments and sources...]
#
#   TARGET   an Embedded Swift target triple (armv7em-none-none-eabi,
#            riscv32-none-none-eabi, x86_64-unknown-linux-gnu, ...)
#   KEEP     the symbols the firmware calls, as a glob (e.g. 'ancs_*'):
#            only these stay visible
#
# The sources are compiled to LLVM bitcode (-Osize), linked by lld with only
# KEEP visible (everything else becomes internal, and what KEEP cannot reach
# is dropped, code and data alike, which per-function sections cannot do for
# Swift's data), optimized once more as a whole, and compiled by clang into
# one ordinary object that any C toolchain links (GCC included), at clang's
# smallest (-Oz). Bare-metal targets get a section per function and per
# datum, hosted ones PIC.
#
# Uses the Swift toolchain's own lld and clang: they read the bitcode of its
# LLVM (a distribution's older ones do not).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 TARGET KEEP OUTPUT.o [swiftc arguments and sources...]" >&2
  exit 2
fi
target=$1 keep=$2 output=$3
shift 3
toolchain=$(dirname "$(command -v swiftc)")
case "$target" in
  *-none-*) clang_flags=(-ffunction-sections -fdata-sections) ;;
  *) clang_flags=(-fPIC) ;;
esac
bitcode=${output%.o}.bc
swiftc -target "$target" -enable-experimental-feature Embedded -wmo -parse-as-library -Osize \
  -lto=llvm-full "$@" -c -o "$bitcode"
"$toolchain/ld.lld" --lto-emit-llvm --lto-O2 --unresolved-symbols=ignore-all --entry=0 \
  --undefined-glob="$keep" -o "${output%.o}.whole.bc" "$bitcode"
"$toolchain/clang" -target "$target" -Oz "${clang_flags[@]}" -c "${output%.o}.whole.bc" -o "$output"
