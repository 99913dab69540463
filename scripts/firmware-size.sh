#!/usr/bin/env bash
# The accessory firmware's ANCS code for Cortex-M4, and its size:
#   core+C API   Sources/ANCS (consumer side) and integrations/c, Embedded Swift
#                (integrations/c/build.sh armv7em-none-none-eabi)
#   adapter      integrations/nimble/ancs_nimble.c against NimBLE's headers
#                (arm-none-eabi-gcc -Os, NimBLE's NPL port "dummy" for the types)
# Each is linked alone with --gc-sections from the functions a firmware calls,
# C library and NimBLE left unresolved (their size is the firmware's), and
# measured with llvm-size. Needs the NimBLE tree (NIMBLE_ROOT, default
# .build/nimble/src, extracted by scripts/ci-nimble.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
nimble=${NIMBLE_ROOT:-$root/.build/nimble/src}
out=$root/.build/firmware-size
mkdir -p "$out"
size_bin=$(command -v llvm-size || ls /usr/bin/llvm-size-* 2>/dev/null | head -n 1)
lld=$(command -v ld.lld)

integrations/c/build.sh armv7em-none-none-eabi "$out/capi" > "$out/capi.log"
inc=(-I "$nimble/nimble/include" -I "$nimble/nimble/host/include" -I "$nimble/porting/nimble/include"
     -I "$nimble/porting/npl/dummy/include" -I "$nimble/porting/examples/linux/include" -I "$nimble/nimble/transport/include"
     -I "$root/integrations/c/include" -I "$root/integrations/nimble")
arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -Os -ffunction-sections -fdata-sections -Wall -Wextra -Werror -Wno-unused-parameter \
  -DMYNEWT_VAL_BLE_SM_SC=1 "${inc[@]}" -c integrations/nimble/ancs_nimble.c -o "$out/ancs_nimble.o"

api=(ancs_consumer_init ancs_consumer_deinit ancs_consumer_config_default ancs_consumer_link_up ancs_consumer_mtu_changed
     ancs_consumer_subscription_result ancs_consumer_notification_source ancs_consumer_data_source ancs_consumer_write_result
     ancs_consumer_tick ancs_consumer_link_down ancs_consumer_service_changed ancs_consumer_stop ancs_consumer_next_deadline
     ancs_consumer_in_session ancs_consumer_fetch_attributes ancs_consumer_fetch_app_attributes ancs_consumer_perform_action
     ancs_consumer_cancel ancs_status_name)
adapter=(ancs_nimble_init ancs_nimble_gap_event ancs_nimble_fetch_attributes ancs_nimble_fetch_app_attributes
         ancs_nimble_perform_action ancs_nimble_consumer)
link() {  # output roots objects...
  local output=$1 roots=$2; shift 2
  local keep=()
  for symbol in $roots; do keep+=(--undefined="$symbol"); done
  "$lld" --gc-sections --unresolved-symbols=ignore-all --entry=0 "${keep[@]}" -o "$output" "$@"
}
link "$out/capi.elf" "${api[*]}" "$out/capi/ancs-swift.o" "$out/capi/ancs_tables.o"
link "$out/adapter.elf" "${adapter[*]}" "$out/ancs_nimble.o"
link "$out/all.elf" "${adapter[*]}" "$out/ancs_nimble.o" "$out/capi/ancs-swift.o" "$out/capi/ancs_tables.o"
printf '%-34s %8s %8s %8s\n' "Cortex-M4 (armv7em, -Os)" text data bss
row() { "$size_bin" "$2" | awk -v n="$1" 'NR==2 { printf "%-34s %8s %8s %8s\n", n, $1, $2, $3 }'; }
row "core + C API (ancs.h)" "$out/capi.elf"
row "NimBLE adapter (ancs_nimble.c)" "$out/adapter.elf"
row "adapter + C API + core" "$out/all.elf"
