#!/usr/bin/env bash
# Builds the C API (ancs.h) as a static library: the protocol core
# (Sources/ANCS) and src/ANCSConsumerC.swift compiled with Embedded Swift as
# one object, plus src/ancs_tables.c.
#
#   integrations/c/build.sh [target] [output folder]
#
#   target   an Embedded Swift target triple; default x86_64-unknown-linux-gnu
#            (the host, for tests and the NimBLE Linux port). Firmware:
#            armv7em-none-none-eabi (Cortex-M4), riscv32-none-none-eabi.
#   output   default .build/capi/<target>
#
# Writes <output>/libancs.a and prints what the object needs from the
# firmware's C library. A program links libancs.a and, on a hosted target,
# the toolchain's libswiftUnicodeDataTables.a (printed as UNICODE_TABLES=…):
#   cc app.c -Iintegrations/c/include libancs.a $UNICODE_TABLES -lm
# The Swift code is one whole-program object exporting only the C API;
# bare-metal targets get a section per function and datum, so the linker's
# --gc-sections keeps only what the firmware reaches.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=${1:-x86_64-unknown-linux-gnu}
out=${2:-$root/.build/capi/$target}
mkdir -p "$out"

mapfile -t core < <(find "$root/Sources/ANCS" -name '*.swift' | grep -v '/Provider' | sort)
extra=()
cc=(cc)
case "$target" in
  x86_64-unknown-linux-gnu|aarch64-unknown-linux-gnu) ;;
  *-none-*)
    cc=(clang -target "$target" -ffunction-sections -fdata-sections -Os -ffreestanding)
    ;;
  *) extra=(-disable-stack-protector) ;;
esac

# Whole program (scripts/embedded/whole-program.sh): only the C API's
# functions (ancs_*) stay visible, what they cannot reach is dropped. On
# Cortex-M4 the C API and core are a tenth smaller than the module's own
# object (BENCHMARKS.md section 8).
"$root/scripts/embedded/whole-program.sh" "$target" 'ancs_*' "$out/ancs-swift.o" \
  "${extra[@]}" -I "$here/include" -module-name ANCS "${core[@]}" "$here/src/ANCSConsumerC.swift"
"${cc[@]}" -c -I "$here/include" -o "$out/ancs_tables.o" "$here/src/ancs_tables.c"
rm -f "$out/libancs.a"
ar rcs "$out/libancs.a" "$out/ancs-swift.o" "$out/ancs_tables.o"

# Reference counting is non-atomic (whole-program.sh), which is safe while
# instances share no counted object: no global may be made at run time (a
# lazily initialized global has a once-token, *_Wz).
if lazy=$(grep '_Wz$' <<< "$(nm "$out/ancs-swift.o")"); then
  echo "error: $out/ancs-swift.o initializes globals at run time, which instances would share while their counts are not atomic:" >&2
  echo "$lazy" >&2
  exit 1
fi

tables=$(dirname "$(command -v swiftc)")/../lib/swift/embedded/$target/libswiftUnicodeDataTables.a
echo "built $out/libancs.a"
echo "needs from the C library: $(nm -u "$out/ancs-swift.o" | awk '{print $2}' | grep -v '^_swift_stdlib_' | sort -u | tr '\n' ' ')"
if [ -f "$tables" ]; then echo "UNICODE_TABLES=$(cd "$(dirname "$tables")" && pwd)/$(basename "$tables")"; fi
