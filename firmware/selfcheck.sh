#!/usr/bin/env bash
# Checks that the firmware harness fails when it should: images that trap,
# run out of heap, hang, or fail a check must each make the run fail with
# their own exit status, and the test image linked with a session heap
# budget below its measured peak must fail too, as must the C API's worst
# case held to a bound below its peak, and trap in storage of that size. Run after firmware/run.sh
# (it reuses its objects).
#
#   firmware/selfcheck.sh [arm|riscv|all]      (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
fw=$(pwd)/firmware
out=$(pwd)/.build/firmware
[ -d /opt/swift/usr/bin ] && export PATH=/opt/swift/usr/bin:$PATH
arches=()
case ${1:-all} in
  arm|riscv|armv8m) arches=("$1") ;;
  all) arches=(arm riscv) ;;
  *) echo "usage: firmware/selfcheck.sh [arm|riscv|armv8m|all]" >&2; exit 2 ;;
esac
. scripts/embedded/targets.sh

failed=0
expect() { # arch elf want_status want_text timeout what
  local arch=$1 elf=$2 want=$3 text=$4 limit=$5 what=$6 status=0
  firmware_arch "$arch"
  timeout "$limit" "${qemu[@]}" -nographic -monitor none -serial none -icount shift=0 \
    -semihosting-config enable=on,target=native -kernel "$elf" > "$elf.txt" 2>&1 || status=$?
  if [ "$status" -eq "$want" ] && grep -q -- "$text" "$elf.txt"; then
    echo "== $arch self-check: $what: fails as it must (status $status)"
  else
    echo "== $arch self-check: $what: status $status, expected $want with \"$text\"" >&2
    sed 's/^/   /' "$elf.txt" >&2
    failed=1
  fi
}

for arch in "${arches[@]}"; do
  dir=$out/$arch
  [ -f "$dir/test.o" ] || { echo "error: run firmware/run.sh $arch first" >&2; exit 1; }
  firmware_arch "$arch"   # scripts/embedded/targets.sh
  target=$swift_target
  tables=$(dirname "$(command -v swiftc)")/../lib/swift/embedded/$target/libswiftUnicodeDataTables.a
  c_flags=(-Os -std=c11 -ffunction-sections -fdata-sections -ffreestanding -fno-builtin -Wall -I "$fw/rt")
  mkdir -p "$dir/selfcheck"
  swiftc -target "$target" "${xcc[@]}" -swift-version 6 -enable-experimental-feature Embedded -enable-experimental-feature Extern \
    -wmo -parse-as-library -Onone -module-name Faults -c "$fw/selfcheck/Faults.swift" -o "$dir/selfcheck/faults.o"
  for fault in 1 2 3 4; do
    clang "${ctarget[@]}" "${c_flags[@]}" -DFW_FAULT=$fault -c "$fw/selfcheck/fault-mode.c" -o "$dir/selfcheck/mode$fault.o"
    ld.lld -T "$fw/rt/link-$arch.ld" --gc-sections -o "$dir/selfcheck/fault$fault.elf" \
      "$dir/startup-$rt.o" "$dir/selfcheck/faults.o" "$dir/selfcheck/mode$fault.o" "$dir/runtime.o" "$tables" "$libgcc"
  done
  expect "$arch" "$dir/selfcheck/fault1.elf" 139 "$trap_text" 20 "a Swift trap (index out of range)"
  expect "$arch" "$dir/selfcheck/fault2.elf" 137 "out of heap" 20 "out of heap"
  expect "$arch" "$dir/selfcheck/fault3.elf" 124 "fault 3" 3 "a hang (cut by the timeout)"
  expect "$arch" "$dir/selfcheck/fault4.elf" 1 "^FAIL" 20 "a failed check"

  # The test image with a session heap budget of 1 KiB, below its measured peak.
  clang "${ctarget[@]}" "${c_flags[@]}" -DFW_SESSION_HEAP_BUDGET=1024 -c "$fw/rt/runtime.c" -o "$dir/selfcheck/runtime-1k.o"
  ld.lld -T "$fw/rt/link-$arch.ld" --gc-sections -o "$dir/selfcheck/test-1k.elf" \
    "$dir/startup-$rt.o" "$dir/test.o" "$dir/ancs.o" "$dir/workload.o" "$dir/selfcheck/runtime-1k.o" "$tables" "$libgcc"
  expect "$arch" "$dir/selfcheck/test-1k.elf" 1 "OVER BUDGET" 60 "the test image over a 1 KiB session heap budget"
  ld.lld -T "$fw/rt/link-$arch.ld" --gc-sections -o "$dir/selfcheck/entry-1k.elf" \
    "$dir/startup-$rt.o" "$dir/entry.o" "$dir/entry-driver.o" "$dir/selfcheck/runtime-1k.o" "$tables" "$libgcc"
  expect "$arch" "$dir/selfcheck/entry-1k.elf" 1 "OVER BUDGET" 60 "the consumer image over a 1 KiB session heap budget"
  # The C API's worst case held to 4 KiB, below its measured peak.
  clang "${ctarget[@]}" "${c_flags[@]}" -I integrations/c/include -DCAPI_HEAP_BOUND=4096 -c "$fw/capi/worst-case.c" -o "$dir/selfcheck/worst-case-4k.o"
  ld.lld -T "$fw/rt/link-$arch.ld" --gc-sections -o "$dir/selfcheck/capi-4k.elf" \
    "$dir/startup-$rt.o" "$dir/selfcheck/worst-case-4k.o" "$(pwd)/.build/capi/$fw_triple/libancs.a" "$dir/runtime.o" "$tables" "$libgcc"
  expect "$arch" "$dir/selfcheck/capi-4k.elf" 1 "^FAIL heap peak within" 60 "the C API's worst case held to a 4 KiB bound"
  # The same in storage of the caller's (ancs_heap_use) of 4 KiB: an
  # allocation fails there, and Embedded Swift traps (ancs.h, "Memory").
  clang "${ctarget[@]}" "${c_flags[@]}" -I integrations/c/include -DCAPI_STORAGE_SIZE=4096 -c "$fw/capi/worst-case.c" -o "$dir/selfcheck/worst-case-storage-4k.o"
  ld.lld -T "$fw/rt/link-$arch.ld" --gc-sections -o "$dir/selfcheck/capi-storage-4k.elf" \
    "$dir/startup-$rt.o" "$dir/selfcheck/worst-case-storage-4k.o" "$(pwd)/.build/capi/$fw_triple/libancs.a" "$dir/runtime.o" "$tables" "$libgcc"
  expect "$arch" "$dir/selfcheck/capi-storage-4k.elf" 139 "$trap_text" 60 "the C API's worst case in 4 KiB of storage (ancs_heap_use)"
done
[ $failed = 0 ] && echo "== firmware self-check: every fault fails the run" || echo "== firmware self-check: FAILED" >&2
exit $failed
