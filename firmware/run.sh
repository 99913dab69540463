#!/usr/bin/env bash
# Builds the firmware images and runs them on QEMU (see docs/FIRMWARE.md, "Firmware").
#
#   firmware/run.sh [arm|riscv|armv8m|all]  (default: all: arm and riscv)
#
# Per architecture (arm: Cortex-M4 on mps2-an386; riscv: RV32IMAC on virt;
# armv8m: Cortex-M33, armv8-M Mainline, on mps2-an505, compiled against
# Embedded Swift's armv7em library with Cortex-M33 code generation, since
# the toolchain ships none for armv8-M):
#   test   firmware/test/*.swift, a module of its own that imports ANCS (so it
#          uses the public API only), with every conformance vector
#          (Tests/Vectors/conformance.json), every AMS and CTS vector
#          (Tests/Vectors/media.json) and a slice of the standard
#          Data Source workload linked in: drives the Consumer and Provider
#          engines, prints a line per check, exits 0 only if all pass and the
#          consumer session's heap peak is within SESSION_HEAP_BUDGET.
#   entry  firmware/entry/consumer-entry.swift with the core in one module,
#          as scripts/check-embedded.sh builds the consumer (the footprint an
#          accessory links), driven from C through a whole session; its output
#          must equal the same driver built for the host.
#   capi   the C API (libancs.a, integrations/c/build.sh for the device)
#          driven through ancs.h by firmware/capi/worst-case.c: the worst
#          case of the microcontroller preset, whose heap peak must stay
#          within ancs.h's ANCS_MICROCONTROLLER_HEAP_BOUND, and one
#          notification's life in a steady session, which must allocate nothing.
# QEMU's exit status is each run's verdict; a hang is cut after QEMU_TIMEOUT s.
# Outputs: .build/firmware/<arch>/{test,entry,capi}.{elf,map,txt}, figures.txt.
#
# Needs: Swift 6.3 (swiftc, clang, ld.lld, llvm-size; on PATH or in
# /opt/swift/usr/bin), python3, and the Debian packages qemu-system-arm,
# qemu-system-misc, gcc-arm-none-eabi, gcc-riscv64-unknown-elf (their libgcc
# supplies soft-float and 64-bit helpers). scripts/ci-firmware.sh installs them.
#
# Env: SESSION_HEAP_BUDGET (bytes, default 2048), QEMU_TIMEOUT (s, default 60),
#      WORKLOAD_RESPONSES (default 50), VECTORS (default Tests/Vectors/conformance.json).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
fw=$repo/firmware
out=$repo/.build/firmware
[ -d /opt/swift/usr/bin ] && export PATH=/opt/swift/usr/bin:$PATH
vectors=${VECTORS:-$repo/Tests/Vectors/conformance.json}
budget=${SESSION_HEAP_BUDGET:-2048}
responses=${WORKLOAD_RESPONSES:-50}
arches=()
case ${1:-all} in
  arm|riscv|armv8m) arches=("$1") ;;
  all) arches=(arm riscv) ;;
  *) echo "usage: firmware/run.sh [arm|riscv|armv8m|all]" >&2; exit 2 ;;
esac

need() { command -v "$1" >/dev/null || { echo "error: $1 not found${2:+ ($2)}" >&2; exit 1; }; }
for tool in swiftc clang ld.lld python3 timeout; do need "$tool"; done
size_tool=$(command -v llvm-size || ls /usr/bin/llvm-size-* 2>/dev/null | head -n 1 || true)
[ -n "$size_tool" ] || { echo "error: llvm-size not found" >&2; exit 1; }
for arch in "${arches[@]}"; do
  case $arch in
    arm|armv8m) need qemu-system-arm "apt-get install qemu-system-arm"; need arm-none-eabi-gcc "apt-get install gcc-arm-none-eabi" ;;
    riscv) need qemu-system-riscv32 "apt-get install qemu-system-misc"; need riscv64-unknown-elf-gcc "apt-get install gcc-riscv64-unknown-elf" ;;
  esac
done
[ -f "$vectors" ] || { echo "error: no conformance vectors at $vectors" >&2; exit 1; }

. scripts/embedded/targets.sh
mkdir -p "$out"
# Generated files are replaced only when they change, so that up-to-date
# objects are not rebuilt (a fresh checkout builds everything).
python3 "$fw/tools/gen-vectors.py" "$vectors" "$out/Vectors.swift.new"
cmp -s "$out/Vectors.swift.new" "$out/Vectors.swift" || mv "$out/Vectors.swift.new" "$out/Vectors.swift"
python3 "$fw/tools/gen-media-vectors.py" Tests/Vectors/media.json "$out/MediaVectors.swift.new"
cmp -s "$out/MediaVectors.swift.new" "$out/MediaVectors.swift" || mv "$out/MediaVectors.swift.new" "$out/MediaVectors.swift"
if ! python3 scripts/gen_ds_workload.py --out "$out/workload" --check >/dev/null 2>&1; then
  python3 scripts/gen_ds_workload.py --out "$out/workload" >/dev/null
