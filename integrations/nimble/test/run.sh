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
gcc -std=gnu11 -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter -DMYNEWT_VAL_BLE_SM_SC=1 -include "$here/test_hooks.h" "${inc[@]}" \
  -o "$out/test_adapter" "$here/test_adapter.c" "${ADAPTER_SOURCE:-$here/../ancs_nimble.c}" "$here/../ancs_nimble_media.c" \
  "$capi/libancs_media.a" "$capi/libancs.a" $tables -lm
# Builds without NimBLE's porting layer reference no nimble_port_get_dflt_eventq:
# Mynewt's (MYNEWT; its ble_npl_eventq_dflt_get is an inline function of its
# NPL, declared here instead) and a port with no default queue
# (ANCS_NIMBLE_NO_DEFAULT_EVENTQ). With ANCS_NIMBLE_LOG=0 nothing is formatted.
echo 'struct ble_npl_eventq *ble_npl_eventq_dflt_get(void);' > "$out/mynewt_eventq.h"
gcc -std=gnu11 -Os -Wall -Wextra -Werror -Wno-unused-parameter -DMYNEWT_VAL_BLE_SM_SC=1 -DMYNEWT \
  -include nimble/nimble_npl.h -include "$out/mynewt_eventq.h" "${inc[@]}" -c -o "$out/mynewt.o" "$here/../ancs_nimble.c"
gcc -std=gnu11 -Os -Wall -Wextra -Werror -Wno-unused-parameter -DMYNEWT_VAL_BLE_SM_SC=1 -DANCS_NIMBLE_NO_DEFAULT_EVENTQ \
  -DANCS_NIMBLE_LOG=0 "${inc[@]}" -c -o "$out/no-default-queue.o" "$here/../ancs_nimble.c"
for object in mynewt no-default-queue; do
  if nm -u "$out/$object.o" | grep -w nimble_port_get_dflt_eventq; then
    echo "adapter: the $object build references the porting layer's default queue" >&2; exit 1
  fi
done
gcc -std=gnu11 -Os -Wall -Wextra -Werror -Wno-unused-parameter -DMYNEWT_VAL_BLE_SM_SC=1 -DANCS_NIMBLE_NO_DEFAULT_EVENTQ \
  -DANCS_NIMBLE_LOG=0 "${inc[@]}" -c -o "$out/media-no-log.o" "$here/../ancs_nimble_media.c"
if nm -u "$out/no-default-queue.o" "$out/media-no-log.o" | grep -E 'printf'; then
  echo "adapter: built with ANCS_NIMBLE_LOG=0, it still formats text" >&2; exit 1
fi
# An accessory that never attaches the media part links none of it: the
# adapter reaches it through hooks only, and references nothing of ams.h.
if nm -u "$out/mynewt.o" "$out/no-default-queue.o" | grep -E 'ancs_(ams|cts|nimble_media)_'; then
  echo "adapter: ancs_nimble.c references the media part or ams.h's library" >&2; exit 1
fi
timeout 120 "$out/test_adapter" "$@"
# Again for a port without ble_npl_callout_deinit: the callout kept across deinit and init.
echo "-- the callout kept (no ble_npl_callout_deinit), a NULL configuration the defaults"
gcc -std=gnu11 -g -O1 -Wall -Wextra -Werror -Wno-unused-parameter -DMYNEWT_VAL_BLE_SM_SC=1 -DANCS_TEST_CALLOUT_KEPT \
  -DANCS_NIMBLE_NULL_CONFIG_DEFAULTS=1 \
  -include "$here/test_hooks.h" "${inc[@]}" -o "$out/test_adapter_kept" "$here/test_adapter.c" \
  "${ADAPTER_SOURCE:-$here/../ancs_nimble.c}" "$here/../ancs_nimble_media.c" \
  "$capi/libancs_media.a" "$capi/libancs.a" $tables -lm
timeout 120 "$out/test_adapter_kept" "$@"
