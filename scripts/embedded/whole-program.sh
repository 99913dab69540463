#!/usr/bin/env bash
# Compiles Swift sources with Embedded Swift into one object for a firmware,
# whole program:
#
#   scripts/embedded/whole-program.sh TARGET KEEP OUTPUT.o [swiftc arguments and sources...]
#
#   TARGET   an Embedded Swift target triple (armv7em-none-none-eabi,
#            riscv32-none-none-eabi, x86_64-unknown-linux-gnu, ...), or one
#            built against those with other code generation (targets.sh:
#            armv7em-none-none-eabihf, armv8m.main-none-none-eabi, rv32imc...)
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
# Reference counting is non-atomic (-assume-single-threaded; the entry
# points, which the Embedded Swift library lacks, are
# nonatomic-refcounting.c, linked into the whole). An engine is driven from
# one thread at a time (ancs.h, "Threading"), and instances share no counted
# object: no global is made at run time (integrations/c/build.sh fails if
# the C API's object has a once-token), the only ones are constants laid
# out statically, immortal, whose counts are never written. Atomic, each
# retain was an exclusive-load/store loop inlined where it is made: 1.9 KB
# of the consumer's Cortex-M4 text.
#
# Traps are mergeable (targets.sh, `embedded_swift`).
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
. "$(dirname "$0")/targets.sh"
embedded_target "$target"
bitcode=${output%.o}.bc
swiftc -target "$swift_target" "${xcc[@]}" "${embedded_swift[@]}" \
  -Xfrontend -assume-single-threaded -lto=llvm-full "$@" -c -o "$bitcode"
"$toolchain/clang" -target "$clang_target" "${codegen[@]}" -Oz -flto -I "$toolchain/../lib/swift/shims" "${clang_flags[@]}" \
  -c "$(dirname "$0")/nonatomic-refcounting.c" -o "${output%.o}.refcounting.bc"
"$toolchain/ld.lld" --lto-emit-llvm --lto-O2 --unresolved-symbols=ignore-all --entry=0 \
  --undefined-glob="$keep" -o "${output%.o}.whole.bc" "$bitcode" "${output%.o}.refcounting.bc"
# (Built against another target's library, the bitcode's triple is that one's: the target given here is the object's.)
"$toolchain/clang" -target "$clang_target" "${codegen[@]}" -Oz "${clang_flags[@]}" -Wno-override-module \
  -c "${output%.o}.whole.bc" -o "$output"
