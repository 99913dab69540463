#!/usr/bin/env bash
# The accessory firmware's ANCS code, and its size, for:
#   Cortex-M4, soft-float ABI   armv7em-none-none-eabi, adapter -mcpu=cortex-m4
#   Cortex-M4F, hard-float ABI  armv7em-none-none-eabihf, adapter
#                               -mfloat-abi=hard -mfpu=fpv4-sp-d16 (most nRF52
#                               and STM32 projects)
#   ESP32-C3 (RV32IMC, ilp32)   rv32imc, adapter riscv64-unknown-elf-gcc
#                               -march=rv32imc -mabi=ilp32 (picolibc's headers)
# Each of:
#   core+C API   Sources/ANCS (consumer side) and integrations/c, Embedded Swift
#                (integrations/c/build.sh TARGET)
#   parser       the same library linked from ancs_parser.h's functions only
#                (Cortex-M4): no consumer engine
#   adapter      integrations/nimble/ancs_nimble.c against NimBLE's headers
#                (GCC -Os, NimBLE's NPL port "dummy" for the types)
#   media part   integrations/nimble/ancs_nimble_media.c (AMS and CTS on the
#                adapter's link, Cortex-M4), with ams.h's library; the adapter
#                must reference none of it (a firmware without it links none)
# is linked alone and all together with --gc-sections from the functions a
# firmware calls, C library and NimBLE left unresolved (their size is the
# firmware's), and measured with llvm-size. The hard-float objects are linked
# by GNU ld, which refuses objects of another float ABI: the script checks
# that the soft-float adapter does not link with the hard-float library. The
# soft-float adapter is also built with ANCS_NIMBLE_LOG=0 (no progress text):
# it must not reference vsnprintf; ancs.h's enums must be int-sized with
# GCC's short enums. Then the same links with picolibc's libc.a and the
# compiler's libgcc.a (when picolibc is installed), to count what they pull in. Needs the NimBLE tree (NIMBLE_ROOT,
# default .build/nimble/src, extracted by scripts/ci-nimble.sh); the RISC-V
# adapter is skipped (the library alone is measured) without
# riscv64-unknown-elf-gcc and picolibc.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
nimble=${NIMBLE_ROOT:-$root/.build/nimble/src}
out=$root/.build/firmware-size
mkdir -p "$out"
size_bin=$(command -v llvm-size || ls /usr/bin/llvm-size-* 2>/dev/null | head -n 1)
lld=$(command -v ld.lld)

# Each library in integrations/c/build.sh's own folder (.build/capi/TARGET),
# shared with the firmware images and the ESP-IDF component's fill.sh.
for pair in capi:armv7em-none-none-eabi capi-hf:armv7em-none-none-eabihf capi-rv32imc:rv32imc; do
  integrations/c/build.sh "${pair#*:}" > "$out/${pair%%:*}.log"
  rm -rf "${out:?}/${pair%%:*}"
  ln -s "$root/.build/capi/${pair#*:}" "$out/${pair%%:*}"
done
inc=(-I "$nimble/nimble/include" -I "$nimble/nimble/host/include" -I "$nimble/porting/nimble/include"
     -I "$nimble/porting/npl/dummy/include" -I "$nimble/porting/examples/linux/include" -I "$nimble/nimble/transport/include"
     -I "$root/integrations/c/include" -I "$root/integrations/nimble")
cflags=(-Os -ffunction-sections -fdata-sections -Wall -Wextra -Werror -Wno-unused-parameter -DMYNEWT_VAL_BLE_SM_SC=1 "${inc[@]}")
m4=(arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb)
"${m4[@]}" "${cflags[@]}" -c integrations/nimble/ancs_nimble.c -o "$out/ancs_nimble.o"
"${m4[@]}" "${cflags[@]}" -DANCS_NIMBLE_LOG=0 -c integrations/nimble/ancs_nimble.c -o "$out/ancs_nimble-nolog.o"
"${m4[@]}" -mfloat-abi=hard -mfpu=fpv4-sp-d16 "${cflags[@]}" -c integrations/nimble/ancs_nimble.c -o "$out/ancs_nimble-hf.o"
rv=()
if command -v riscv64-unknown-elf-gcc >/dev/null && [ -f /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs ]; then
  rv=("$out/ancs_nimble-rv32imc.o" "$out/ancs_nimble_media-rv32imc.o")
  riscv64-unknown-elf-gcc --specs=picolibc.specs -march=rv32imc -mabi=ilp32 "${cflags[@]}" \
    -c integrations/nimble/ancs_nimble.c -o "${rv[0]}"
  riscv64-unknown-elf-gcc --specs=picolibc.specs -march=rv32imc -mabi=ilp32 "${cflags[@]}" \
    -c integrations/nimble/ancs_nimble_media.c -o "${rv[1]}"
