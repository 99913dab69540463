#!/usr/bin/env bash
# Builds the C API (ancs.h, ancs_parser.h) as a static library: the protocol
# core (Sources/ANCS), src/ANCSConsumerC.swift and src/ANCSParserC.swift
# compiled with Embedded Swift as one object, plus src/ancs_tables.c and
# src/ancs_heap.c (where that object allocates). And
# beside it ams.h's (AMS and CTS) as a library of its own, libancs_media.a:
# the core's media files and src/ANCSMediaC.swift, one object, so that a
# firmware that links only ancs.h carries none of it.
#
#   integrations/c/build.sh [target] [output folder]
#
#   target   an Embedded Swift target triple; default x86_64-unknown-linux-gnu
#            (the host, for tests and the NimBLE Linux port). Firmware:
#              armv7em-none-none-eabi     Cortex-M4/M7, soft-float ABI
#              armv7em-none-none-eabihf   Cortex-M4F, hard-float ABI
#                                         (-mfloat-abi=hard -mfpu=fpv4-sp-d16,
#                                         most nRF52 and STM32 projects)
#              riscv32-none-none-eabi     RV32IMAC, ilp32 (Embedded Swift's
#                                         default for the triple)
#              rv32imc, rv32imac, ...     RISC-V with that ISA (-march), ABI
#                                         ilp32 (ilp32f/ilp32d with F/D);
#                                         rv32imc is the ESP32-C3's
#   output   default .build/capi/<target>
#
# Writes <output>/libancs.a and <output>/libancs_media.a and prints what the
# object needs from the firmware's C library. A program links libancs.a and, on a hosted target,
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

mapfile -t core < <("$root/scripts/embedded/sources.sh" consumer "$root")
mapfile -t media < <("$root/scripts/embedded/sources.sh" media "$root")
extra=()
cc=(cc)
# The Swift library exists for armv7em-none-none-eabi and riscv32-none-none-eabi
# only; the other firmware targets compile against it with the code generation
# flags of scripts/embedded/targets.sh (given to the Swift compiler, whose
# functions then carry the CPU and features, to the runtime's C and to the
# final compilation), so the object is the target's throughout (its build
# attributes say so, and a linker refuses to mix it with objects of another
# float ABI).
. "$root/scripts/embedded/targets.sh"
embedded_target "$target"
case "$target" in
  x86_64-unknown-linux-gnu|aarch64-unknown-linux-gnu) ;;
  *-none-*|rv32*)
    cc=(clang -target "$clang_target" "${codegen[@]}" -ffunction-sections -fdata-sections -Os -ffreestanding)
    # The stack protector (Swift's default) is a build option for firmware,
    # off unless ANCS_STACK_PROTECTOR=1: it needs __stack_chk_guard and
    # __stack_chk_fail, which ESP-IDF and Zephyr define only when their own
    # stack check is on, so a default project would not link (ancs.h).
    [ "${ANCS_STACK_PROTECTOR:-0}" = 1 ] || extra=(-Xfrontend -disable-stack-protector)
    ;;
  *) extra=(-disable-stack-protector) ;;
esac

