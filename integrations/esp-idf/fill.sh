#!/usr/bin/env bash
# Fills the ESP-IDF component, so that one folder holds all it needs: the
# NimBLE adapter's source (its media part, AMS and CTS, too), the headers,
# and libancs.a and libancs_media.a for each RISC-V ISA of the chips it
# serves (built here with Embedded Swift: integrations/c/build.sh).
#
#   integrations/esp-idf/fill.sh                 # this folder: src/, include/, lib/
#   integrations/esp-idf/fill.sh --out DIR       # a copy of the whole component in DIR
#   integrations/esp-idf/fill.sh --check DIR     # --out DIR, then check that it stands alone
#
# The filled parts are not in git (.gitignore); run it again after a change.
# The component then goes to a project's EXTRA_COMPONENT_DIRS, or to a
# registry as it is (idf_component.yml has its version).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$here check=false
case "${1:-}" in
  --out) out=${2:?--out DIR} ;;
  --check) out=${2:?--check DIR}; check=true ;;
  "") ;;
  *) echo "usage: $0 [--out DIR | --check DIR]" >&2; exit 2 ;;
esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ "$out" != "$here" ]; then
  cp "$here/CMakeLists.txt" "$here/Kconfig" "$here/idf_component.yml" "$here/README.md" "$out/"
  cp "$root/LICENSE" "$root/NOTICE" "$out/"
fi
mkdir -p "$out/src" "$out/include"
cp "$root/integrations/nimble/ancs_nimble.c" "$root/integrations/nimble/ancs_nimble_media.c" \
  "$root/integrations/nimble/ancs_nimble_internal.h" "$out/src/"
cp "$root/integrations/nimble/ancs_nimble.h" "$root/integrations/nimble/ancs_nimble_media.h" \
  "$root/integrations/c/include/ancs.h" "$root/integrations/c/include/ams.h" "$out/include/"
for isa in rv32imc rv32imac; do
  "$root/integrations/c/build.sh" "$isa" "$root/.build/capi/$isa" > /dev/null
  mkdir -p "$out/lib/$isa"
  cp "$root/.build/capi/$isa/libancs.a" "$root/.build/capi/$isa/libancs_media.a" "$out/lib/$isa/"
done
echo "filled $out"

if $check; then
  fail() { echo "error: the ESP-IDF component in $out: $*" >&2; exit 1; }
  # Nothing outside the folder: no path climbs out of it.
  if grep -n '\.\./\|ancs_root' "$out/CMakeLists.txt"; then fail "CMakeLists.txt reaches outside the component"; fi
  for file in src/ancs_nimble.c src/ancs_nimble_media.c src/ancs_nimble_internal.h include/ancs.h include/ancs_nimble.h \
              include/ams.h include/ancs_nimble_media.h lib/rv32imc/libancs.a lib/rv32imac/libancs.a \
              lib/rv32imc/libancs_media.a lib/rv32imac/libancs_media.a Kconfig LICENSE NOTICE; do
    [ -s "$out/$file" ] || fail "$file is missing"
  done
  grep -Eq '^version: "[0-9]+\.[0-9]+\.[0-9]+"$' "$out/idf_component.yml" || fail "idf_component.yml has no version"
  # The component's version is the package's (ancs --version).
  package=$(sed -n 's/^ *static let current = "\(.*\)"$/\1/p' "$root/Sources/ancs/CommandFailures.swift")
  grep -qx "version: \"$package\"" "$out/idf_component.yml" || fail "idf_component.yml's version is not the package's ($package)"
  # The Kconfig symbols the CMake reads are the ones Kconfig declares.
  for symbol in $(grep -o 'CONFIG_ANCS_[A-Z_]*' "$out/CMakeLists.txt" | sort -u); do
    grep -q "^ *config ${symbol#CONFIG_}\$" "$out/Kconfig" || fail "$symbol is not in Kconfig"
  done
  # Built without the stack protector: a default IDF project does not define its symbols.
  for isa in rv32imc rv32imac; do
    for lib in libancs.a libancs_media.a; do
      if nm -u "$out/lib/$isa/$lib" 2>/dev/null | grep -q __stack_chk; then fail "lib/$isa/$lib needs the stack protector"; fi
    done
  done
  # The adapter compiles from the folder's own headers, as the component's
  # INCLUDE_DIRS give them (NimBLE's headers are the IDF's bt component's).
  nimble=${NIMBLE_ROOT:-$root/.build/nimble/src}
  if [ -f "$nimble/nimble/host/include/host/ble_hs.h" ] && command -v riscv64-unknown-elf-gcc >/dev/null; then
    riscv64-unknown-elf-gcc --specs=picolibc.specs -march=rv32imc -mabi=ilp32 -Os -Wall -Werror -DMYNEWT_VAL_BLE_SM_SC=1 \
      -DANCS_NIMBLE_LOG=0 -DANCS_NIMBLE_NULL_CONFIG_DEFAULTS=1 -I "$out/include" \
      -I "$nimble/nimble/include" -I "$nimble/nimble/host/include" -I "$nimble/porting/nimble/include" \
      -I "$nimble/porting/npl/dummy/include" -I "$nimble/porting/examples/linux/include" -I "$nimble/nimble/transport/include" \
      -c "$out/src/ancs_nimble.c" -o "$out/ancs_nimble.check.o"
    riscv64-unknown-elf-gcc --specs=picolibc.specs -march=rv32imc -mabi=ilp32 -Os -Wall -Werror -DMYNEWT_VAL_BLE_SM_SC=1 \
      -DANCS_NIMBLE_LOG=0 -I "$out/include" \
      -I "$nimble/nimble/include" -I "$nimble/nimble/host/include" -I "$nimble/porting/nimble/include" \
      -I "$nimble/porting/npl/dummy/include" -I "$nimble/porting/examples/linux/include" -I "$nimble/nimble/transport/include" \
      -c "$out/src/ancs_nimble_media.c" -o "$out/ancs_nimble_media.check.o"
    rm -f "$out/ancs_nimble.check.o" "$out/ancs_nimble_media.check.o"
  fi
  echo "checked $out: self-contained"
fi