fi
python3 "$fw/tools/gen-workload.py" "$out/workload" "$responses" "$out/workload.c"

mapfile -t core < <(scripts/embedded/sources.sh all)
mapfile -t consumer_core < <(scripts/embedded/sources.sh consumer)
mapfile -t tests < <(find "$fw/test" -name '*.swift' | sort)
# The worst case's bound is the one ancs.h states.
bound=$(sed -n 's/^#define ANCS_MICROCONTROLLER_HEAP_BOUND \([0-9]*\)$/\1/p' integrations/c/include/ancs.h)
grep -q "^let worstCaseHeapBound = ${bound:-none}\$" "$fw/test/WorstCase.swift" || {
  echo "firmware/test/WorstCase.swift's worstCaseHeapBound is not ancs.h's ANCS_MICROCONTROLLER_HEAP_BOUND (${bound:-none})" >&2; exit 1; }
# The entry image is compiled as scripts/check-embedded.sh compiles it (its
# globals are plain vars, so not in Swift 6 mode); the test module in Swift 6 mode.
embedded_flags=("${embedded_swift[@]}" -enable-experimental-feature Extern
  -Xfrontend -function-sections -Xcc -fdata-sections)
swift_flags=(-swift-version 6 "${embedded_flags[@]}")
c_flags=(-Os -std=c11 -ffunction-sections -fdata-sections -ffreestanding -fno-builtin -Wall -Wextra
  -Wno-initializer-overrides -I "$fw/rt" -DFW_SESSION_HEAP_BUDGET="$budget")

# True when $1 exists and is newer than every other argument.
fresh() {
  local target=$1; shift
  [ -f "$target" ] || return 1
  local input
  for input in "$@" "$0"; do [ "$input" -nt "$target" ] && return 1; done
  return 0
}

stamp() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# The entry image's reference output: the same driver on the host (Embedded
# Swift for x86_64 with the host's C library), built once alongside.
host_reference() {
  local dir=$out/host
  mkdir -p "$dir"
  fresh "$dir/entry.o" "${consumer_core[@]}" firmware/entry/consumer-entry.swift ||
  swiftc -target x86_64-unknown-linux-gnu "${embedded_flags[@]}" -module-name ANCS -c \
    "${consumer_core[@]}" firmware/entry/consumer-entry.swift -o "$dir/entry.o"
  clang -O1 -DFW_HOST -I "$fw/rt" "$fw/entry/entry-driver.c" "$fw/entry/host.c" "$dir/entry.o" \
    "$(dirname "$(command -v swiftc)")/../lib/swift/embedded/x86_64-unknown-linux-gnu/libswiftUnicodeDataTables.a" \
    -lm -o "$dir/entry"
  "$dir/entry" > "$dir/entry-expected.txt"
}

build_arch() { # arch
  local arch=$1 dir=$out/$1 target fw_triple ctarget libgcc rt qemu trap_text swift_target clang_target codegen xcc
  mkdir -p "$dir"
  firmware_arch "$arch"   # scripts/embedded/targets.sh
  target=$swift_target
  local tables
  tables=$(dirname "$(command -v swiftc)")/../lib/swift/embedded/$target/libswiftUnicodeDataTables.a
  for source in runtime "startup-$rt"; do
    clang "${ctarget[@]}" "${c_flags[@]}" -c "$fw/rt/$source.c" -o "$dir/$source.o"
  done
  clang "${ctarget[@]}" "${c_flags[@]}" -c "$fw/entry/entry-driver.c" -o "$dir/entry-driver.o"
  clang "${ctarget[@]}" "${c_flags[@]}" -Wno-unused-parameter -c "$out/workload.c" -o "$dir/workload.o"
  # The test image: module ANCS (the core, every file), then the test module.
  fresh "$dir/ancs.o" "${core[@]}" ||
  swiftc -target "$target" "${xcc[@]}" "${swift_flags[@]}" -module-name ANCS -emit-module \
    -emit-module-path "$dir/modules/ANCS.swiftmodule" -c "${core[@]}" -o "$dir/ancs.o"
  fresh "$dir/test.o" "${tests[@]}" "$out/Vectors.swift" "$out/MediaVectors.swift" "$dir/ancs.o" ||
  swiftc -target "$target" "${xcc[@]}" "${swift_flags[@]}" -module-name FirmwareTest -I "$dir/modules" -c \
    "${tests[@]}" "$out/Vectors.swift" "$out/MediaVectors.swift" -o "$dir/test.o"
  ld.lld -T "$fw/rt/link-$arch.ld" --gc-sections -Map "$dir/test.map" -o "$dir/test.elf" \
    "$dir/startup-$rt.o" "$dir/test.o" "$dir/ancs.o" "$dir/workload.o" "$dir/runtime.o" "$tables" "$libgcc"
  # The entry image: the consumer footprint build, exactly as check-embedded.sh
  # compiles it (whole program); the host reference is the module's own object.
  fresh "$dir/entry.o" "${consumer_core[@]}" firmware/entry/consumer-entry.swift scripts/embedded/whole-program.sh \
    scripts/embedded/nonatomic-refcounting.c ||
  scripts/embedded/whole-program.sh "$fw_triple" ancs_consumer_input "$dir/entry.o" -module-name ANCS \
    "${consumer_core[@]}" firmware/entry/consumer-entry.swift
  ld.lld -T "$fw/rt/link-$arch.ld" --gc-sections -Map "$dir/entry.map" -o "$dir/entry.elf" \
    "$dir/startup-$rt.o" "$dir/entry.o" "$dir/entry-driver.o" "$dir/runtime.o" "$tables" "$libgcc"
  # The C API image: libancs.a as integrations/c/build.sh builds it for the
  # device, driven through ancs.h by firmware/capi/worst-case.c.
  # (build.sh keeps it in .build/capi/TARGET and builds it only when out of date.)
  integrations/c/build.sh "$fw_triple" > "$dir/capi.log"
  clang "${ctarget[@]}" "${c_flags[@]}" -I integrations/c/include -c "$fw/capi/worst-case.c" -o "$dir/worst-case.o"
  ld.lld -T "$fw/rt/link-$arch.ld" --gc-sections -Map "$dir/capi.map" -o "$dir/capi.elf" \
    "$dir/startup-$rt.o" "$dir/worst-case.o" "$repo/.build/capi/$fw_triple/libancs.a" "$dir/runtime.o" "$tables" "$libgcc"
}