fi
"${m4[@]}" "${cflags[@]}" -c integrations/nimble/ancs_nimble_media.c -o "$out/ancs_nimble_media.o"
"${m4[@]}" "${cflags[@]}" -DANCS_NIMBLE_LOG=0 -c integrations/nimble/ancs_nimble_media.c -o "$out/ancs_nimble_media-nolog.o"
if nm -u "$out/ancs_nimble-nolog.o" "$out/ancs_nimble_media-nolog.o" | grep -q printf; then
  echo "error: the adapter built with ANCS_NIMBLE_LOG=0 still formats text" >&2; exit 1
fi
if nm -u "$out/ancs_nimble.o" | grep -E 'ancs_(ams|cts|nimble_media)_'; then
  echo "error: ancs_nimble.c references the media part or ams.h's library: a firmware without them would link them" >&2; exit 1
fi

api=(ancs_consumer_init ancs_consumer_deinit ancs_consumer_config_default ancs_consumer_link_up ancs_consumer_mtu_changed
     ancs_consumer_subscription_result ancs_consumer_notification_source ancs_consumer_data_source ancs_consumer_write_result
     ancs_consumer_tick ancs_consumer_link_down ancs_consumer_service_changed ancs_consumer_stop ancs_consumer_next_deadline
     ancs_consumer_in_session ancs_consumer_fetch_attributes ancs_consumer_fetch_app_attributes ancs_consumer_perform_action
     ancs_consumer_cancel ancs_status_name ancs_consumer_config_microcontroller ancs_consumer_add_app_name ancs_consumer_bond_lost)
adapter=(ancs_nimble_init ancs_nimble_gap_event ancs_nimble_fetch_attributes ancs_nimble_fetch_app_attributes
         ancs_nimble_perform_action ancs_nimble_consumer)
# The parser C API alone (ancs_parser.h: decoder, encoders, DataSourceParser),
# what a firmware that drives ANCS itself links instead of the consumer.
parser_api=(ancs_decode_notification_source ancs_encode_get_notification_attributes ancs_encode_get_app_attributes
            ancs_encode_perform_notification_action ancs_parser_storage_size ancs_parser_init ancs_parser_begin
            ancs_parser_feed ancs_parser_finish ancs_parser_reset ancs_parser_is_parsing ancs_decode_reason_name
            ancs_parser_status_name)
# ams.h (libancs_media.a): the AMS and CTS clients, an object of its own.
media_api=(ancs_ams_storage_size ancs_ams_init ancs_ams_deinit ancs_ams_link_up ancs_ams_link_down ancs_ams_service_changed
           ancs_ams_subscription_result ancs_ams_write_result ancs_ams_read_result ancs_ams_remote_command
           ancs_ams_entity_update ancs_ams_tick ancs_ams_stop ancs_ams_next_deadline ancs_ams_is_ready ancs_ams_perform
           ancs_ams_playback_at ancs_ams_text ancs_cts_storage_size ancs_cts_init ancs_cts_deinit ancs_cts_link_up
           ancs_cts_link_down ancs_cts_read_result ancs_cts_current_time ancs_cts_tick ancs_cts_stop ancs_cts_next_deadline
           ancs_cts_phone_time)
# The media part of the adapter (ancs_nimble_media.h): what a watch calls.
media_adapter=(ancs_nimble_media_init ancs_nimble_media_deinit ancs_nimble_ams_perform ancs_nimble_ams_playback
               ancs_nimble_phone_time ancs_nimble_ams ancs_ams_text)
cts_api=(ancs_cts_storage_size ancs_cts_init ancs_cts_deinit ancs_cts_link_up ancs_cts_link_down ancs_cts_read_result
         ancs_cts_current_time ancs_cts_tick ancs_cts_stop ancs_cts_next_deadline ancs_cts_phone_time)
