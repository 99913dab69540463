#!/usr/bin/env bash
# Builds and runs the adapter's unit tests (test_adapter.c): ../ancs_nimble.c
# compiled against NimBLE's headers (NIMBLE_ROOT, default .build/nimble/src,
# extracted by scripts/ci-nimble.sh; the "dummy" NPL port for the OS types),
# on a fake NimBLE host, linked with the C API for the host
# (integrations/c/build.sh). Prints "adapter: N passed, N failed".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
nimble=${NIMBLE_ROOT:-$root/.build/nimble/src}
capi=$root/.build/capi/x86_64-unknown-linux-gnu
out=$root/.build/nimble-adapter-test
mkdir -p "$out"
[ -f "$nimble/nimble/host/include/host/ble_hs.h" ] || { echo "adapter: no NimBLE tree at $nimble (scripts/ci-nimble.sh extracts it)" >&2; exit 1; }
log=$("$root/integrations/c/build.sh" x86_64-unknown-linux-gnu "$capi")
tables=$(sed -n 's/^UNICODE_TABLES=//p' <<< "$log")
inc=(-I "$nimble/nimble/include" -I "$nimble/nimble/host/include" -I "$nimble/porting/nimble/include"
     -I "$nimble/porting/npl/dummy/include" -I "$nimble/porting/examples/linux/include" -I "$nimble/nimble/transport/include"
     -I "$root/integrations/c/include" -I "$here/..")
gcc -std=gnu11 -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter -DMYNEWT_VAL_BLE_SM_SC=1 "${inc[@]}" \
  -o "$out/test_adapter" "$here/test_adapter.c" "${ADAPTER_SOURCE:-$here/../ancs_nimble.c}" "$capi/libancs.a" $tables -lm
timeout 120 "$out/test_adapter" "$@"