run_image() { # arch image -> 0 pass
  local arch=$1 image=$2 dir=$out/$1 status=0 fw_triple ctarget libgcc rt qemu trap_text swift_target clang_target codegen xcc
  firmware_arch "$arch"
  # Semihosting output goes to QEMU's stderr. -icount shift=0: one instruction
  # is 1 ns of virtual time, which the images' instruction counters rely on.
  timeout "${QEMU_TIMEOUT:-60}" "${qemu[@]}" -nographic -monitor none -serial none -icount shift=0 \
    -semihosting-config enable=on,target=native -kernel "$dir/$image.elf" > "$dir/$image.txt" 2>&1 || status=$?
  grep -v '^figure ' "$dir/$image.txt" | sed "s/^/[$arch $image] /"
  "$size_tool" -A "$dir/$image.elf" | awk -v a="$arch" -v i="$image" '
    $1 == ".text" || $1 == ".ARM.exidx" { text += $2 } $1 == ".data" { data += $2 } $1 == ".bss" { bss += $2 }
    END { printf "figure %s %s flash_text %d\nfigure %s %s data %d\nfigure %s %s bss %d\n", a, i, text, a, i, data, a, i, bss }' >> "$dir/figures.txt"
  grep '^figure ' "$dir/$image.txt" | sed "s/^figure /figure $arch $image /" >> "$dir/figures.txt" || true
  local verdict=ok
  if [ "$status" -eq 124 ]; then
    echo "[$arch $image] TIMEOUT after ${QEMU_TIMEOUT:-60} s" >&2; verdict=failed
  elif [ "$status" -ne 0 ]; then
    echo "[$arch $image] exit status $status" >&2; verdict=failed
  elif [ "$image" = test ] || [ "$image" = capi ]; then
    grep -qx PASS "$dir/$image.txt" || verdict=failed
  else
    grep -v -e '^#' -e '^figure ' "$dir/$image.txt" | diff -u "$out/host/entry-expected.txt" - || verdict=failed
  fi
  echo "== $arch $image: $([ $verdict = ok ] && echo PASS || echo FAILED) (QEMU exit status $status)"
  [ $verdict = ok ]
}

t0=$(stamp)
host_reference &
host_pid=$!
pids=()
for arch in "${arches[@]}"; do
  rm -f "$out/$arch/figures.txt"
  build_arch "$arch" &
  pids+=($!)
done
build_failed=0
wait "$host_pid" || { echo "error: the host reference build failed" >&2; build_failed=1; }
for pid in "${pids[@]}"; do wait "$pid" || build_failed=1; done
[ $build_failed = 0 ] || { echo "error: firmware build failed" >&2; exit 1; }
echo "== built in $(since "$t0") s"

failed=0
for arch in "${arches[@]}"; do
  for image in test entry capi; do
    run_image "$arch" "$image" || failed=1
  done
done
for arch in "${arches[@]}"; do cat "$out/$arch/figures.txt"; done
[ $failed = 0 ] && echo "== firmware: all images PASS" || echo "== firmware: FAILED" >&2
exit $failed