link() {  # linker output roots objects...
  local linker=$1 output=$2 roots=$3; shift 3
  local keep=()
  for symbol in $roots; do keep+=(--undefined="$symbol"); done
  "$linker" --gc-sections --unresolved-symbols=ignore-all --entry=0 "${keep[@]}" -o "$output" "$@"
}
capi() { echo "$out/$1/ancs-swift.o" "$out/$1/ancs_tables.o" "$out/$1/ancs_heap.o"; }
link "$lld" "$out/capi.elf" "${api[*]}" $(capi capi)
link "$lld" "$out/parser.elf" "${parser_api[*]}" $(capi capi)
link "$lld" "$out/media.elf" "${media_api[*]}" "$out/capi/ancs-media-swift.o"
link "$lld" "$out/cts.elf" "${cts_api[*]}" "$out/capi/ancs-media-swift.o"
# Both libraries in one firmware: each object keeps its own code (nothing
# but the C API is global in either), so they link side by side.
link "$lld" "$out/capi-media.elf" "${api[*]} ${media_api[*]}" $(capi capi) "$out/capi/ancs-media-swift.o"
link "$lld" "$out/adapter.elf" "${adapter[*]}" "$out/ancs_nimble.o"
link "$lld" "$out/all.elf" "${adapter[*]}" "$out/ancs_nimble.o" $(capi capi)
link "$lld" "$out/media-adapter.elf" "${media_adapter[*]}" "$out/ancs_nimble_media.o"
link "$lld" "$out/all-media.elf" "${adapter[*]} ${media_adapter[*]}" "$out/ancs_nimble.o" "$out/ancs_nimble_media.o" \
  $(capi capi) "$out/capi/ancs-media-swift.o"
link "$lld" "$out/adapter-nolog.elf" "${adapter[*]}" "$out/ancs_nimble-nolog.o"
link "$lld" "$out/all-nolog.elf" "${adapter[*]}" "$out/ancs_nimble-nolog.o" $(capi capi)
# GNU ld checks the float ABI (Tag_ABI_VFP_args) of every object, lld does
# not when the tag is absent, as in GCC's soft-float objects.
link arm-none-eabi-ld "$out/capi-hf.elf" "${api[*]}" $(capi capi-hf) 2> "$out/link-hf.log"
link arm-none-eabi-ld "$out/all-hf.elf" "${adapter[*]}" "$out/ancs_nimble-hf.o" $(capi capi-hf) 2>> "$out/link-hf.log"
if link arm-none-eabi-ld "$out/mixed.elf" "${adapter[*]}" "$out/ancs_nimble.o" $(capi capi-hf) 2> "$out/link-mixed.log"; then
  echo "error: the soft-float adapter linked with the hard-float library: the float ABI is not checked" >&2; exit 1
fi
grep -q 'uses VFP register arguments' "$out/link-mixed.log" || { cat "$out/link-mixed.log" >&2; exit 1; }
# GCC for arm-none-eabi makes enums as small as their values (-fshort-enums,
# what GNU ld's "variable-size enums" warning above is about, object-wide);
# the library's are int-sized. ancs.h's enums must be int-sized under both,
# or the fields of ancs_event after one would move (ANCS_ENUM_INT).
printf '#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n#include "ancs.h"\n%s\n' \
  '_Static_assert(sizeof(ancs_characteristic) == 4 && sizeof(ancs_event_type) == 4 && sizeof(ancs_health) == 4 && sizeof(ancs_resubscribe_reason) == 4 && sizeof(ancs_session_end) == 4, "an enum of ancs.h is not int-sized with -fshort-enums");' \
  > "$out/enum-size.c"
"${m4[@]}" -fshort-enums -I integrations/c/include -c "$out/enum-size.c" -o "$out/enum-size.o"
printf '#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n#include "ams.h"\n%s\n' \
  '_Static_assert(sizeof(ancs_ams_characteristic) == 4 && sizeof(ancs_ams_event_type) == 4 && sizeof(ancs_ams_end) == 4 && sizeof(ancs_cts_characteristic) == 4 && sizeof(ancs_cts_event_type) == 4, "an enum of ams.h is not int-sized with -fshort-enums");' \
  > "$out/enum-size-media.c"
"${m4[@]}" -fshort-enums -I integrations/c/include -c "$out/enum-size-media.c" -o "$out/enum-size-media.o"
printf '#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n#include "ancs_parser.h"\n%s\n' \
  '_Static_assert(sizeof(ancs_decode_reason) == 4 && sizeof(ancs_parser_event_type) == 4, "an enum of ancs_parser.h is not int-sized with -fshort-enums");' \
  > "$out/enum-size-parser.c"