# Up to date (the library newer than every input, built with the same
# options): not built again, so scripts that need the same target's library
# share one build. The checks and the lines printed below run either way.
inputs=("${core[@]}" "${media[@]}" "$here"/src/* "$here"/include/* "$0" "$root/scripts/embedded/whole-program.sh" "$root/scripts/embedded/sources.sh"
        "$root/scripts/embedded/nonatomic-refcounting.c" "$root/scripts/embedded/targets.sh")
options="$target ${extra[*]} ${ANCS_STACK_PROTECTOR:-0}"
up_to_date=false
if [ -f "$out/libancs.a" ] && [ -f "$out/libancs_media.a" ] && [ "$(cat "$out/options" 2>/dev/null)" = "$options" ]; then
  up_to_date=true
  for input in "${inputs[@]}"; do
    if [ "$input" -nt "$out/libancs.a" ] || [ "$input" -nt "$out/libancs_media.a" ]; then up_to_date=false; break; fi
  done
fi

if ! $up_to_date; then
rm -f "$out/options"
# Whole program (scripts/embedded/whole-program.sh): only the C API's
# functions (ancs_*) stay visible, what they cannot reach is dropped. On
# Cortex-M4 the C API and core are a tenth smaller than the module's own
# object (BENCHMARKS.md section 8).
# swift_object KEEP OUTPUT.o SOURCES...: one whole-program object.
swift_object() {
  local keep=$1 object=$2 base=${2%.o}
  shift 2
  if [ ${#codegen[@]} -eq 0 ]; then
    "$root/scripts/embedded/whole-program.sh" "$target" "$keep" "$object" "${extra[@]}" "$@"
    return
  fi
  # The same steps as whole-program.sh, each with the code generation flags.
  local toolchain
  toolchain=$(dirname "$(command -v swiftc)")
  swiftc -target "$swift_target" "${xcc[@]}" "${embedded_swift[@]}" \
    -Xfrontend -assume-single-threaded -lto=llvm-full "${extra[@]}" "$@" -c -o "$base.bc"
  "$toolchain/clang" -target "$clang_target" "${codegen[@]}" -Oz -flto -I "$toolchain/../lib/swift/shims" \
    -ffunction-sections -fdata-sections -c "$root/scripts/embedded/nonatomic-refcounting.c" -o "$base.refcounting.bc"
  "$toolchain/ld.lld" --lto-emit-llvm --lto-O2 --unresolved-symbols=ignore-all --entry=0 \
    --undefined-glob="$keep" -o "$base.whole.bc" "$base.bc" "$base.refcounting.bc"
  "$toolchain/clang" -target "$clang_target" "${codegen[@]}" -Oz -ffunction-sections -fdata-sections \
    -c "$base.whole.bc" -o "$object"
}
swift_object 'ancs_*' "$out/ancs-swift.o" \
  -I "$here/include" -module-name ANCS "${core[@]}" "$here/src/ANCSConsumerC.swift" "$here/src/ANCSParserC.swift"
# ams.h: only its functions (ancs_ams_*, ancs_cts_*) stay visible.
swift_object 'ancs_[ac][mt]s_*' "$out/ancs-media-swift.o" \
  -I "$here/include" -module-name ANCS "${media[@]}" "$here/src/ANCSMediaC.swift"
# The consumer's allocations go through src/ancs_heap.c, which serves them
# from the caller's storage after ancs_heap_use() and from the C library's
# heap otherwise (ancs.h, "Memory"): the object's posix_memalign and free
# are renamed to its functions.
"$(dirname "$(command -v swiftc)")/llvm-objcopy" --redefine-sym posix_memalign=ancs_heap_alloc \
  --redefine-sym free=ancs_heap_free "$out/ancs-swift.o"
"${cc[@]}" -c -I "$here/include" -o "$out/ancs_tables.o" "$here/src/ancs_tables.c"
"${cc[@]}" -c -I "$here/include" -o "$out/ancs_heap.o" "$here/src/ancs_heap.c"
rm -f "$out/libancs.a" "$out/libancs_media.a"
ar rcs "$out/libancs.a" "$out/ancs-swift.o" "$out/ancs_tables.o" "$out/ancs_heap.o"
ar rcs "$out/libancs_media.a" "$out/ancs-media-swift.o"
echo "$options" > "$out/options"
fi

# Reference counting is non-atomic (whole-program.sh), which is safe while
# instances share no counted object: no global may be made at run time (a
# lazily initialized global has a once-token, *_Wz).
for object in "$out/ancs-swift.o" "$out/ancs-media-swift.o"; do
  if lazy=$(grep '_Wz$' <<< "$(nm "$object")"); then
    echo "error: $object initializes globals at run time, which instances would share while their counts are not atomic:" >&2
    echo "$lazy" >&2
    exit 1
  fi
  if [ ${#extra[@]} -gt 0 ] && nm -u "$object" | grep -q '__stack_chk'; then
    echo "error: $object references the stack protector, built without it" >&2
    exit 1
  fi
done

tables=$(dirname "$(command -v swiftc)")/../lib/swift/embedded/$swift_target/libswiftUnicodeDataTables.a
echo "$($up_to_date && echo "up to date" || echo built) $out/libancs.a $out/libancs_media.a"
echo "needs from the C library: $(nm -u "$out/ancs-swift.o" "$out/ancs_heap.o" | awk '/ U /{print $2}' | grep -v '^_swift_stdlib_\|^ancs_' | sort -u | tr '\n' ' ')"
echo "(a C library without posix_memalign: add integrations/c/src/ancs_posix_memalign.c to the firmware)"
if [ -f "$tables" ]; then echo "UNICODE_TABLES=$(cd "$(dirname "$tables")" && pwd)/$(basename "$tables")"; fi