"${m4[@]}" -fshort-enums -I integrations/c/include -c "$out/enum-size-parser.c" -o "$out/enum-size-parser.o"
link "$lld" "$out/capi-rv32imc.elf" "${api[*]}" $(capi capi-rv32imc)
if [ ${#rv[@]} -gt 0 ]; then link "$lld" "$out/all-rv32imc.elf" "${adapter[*]}" "${rv[0]}" $(capi capi-rv32imc); fi

# The same links with the C library and compiler runtime the firmware would
# bring (picolibc as Debian packages it, the compiler's libgcc) after the
# objects: what the library and the adapter pull in from them is then counted
# (malloc and free behind posix_memalign, memcpy/memmove/memset, the stack
# protector's, 64-bit division; vsnprintf for the adapter's log).
clib() { # gcc flags... → libc.a and libgcc.a of that multilib, if picolibc has it
  local gcc=$1; shift
  local libc
  libc=/usr/lib/picolibc/$("$gcc" -dumpmachine)/lib/$("$gcc" "$@" -print-multi-directory)/libc.a
  [ -f "$libc" ] && echo "$libc $("$gcc" "$@" -print-libgcc-file-name)"
}
clib_m4=$(clib arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb || true)
clib_hf=$(clib arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 || true)
clib_rv=$(clib riscv64-unknown-elf-gcc -march=rv32imc -mabi=ilp32 || true)
with_clib=()
if [ -n "$clib_m4" ]; then
  link "$lld" "$out/all-clib.elf" "${adapter[*]}" "$out/ancs_nimble.o" $(capi capi) $clib_m4 -Map="$out/all-clib.map"
  link "$lld" "$out/all-nolog-clib.elf" "${adapter[*]}" "$out/ancs_nimble-nolog.o" $(capi capi) $clib_m4 -Map="$out/all-nolog-clib.map"
  link "$lld" "$out/capi-clib.elf" "${api[*]}" $(capi capi) $clib_m4 -Map="$out/capi-clib.map"
  with_clib+=(all-clib all-nolog-clib capi-clib)
fi
if [ -n "$clib_hf" ]; then
  link arm-none-eabi-ld "$out/all-hf-clib.elf" "${adapter[*]}" "$out/ancs_nimble-hf.o" $(capi capi-hf) $clib_hf -Map="$out/all-hf-clib.map" 2>> "$out/link-hf.log"
  with_clib+=(all-hf-clib)
fi
if [ -n "$clib_rv" ] && [ ${#rv[@]} -gt 0 ]; then
  link "$lld" "$out/all-rv32imc-clib.elf" "${adapter[*]}" "${rv[0]}" $(capi capi-rv32imc) $clib_rv -Map="$out/all-rv32imc-clib.map"
  with_clib+=(all-rv32imc-clib)
  # As ESP-IDF links a component: GCC's driver and GNU ld, the adapter's
  # object and libancs.a as an archive, the C library and libgcc after them.
  # What stays undefined must be NimBLE's (the IDF's bt component) or
  # __atomic_load_4 (the IDF's newlib has it for RV32IMC chips). Then the
  # same with the media part and libancs_media.a, as the component ships them.
  gnu_link() {  # output roots objects-and-archives...
    local output=$1 roots=$2; shift 2
    local keep=() unexpected
    for symbol in $roots; do keep+=(-Wl,--undefined="$symbol"); done
    # picolibc's linker script gives 64 KiB of flash; an ESP32-C3 has 4 MiB.
    riscv64-unknown-elf-gcc --specs=picolibc.specs -march=rv32imc -mabi=ilp32 -nostartfiles -Wl,--gc-sections \
      -Wl,--defsym=__flash_size=0x400000 -Wl,--entry=0 "${keep[@]}" -Wl,--warn-unresolved-symbols -o "$output" "$@" \
      2> "$output.log" || { grep -v 'undefined reference\|in function' "$output.log" >&2; exit 1; }
    unexpected=$(grep -o "undefined reference to \`[^']*'" "$output.log" | sed "s/.*\`//; s/'$//" | sort -u |
      grep -Ev '^(ble_|os_|nimble_port_)' | grep -vx '__atomic_load_4' || true)
    if [ -n "$unexpected" ]; then
      echo "error: linked by GNU ld for the ESP32-C3, $(basename "$output") leaves undefined: $unexpected" >&2; exit 1
    fi
  }
  gnu_link "$out/all-rv32imc-gnu.elf" "${adapter[*]}" "${rv[0]}" "$out/capi-rv32imc/libancs.a"
  echo "rv32imc: adapter + libancs.a linked by GNU ld (riscv64-unknown-elf-gcc), nothing undefined but NimBLE's and __atomic_load_4" > "$out/gnu-ld.txt"
  gnu_link "$out/all-media-rv32imc-gnu.elf" "${adapter[*]} ${media_adapter[*]}" "${rv[@]}" \
    "$out/capi-rv32imc/libancs_media.a" "$out/capi-rv32imc/libancs.a"
  echo "rv32imc: adapter + media part + libancs_media.a + libancs.a linked by GNU ld, the same" >> "$out/gnu-ld.txt"
fi
# What of each archive a link took: code and read-only data, by archive.
taken() { # map
  python3 - "$1" <<'PY'
import collections, re, sys
sums = collections.Counter()
previous = ""
for line in open(sys.argv[1]):
    fields = line.split()
    match = re.search(r'/(lib\w+\.a)\(', line)
    if match:
        if '):(' in line:  # lld: VMA LMA Size Align Out In, the input "archive(member):(section)"
            if re.search(r'\):\((\.text|\.rodata)', line):
                sums[match.group(1)] += int(fields[2], 16)
        elif len(fields) in (3, 4):  # GNU ld: [section] address size archive(member), a long section name on the line before
            section = fields[0] if len(fields) == 4 else previous.strip()
            if section.startswith(('.text', '.rodata')):
                sums[match.group(1)] += int(fields[-2], 16)
    previous = line
print(", ".join(f"{name} {count}" for name, count in sorted(sums.items())))
PY
}

row() { "$size_bin" "$2" | awk -v n="$1" 'NR==2 { printf "%-48s %8s %8s %8s\n", n, $1, $2, $3 }'; }
printf '%-48s %8s %8s %8s\n' "Cortex-M4 (armv7em, soft-float, -Os)" text data bss
row "core + C API (ancs.h)" "$out/capi.elf"
row "NimBLE adapter (ancs_nimble.c)" "$out/adapter.elf"
row "adapter + C API + core" "$out/all.elf"
row "NimBLE adapter, ANCS_NIMBLE_LOG=0" "$out/adapter-nolog.elf"
row "adapter + C API + core, ANCS_NIMBLE_LOG=0" "$out/all-nolog.elf"
if [ -f "$out/gnu-ld.txt" ]; then cat "$out/gnu-ld.txt"; fi
echo "Cortex-M4F (armv7em, hard-float, fpv4-sp-d16)"
row "hard-float: core + C API" "$out/capi-hf.elf"
row "hard-float: adapter + C API + core" "$out/all-hf.elf"
echo "ESP32-C3 (rv32imc, ilp32)"
row "rv32imc: core + C API" "$out/capi-rv32imc.elf"
if [ ${#rv[@]} -gt 0 ]; then row "rv32imc: adapter + C API + core" "$out/all-rv32imc.elf"
else echo "rv32imc: adapter not built (no riscv64-unknown-elf-gcc with picolibc)"; fi
row "Cortex-M4: parser C API (ancs_parser.h)" "$out/parser.elf"
row "Cortex-M4: media C API (ams.h: AMS and CTS)" "$out/media.elf"
row "Cortex-M4: media C API, CTS alone" "$out/cts.elf"
row "Cortex-M4: ancs.h and ams.h in one firmware" "$out/capi-media.elf"
row "Cortex-M4: NimBLE media part (ancs_nimble_media.c)" "$out/media-adapter.elf"
row "Cortex-M4: adapter + media part + both libraries" "$out/all-media.elf"
if [ ${#with_clib[@]} -gt 0 ]; then
  echo "With the C library functions they pull in (picolibc 1.8, libgcc), Cortex-M4 unless named:"
  for name in "${with_clib[@]}"; do
    case $name in
      all-clib) label="incl. libc: adapter + C API + core" ;;
      all-nolog-clib) label="incl. libc: the same, ANCS_NIMBLE_LOG=0" ;;
      capi-clib) label="incl. libc: core + C API" ;;
      all-hf-clib) label="incl. libc, hard-float: adapter + C API + core" ;;
      all-rv32imc-clib) label="incl. libc, rv32imc: adapter + C API + core" ;;
    esac
    row "$label" "$out/$name.elf"
    echo "    of which $(taken "$out/$name.map")"
  done
else
  echo "C library not counted: no picolibc for arm-none-eabi (Debian: picolibc-arm-none-eabi)"
fi
