#!/usr/bin/env bash
# CI step for accessory firmware: the C API and the consumer inside NimBLE.
#
#   1. the C API's tests (integrations/c/test);
#   2. the adapter's unit tests on a fake NimBLE host (integrations/nimble/test/run.sh:
#      NimBLE's headers, stub functions, the order of callbacks the test's own);
#      NimBLE (pinned in third_party/, checked against its SHA-256 and
#      extracted under .build/nimble)
#      built with its Linux port and the linux_tcp HCI transport, with the
#      adapter (integrations/nimble) and the sample accessory, linked with the
#      core built by Embedded Swift (integrations/c/build.sh);
#   3. the sample against `ancs provide --central` (the simulated iPhone) on
#      two Bumble virtual controllers on one virtual link, in twelve runs:
#        mtu23       PreExisting, Added, Modified, Removed, app names, a
#                    positive and a negative action, 0xA2 for an unknown UID,
#                    at MTU 23 (no exchange)
#        mtu517      the same attributes at the MTU the phone asks (517; NimBLE agrees 256)
#        mtu517max   the same, NimBLE preferring 517 too (--mtu), and a 500-byte Data Source notification
#        bonded      a second connection re-encrypts with the bond, no pairing
#        allow       the phone refuses the subscriptions until its user allows notifications:
#                    waiting for permission, the engine subscribes again at its retry interval
#        republish   Service Changed: ANCS removed and added again
#        hundred     100 notifications waiting at connection, all shown with their app's name
#                    (the library in storage of the sample's: ancs_heap_use)
#        media       AMS and CTS beside ANCS (the sample's media part, ancs_nimble_media.h)
#                    against `provide --media` at MTU 23: a title longer than one
#                    notification read whole, the phone's play step, next and pause
#                    typed on the sample's input and performed by the phone's
#                    player, the phone's time and zone
#      and the faults of real iPhones (docs/REAL-IPHONE.md "When notifications stop"), each
#      played by a scenario step of integrations/nimble/test/<run>.yaml; the
#      sample probes every 3 s (--probe-interval, --retry-interval) and must
#      recover by itself and show the notification posted after the fault:
#        silent      the subscriptions forgotten in silence: the probe answered
#                    0xFD, subscribed again
#        quiet       Notification Source quiet while the Control Point answers:
#                    the probe finds the notification never announced, subscribed again
#        nslost      Notification Source lost alone, the next notification cleared
#                    on the phone: the refresh after the probe finds a later one
#        dslost      Data Source lost alone while notifications keep coming: a
#                    fetch unanswered twice, subscribed again
#        sharing     sharing off at the start (--share-after): "not shared"
#                    reported, nothing shown; on again: everything shown
#        forgetbond  the phone forgets the bond and the link: the adapter drops
#                    its stale bond, pairs again
#        removeancs  ANCS removed and added back without Service Changed: the
#                    probe answered 0xFD, subscribed again
#        unpublished Service Changed removes ANCS, it comes back unannounced,
#                    the link drops: the next link starts a session
#   4. the adapter and the core built against NimBLE's headers for Cortex-M4
#      (soft-float and hard-float ABI) and the ESP32-C3 (rv32imc), and their
#      size (scripts/firmware-size.sh); both Cortex-M4 totals within the budget,
#      and ams.h's library (AMS and CTS) within its own.
#
# Every process has a timeout. Prints "nimble: N passed, N failed".
# Logs: .build/ci-nimble/<run>/. NIMBLE_RUNS="mtu23 hundred" runs only those.
#
# The runs spend their time waiting on the link, not computing: with all of
# them asked for, they go in two groups side by side (NIMBLE_JOBS=1: one
# after another), each group a child of this script on ports of its own
# (NIMBLE_PORT_BASE), while this one builds for the microcontrollers (4.);
# each group's lines are printed when it ends, and its counts added.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/.build/ci-nimble
nimble_tar=${NIMBLE_TAR:-$root/third_party/mynewt-nimble-1e8ed6027.tar.gz}
# The pinned archive's SHA-256 (third_party/README.md); NIMBLE_TAR must match it too.
nimble_sha256=db3afc3667637485d1f553ee288dadf9c3eece53d42b8bad7cc3518f3a8abe1c
nimble=$root/.build/nimble/src
[ -n "${NIMBLE_CHILD:-}" ] || echo "== Firmware: the C API and the NimBLE adapter"

# ---- what a fresh machine lacks
missing=()
dpkg -s libmbedtls-dev >/dev/null 2>&1 || missing+=(libmbedtls-dev)
command -v clang >/dev/null 2>&1 || missing+=(clang)
command -v llvm-size >/dev/null 2>&1 || ls /usr/bin/llvm-size-* >/dev/null 2>&1 || missing+=(llvm)
command -v ld.lld >/dev/null 2>&1 || missing+=(lld)
command -v arm-none-eabi-gcc >/dev/null 2>&1 || missing+=(gcc-arm-none-eabi)
[ -f /usr/lib/arm-none-eabi/include/stdio.h ] || missing+=(libnewlib-dev)
if [ -z "${NIMBLE_RUNS:-}" ] || [[ " $NIMBLE_RUNS " == *" size "* ]]; then   # the ESP32-C3's adapter (scripts/firmware-size.sh)
  command -v riscv64-unknown-elf-gcc >/dev/null 2>&1 || missing+=(gcc-riscv64-unknown-elf)
  [ -f /usr/lib/picolibc/riscv64-unknown-elf/picolibc.specs ] || missing+=(picolibc-riscv64-unknown-elf)
  # The C library functions counted in the Cortex-M4 sizes.
  [ -f /usr/lib/picolibc/arm-none-eabi/picolibc.specs ] || missing+=(picolibc-arm-none-eabi)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -q
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
fi
source scripts/bumble-env.sh
python=$ANCS_BUMBLE_PYTHON

passed=0; failed=0
want() { [ -z "${NIMBLE_RUNS:-}" ] || [[ " $NIMBLE_RUNS " == *" $1 "* ]]; }
check() {  # name, then a command that succeeds when the check holds
  local name=$1; shift
  if "$@" >/dev/null 2>&1; then passed=$((passed + 1)); echo "  ok   $name"
  else failed=$((failed + 1)); echo "  FAIL $name"; fi
}

if [ -z "${NIMBLE_CHILD:-}" ]; then
# ---- 1. the C API
echo "== C API tests"
if timeout 600 integrations/c/test/run.sh > "$root/.build/capi-test.log" 2>&1; then
  passed=$((passed + 1)); echo "  ok   C API: $(grep -E '^(capi|parser|media): ' "$root/.build/capi-test.log" | paste -sd ';' -)"
else
  failed=$((failed + 1)); echo "  FAIL C API:"; cat "$root/.build/capi-test.log"
fi

# ---- 2. NimBLE, the adapter, the sample
echo "== NimBLE with the adapter and the sample accessory"
# Extracted once; the marker holds the SHA-256 of what was extracted, so an older or
# unfinished extraction is redone.
if [ "$(cat "$nimble/.extracted" 2>/dev/null)" != "$nimble_sha256" ]; then
  [ -f "$nimble_tar" ] || { echo "nimble: no NimBLE archive at $nimble_tar" >&2; exit 1; }
  actual_sha256=$(sha256sum "$nimble_tar" | cut -d ' ' -f 1)
  if [ "$actual_sha256" != "$nimble_sha256" ]; then
    echo "nimble: $nimble_tar has SHA-256 $actual_sha256, not the pinned $nimble_sha256 (third_party/README.md): not extracted" >&2
    exit 1
  fi
  rm -rf "$nimble"; mkdir -p "$nimble"
  timeout 300 tar -xzf "$nimble_tar" -C "$nimble" --strip-components=1 ||
    { echo "nimble: extracting $nimble_tar failed" >&2; exit 1; }
  echo "$nimble_sha256" > "$nimble/.extracted"
fi
capi_log=$(timeout 600 integrations/c/build.sh x86_64-unknown-linux-gnu "$root/.build/capi/x86_64-unknown-linux-gnu") || { echo "$capi_log"; exit 1; }
tables=$(sed -n 's/^UNICODE_TABLES=//p' <<< "$capi_log")

echo "== adapter unit tests (fake NimBLE host)"
if timeout 600 integrations/nimble/test/run.sh > "$root/.build/nimble/adapter-test.log" 2>&1; then
  passed=$((passed + 1)); echo "  ok   $(tail -1 "$root/.build/nimble/adapter-test.log")"
else
  failed=$((failed + 1)); echo "  FAIL adapter unit tests:"; cat "$root/.build/nimble/adapter-test.log"
fi

if ! timeout 900 make -s -j2 -f integrations/nimble/linux/Makefile NIMBLE_ROOT="$nimble" BUILD="$root/.build/nimble/build" \
    ANCS_LIB="$root/.build/capi/x86_64-unknown-linux-gnu/libancs.a" UNICODE_TABLES="$tables" > "$root/.build/nimble/make.log" 2>&1; then
  grep -E 'error|Error' "$root/.build/nimble/make.log" | head -20
  echo "nimble: build failed"; exit 1
fi
timeout 1800 swift build --product ancs > "$root/.build/nimble/swift-build.log" 2>&1 || { tail -20 "$root/.build/nimble/swift-build.log"; exit 1; }
ANCS_BIN=$(swift build --show-bin-path)/ancs
fi   # a group's child starts here, with what its parent built
sample=$root/.build/nimble/build/ancs-sample
ancs=$ANCS_BIN
host=$root/Sources/ANCSBumble/Host/ancs_bumble_host.py

# ---- 3. interop runs
[ -n "${NIMBLE_CHILD:-}" ] || rm -rf "$out"
mkdir -p "$out"
port=${NIMBLE_PORT_BASE:-9600}
# Every run, in two groups of about the same length.
groups=("mtu23 mtu517 bonded republish silent nslost sharing removeancs"
        "mtu517max allow hundred quiet dslost forgetbond unpublished media")
# A run left out of both groups would never run in CI.
every_run=$(sed -n 's/^if want \([a-z0-9]*\); then$/\1/p' "$0" | sort | tr '\n' ' ')
grouped=$(tr ' ' '\n' <<< "${groups[*]}" | sort | tr '\n' ' ')
[ "$every_run" = "$grouped" ] || { echo "nimble: the groups ($grouped) are not every run ($every_run)" >&2; exit 1; }
children=()
if [ -z "${NIMBLE_RUNS:-}" ] && [ "${NIMBLE_JOBS:-2}" -gt 1 ]; then
  for index in "${!groups[@]}"; do
    NIMBLE_CHILD=1 NIMBLE_RUNS="${groups[$index]}" NIMBLE_PORT_BASE=$((9600 + 100 * index)) ANCS_BIN=$ancs \
      bash "$0" > "$out/group$index.log" 2>&1 &
    children+=($!)
  done
  NIMBLE_RUNS=size   # this process builds for the microcontrollers meanwhile
fi
pids=()
cleanup() { for p in "${pids[@]}" "${children[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; exec 3>&- 4>&- 2>/dev/null; }
trap cleanup EXIT

# start <run> <sample options> -- <provide options>: the link (its stdin a FIFO
# on fd 4, held open until the run finishes: the link ends at its end of file),
# the sample (its stdin a FIFO on fd 3), and the provider, each with a timeout.
# Nothing else is started, so nothing outlives the step.
start() {
  run=$1; shift
  dir=$out/$run; mkdir -p "$dir"
  local sample_args=() provide_args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sample_args+=("$1"); shift; done
  shift; provide_args=("$@")
  port=$((port + 2))
  mkfifo "$dir/stdin" "$dir/link-stdin"
  timeout 120 "$python" -u -B "$host" link --hci "tcp-server:127.0.0.1:$port" --hci "tcp-server:127.0.0.1:$((port + 1))" \
    < "$dir/link-stdin" > "$dir/link.log" 2>&1 &
  pids+=($!)
  exec 4> "$dir/link-stdin"
  for _ in $(seq 100); do grep -q '^ready' "$dir/link.log" && break; sleep 0.1; done
  timeout 100 "$sample" --timeout 95 "${sample_args[@]}" $((port + 1)) < "$dir/stdin" > "$dir/sample.log" 2>&1 4>&- &
  sample_pid=$!; pids+=($sample_pid)
  exec 3> "$dir/stdin"
  ANCS_BUMBLE_PYTHON=$python timeout 100 "$ancs" provide --stack "bumble:tcp-client:127.0.0.1:$port" --central --json \
    --snoop "$dir/phone.btsnoop" "${provide_args[@]}" > "$dir/phone.jsonl" 2> "$dir/phone.err" 4>&- &
  provide_pid=$!; pids+=($provide_pid)
}
send() { echo "$1" >&3; }
# waits until the sample's log has a line matching the extended regex
wait_for() {  # regex seconds
  local deadline=$(( $(date +%s) + $2 ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    grep -Eq "$1" "$dir/sample.log" && return 0
    kill -0 "$sample_pid" 2>/dev/null || break
    sleep 0.2
  done
  grep -Eq "$1" "$dir/sample.log"
}
finish() {  # quit the sample, let the provider end, stop the link
  send quit
  exec 3>&-
  for _ in $(seq 50); do kill -0 "$sample_pid" 2>/dev/null || break; sleep 0.2; done
  for _ in $(seq 50); do kill -0 "$provide_pid" 2>/dev/null || break; sleep 0.2; done
  kill "$sample_pid" "$provide_pid" 2>/dev/null
  exec 4>&-
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null; pids=()
  # the sample's own lines, without NimBLE's log
  grep -E '^(adapter|session|added|modified|removed|ready|updated|done|display|encryption|pairing|mtu|connected|disconnected|request|error|protocol|data-source|health|media|now-playing|time|zone)' \
    "$dir/sample.log" > "$dir/sample.lines"
}
uid_of() {  # the start of a title -> the uid of its ready line
  sed -n "s/^ready uid=\([0-9]*\) .*title=\"$1.*/\1/p" "$dir/sample.log" | head -1
}
has() { grep -Eq "$1" "$dir/sample.lines"; }
# has the first and not the second (a run that showed nothing fails it too)
has_not() { grep -Eq "$1" "$dir/sample.lines" && ! grep -Eq "$2" "$dir/sample.lines"; }
# a line matching the first, and a later one matching the second
has_then() { awk -v first="$1" -v then="$2" 'seen && $0 ~ then { found = 1 } $0 ~ first { seen = 1 } END { exit !found }' "$dir/sample.lines"; }
# the first line matching the first comes before any line matching the second
has_before() { awk -v first="$1" -v other="$2" '$0 ~ other && !seen { early = 1; exit } $0 ~ first { seen = 1 } END { exit early || !seen }' "$dir/sample.lines"; }
# ATT requests with this opcode in a capture (first fragments of ACL on the ATT channel)
att_requests() {  # btsnoop opcode
  python3 - "$1" "$2" <<'PY'
import struct, sys
data = open(sys.argv[1], 'rb').read()
opcode, offset, count = int(sys.argv[2], 0), 16, 0
while offset + 24 <= len(data):
    included = struct.unpack('>I', data[offset + 4:offset + 8])[0]
    record = data[offset + 24:offset + 24 + included]
    offset += 24 + included
    # H4 ACL, a first fragment (packet boundary 0b10), L2CAP channel 4 (ATT)
    if len(record) >= 10 and record[0] == 0x02 and (record[2] >> 4) & 0x3 == 0x2 \
            and struct.unpack('<H', record[7:9])[0] == 4 and record[9] == opcode:
        count += 1
print(count)
PY
}
count() { grep -Ec "$1" "$dir/sample.lines"; }
# The accessory never sent an ATT request while one of its own waited for the
# phone's response (ATT allows one at a time on a bearer): from the phone's
# capture, requests received and responses sent, per connection.
att_one_at_a_time() {  # btsnoop
  python3 - "$1" <<'PY'
import struct, sys
data = open(sys.argv[1], 'rb').read()
requests = {0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20}
responses = {0x01, 0x03, 0x05, 0x07, 0x09, 0x0B, 0x0D, 0x0F, 0x11, 0x13, 0x17, 0x19, 0x21}
offset, waiting, seen, overlaps = 16, {}, 0, 0
while offset + 24 <= len(data):
    included, flags = struct.unpack('>II', data[offset + 4:offset + 12])
    record = data[offset + 24:offset + 24 + included]
    offset += 24 + included
    # H4 ACL, a first fragment (packet boundary 0b00 sent, 0b10 received; not 0b01, a continuation), ATT's channel
    if len(record) < 10 or record[0] != 0x02 or (record[2] >> 4) & 0x3 == 0x1 or struct.unpack('<H', record[7:9])[0] != 4:
        continue
    handle, opcode, received = struct.unpack('<H', record[1:3])[0] & 0x0FFF, record[9], flags & 1
    if received and opcode in requests:
        seen += 1
        if waiting.get(handle):
            overlaps += 1
        waiting[handle] = True
    elif not received and opcode in responses:
        waiting[handle] = False
print(f"{seen} requests, {overlaps} sent while another waited")
sys.exit(0 if seen and not overlaps else 1)
PY
}

# The interop scenario, at one MTU; actions on the call and on Alice, and a fetch of a UID the phone does not have.
interop() {  # run mtu [the sample's options]
  local run=$1 mtu=$2; shift 2
  echo "== $run: scenario interop.yaml, --mtu $mtu $*"
  start "$run" "$@" -- --mtu "$mtu" --scenario integrations/nimble/test/interop.yaml --sessions 1 --duration 60
  wait_for '^ready uid=[0-9]+ .*title="Mum"' 30
  wait_for '^ready uid=[0-9]+ .*title="Alice' 10
  local call alice
  call=$(uid_of 'Mum"')
  alice=$(uid_of Alice)
  wait_for '^updated uid=[0-9]+ .*message="Parking now"' 10
  send "+ ${call:-0}"; wait_for '^done request=[0-9]+ status=' 10
  send "- ${alice:-0}"; sleep 1
  send "a 4242"; wait_for 'status=162' 10
  wait_for '^removed uid=[0-9]+ .*category=7' 10
  local voicemail=
  # 492 bytes of the voicemail's message: a response of 500 bytes, one Data Source notification
  # (more than MTU 256 carries). Not the 514 bytes MTU 517 allows: the Bumble controller hands the
  # host a whole L2CAP PDU in one ACL packet, and NimBLE's socket transport reads into 512 bytes
  # (ble_hci_socket.c rx_data), so an ACL packet over 512 stalls it; test_adapter.c tests 514.
  if [ "$run" = mtu517max ]; then
    voicemail=$(uid_of Voicemail)
    send "m ${voicemail:-0} 492"; wait_for "^done request=[0-9]+ status=0 .*uid=${voicemail:-x} message=" 10
  fi
  finish
  if [ -n "$voicemail" ]; then
    check "$run: a 500-byte Data Source notification whole (492 bytes of message)" test "$(sed -n "s/^done request=[0-9]* status=0 .*uid=$voicemail message=\"\([^\"]*\)\".*/\1/p" "$dir/sample.lines" | head -1 | wc -c)" -eq 493
  fi
  check "$run: PreExisting notifications shown with their app's name" has '^ready uid=[0-9]+ .* pre-existing name="Calendar" .*title="Team stand-up"'
  check "$run: a long message reassembled whole (256 bytes asked)" test "$(sed -n 's/^ready .*title="Voicemail" message="\([^"]*\)".*/\1/p' "$dir/sample.lines" | head -1 | wc -c)" -eq 257
  check "$run: Added and shown with app name and multi-byte title" has '^ready uid=[0-9]+ .*name="Messages" .*title="Alice — Café 🚲"'
  check "$run: Modified, fetched again" has '^updated uid=[0-9]+ .*message="Parking now"'
  check "$run: Removed" has '^removed uid=[0-9]+ category=7'
  check "$run: positive action performed" grep -q "\"uid\":${call:-x},\"action\":\"positive\"" "$dir/phone.jsonl"
  check "$run: negative action performed" grep -q "\"uid\":${alice:-x},\"action\":\"negative\"" "$dir/phone.jsonl"
  check "$run: both actions ended OK" test "$(grep -Ec '^done request=[0-9]+ status=0 ' "$dir/sample.lines")" -ge 2
  check "$run: an unknown UID answered 0xA2" has '^done request=[0-9]+ status=162 '
  check "$run: no display failed, no protocol error (and notifications shown)" has_not '^ready uid=' '^(display|protocol)'
}

if want mtu23; then
  interop mtu23 23
  check "mtu23: the MTU stayed 23 (with a session)" has_not '^session-started' '^mtu'
  check "mtu23: a command longer than MTU - 3 went as a long write (Prepare and Execute Write in the capture)" \
    test "$(att_requests "$out/mtu23/phone.btsnoop" 0x16)" -ge 2 -a "$(att_requests "$out/mtu23/phone.btsnoop" 0x18)" -ge 1
  check "mtu23: an answered app name (the long Get App Attributes command)" has '^ready uid=[0-9]+ .*name="Calendar"'
fi
if want mtu517; then
  interop mtu517 517
  check "mtu517: the phone asked 517, NimBLE agreed 256" grep -q '^mtu 256' "$out/mtu517/sample.lines"
fi
if want mtu517max; then
  interop mtu517max 517 --mtu 517
  check "mtu517max: both asked 517, agreed 517" grep -q '^mtu 517' "$out/mtu517max/sample.lines"
fi

if want bonded; then
echo "== bonded: two connections, the second re-encrypts with the bond"
start bonded -- --keys "$out/phone-keys.json" --sessions 2 --duration 60
wait_for '^ready uid=[0-9]+ .*title="Pick up bike"' 30
send disconnect
wait_for '^disconnected' 10
sleep 1
for _ in $(seq 100); do [ "$(grep -c '^session-started' "$dir/sample.log")" -ge 2 ] && break; sleep 0.2; done
wait_for '^ready uid=[0-9]+ .*title="Pick up bike"' 20
sleep 1
finish
check "bonded: two sessions" test "$(count '^session-started')" -eq 2
check "bonded: paired once (one pairing code)" test "$(count '^pairing code')" -eq 1
check "bonded: both connections encrypted and bonded" test "$(count '^encryption status=0 encrypted=1 authenticated=1 bonded=1')" -eq 2
check "bonded: PreExisting shown again in the second session" test "$(count '^ready uid=[0-9]+ .*title="Pick up bike"')" -eq 2
fi

if want allow; then
echo "== allow: the phone refuses the subscriptions for 5 s"
# The engine's default retry interval (15 s): subscribed again once, after the 5 s.
start allow -- --allow-notifications-after 5 --sessions 1 --duration 60
wait_for '^ready uid=[0-9]+ .*title="Pick up bike"' 40
finish
check "allow: the subscription refused with 0x08: waiting for permission" has '^health state=waiting-for-permission refused=(data-source|notification-source) status=8 '
check "allow: subscribed again, healthy" has_then '^health state=waiting-for-permission' '^health state=healthy'
check "allow: subscribed again and shown" has '^ready uid=[0-9]+ .*title="Pick up bike"'
fi

if want republish; then
echo "== republish: Service Changed, ANCS removed and added again"
start republish -- --republish 3,2 --sessions 2 --duration 60
wait_for '^ready uid=[0-9]+ .*title="Team stand-up"' 30
for _ in $(seq 150); do [ "$(grep -c '^session-started' "$dir/sample.log")" -ge 2 ] && break; sleep 0.2; done
wait_for '^ready uid=[0-9]+ .*title="Team stand-up".*' 5
sleep 2
finish
check "republish: Service Changed indicated" has '^adapter: Service Changed'
check "republish: the session ended with ANCS (service unpublished)" has '^session-ended reason=2'
check "republish: a new session after ANCS came back" test "$(count '^session-started')" -ge 2
check "republish: notifications shown again" test "$(count '^ready uid=[0-9]+ .*title="Team stand-up"')" -ge 2
fi

if want hundred; then
echo "== hundred: 100 notifications waiting at connection"
# (In storage of the sample's own, ancs_heap_use: the library's tables reserved up front.)
start hundred --storage 65536 -- --scenario integrations/nimble/test/hundred.yaml --sessions 1 --duration 80
for _ in $(seq 300); do [ "$(grep -c '^ready uid=' "$dir/sample.log")" -ge 100 ] && break; kill -0 "$sample_pid" 2>/dev/null || break; sleep 0.2; done
finish
check "hundred: all 100 shown" test "$(sed -n 's/^ready uid=\([0-9]*\) .*/\1/p' "$dir/sample.lines" | sort -u | wc -l)" -eq 100
check "hundred: every one with its app's name" test "$(grep -Ec '^ready uid=[0-9]+ .* name="[A-Za-z]+"' "$dir/sample.lines")" -eq 100
check "hundred: each app's name asked once" test "$(grep -c '"appAttributesSent"' "$dir/phone.jsonl")" -eq 5
check "hundred: one ATT request at a time (the phone's capture)" att_one_at_a_time "$dir/phone.btsnoop"
check "hundred: the library in 64 KiB of storage of the sample's (ancs_heap_use)" \
  grep -Eq '^storage: needed [1-9][0-9]* of 65536 bytes' "$dir/sample.log"
fi

if want media; then
echo "== media: AMS and CTS beside ANCS at MTU 23"
long_title="Ça plane pour moi — Émilie Sørensen live à Zürich, été 2026"
start media -- --mtu 23 --media --scenario integrations/nimble/test/media.yaml --sessions 1 --duration 60
wait_for "^media-updated title=\"$long_title\"" 30
wait_for '^now-playing .* state=playing' 10   # the phone's play step, 2 s into its timeline
wait_for '^zone ' 10
send next
wait_for '^now-playing title="Second Song"' 10
send pause
for _ in $(seq 50); do [ "$(grep -c '^media-done ' "$dir/sample.log")" -ge 2 ] && break; sleep 0.2; done
sleep 1
send now
wait_for '^time-now ' 5
finish
check "media: AMS ready beside the ANCS session" has_then '^session-started' '^media-ready'
check "media: the phone saw the accessory register" grep -q '"event":"mediaRegistered"' "$dir/phone.jsonl"
check "media: the title cut at MTU 23, then read whole" has_then '^media-updated truncated title=' "^media-updated title=\"$long_title\""
check "media: a notification shown beside the music" has '^ready uid=[0-9]+ .*title="Alice"'
check "media: the phone's play step shown (playing)" has "^now-playing title=\"$long_title\" .*state=playing"
check "media: next track typed, performed by the phone's player" grep -q '"event":"mediaCommand".*"command":"nextTrack","performed":true' "$dir/phone.jsonl"
check "media: pause typed, performed" grep -q '"event":"mediaCommand".*"command":"pause","performed":true' "$dir/phone.jsonl"
check "media: both commands ended OK" test "$(count '^media-done request=[0-9]+ status=0 ')" -eq 2
check "media: the next track shown" has '^now-playing title="Second Song" artist="The Harbour Lights"'
check "media: the phone's time" has '^time 2026-11-28T14:5[3-9]:[0-5][0-9] '
check "media: the zone UTC+01:00" has '^zone UTC\+01:00 '
check "media: the time runs on between reads" has '^time-now 2026-11-28T14:5[3-9]:'
check "media: no display failed, no protocol error, no failed set-up" has_not '^media-ready' '^(display|protocol|media-setup-failed|media-invalid|time-failed)'
check "media: ANCS and the media part sent one ATT request at a time (the phone's capture)" att_one_at_a_time "$dir/phone.btsnoop"
fi

# ---- the faults of real iPhones: each run's scenario plays one, and the
# notification posted after it must be shown, the sample recovering by itself.
# The sample probes a quiet session every 3 s (5 min by default) and asks
# again what was refused every 3 s (15 s), so each fault is found within seconds.
liveness=(--probe-interval 3 --retry-interval 3)
fault() {  # run, title of the notification posted after the fault, provide's options
  local run=$1 title=$2; shift 2
  start "$run" "${liveness[@]}" -- --scenario "integrations/nimble/test/$run.yaml" --duration 40 "$@"
  wait_for "^ready uid=[0-9]+ .*title=\"$title\"" 35
  sleep 1
  # The provider connects again after each disconnection and would wait out
  # its --duration: SIGTERM ends it as --duration does.
  kill -TERM "$provide_pid" 2>/dev/null
  finish
}

if want silent; then
echo "== silent: the phone forgets the subscriptions in silence"
fault silent "After the silence"
check "silent: shown before the fault" has '^ready uid=[0-9]+ .*title="Before the fault"'
check "silent: the probe answered 0xFD, subscribed again (subscription lost)" has '^health state=resubscribing reason=subscription-lost'
check "silent: healthy again" has_then '^health state=resubscribing' '^health state=healthy'
check "silent: the notification posted after the fault shown, once" test "$(count '^ready uid=[0-9]+ .*title="After the silence"')" -eq 1
fi

if want quiet; then
echo "== quiet: Notification Source quiet while the Control Point answers"
fault quiet "Never announced"
check "quiet: shown before the fault" has '^ready uid=[0-9]+ .*title="Before the fault"'
check "quiet: the probe found a notification never announced, subscribed again" has '^health state=resubscribing reason=missed-notification'
check "quiet: healthy again" has_then '^health state=resubscribing' '^health state=healthy'
check "quiet: the notification posted after the fault shown, once" test "$(count '^ready uid=[0-9]+ .*title="Never announced"')" -eq 1
fi

if want nslost; then
echo "== nslost: Notification Source lost alone, the next notification cleared on the phone"
fault nslost "Kept after the loss"
check "nslost: shown before the fault" has '^ready uid=[0-9]+ .*title="Before the fault"'
check "nslost: the notification cleared on the phone never shown" test "$(count '^ready uid=[0-9]+ .*title="Cleared on the phone"')" -eq 0
check "nslost: a notification never announced found, subscribed again" has '^health state=resubscribing reason=missed-notification'
check "nslost: healthy again" has_then '^health state=resubscribing' '^health state=healthy'
check "nslost: the notification kept on the phone shown, once" test "$(count '^ready uid=[0-9]+ .*title="Kept after the loss"')" -eq 1
fi

if want dslost; then
echo "== dslost: Data Source lost alone while notifications keep coming"
fault dslost "Second after the loss"
check "dslost: shown before the fault" has '^ready uid=[0-9]+ .*title="Before the fault"'
check "dslost: a fetch unanswered twice, subscribed again (probe unanswered)" has '^health state=resubscribing reason=probe-unanswered'
check "dslost: subscribed again once, not in a loop" test "$(count '^health state=resubscribing')" -eq 1
check "dslost: healthy again" has_then '^health state=resubscribing' '^health state=healthy'
check "dslost: both notifications posted after the fault shown" test "$(count '^ready uid=[0-9]+ .*title="(First|Second) after the loss"')" -ge 2
fi

if want sharing; then
echo "== sharing: sharing off at the start, on after 10 s"
fault sharing "After sharing" --share-after 10
check "sharing: not shared reported (Control Point writes refused 0x03)" has '^health state=not-shared '
check "sharing: nothing shown while not shared" has_before '^health state=not-shared ' '^ready uid='
check "sharing: subscribed again once shared (sharing restored)" has_then '^health state=not-shared ' '^health state=resubscribing reason=sharing-restored'
check "sharing: what the phone held shown once shared" has_then '^health state=resubscribing reason=sharing-restored' '^ready uid=[0-9]+ .*title="Held while not shared"'
check "sharing: the notification posted after shown, once" test "$(count '^ready uid=[0-9]+ .*title="After sharing"')" -eq 1
fi

if want forgetbond; then
echo "== forgetbond: the phone forgets the bond and drops the link"
fault forgetbond "After pairing again"
check "forgetbond: shown before the fault" has '^ready uid=[0-9]+ .*title="Before the fault"'
check "forgetbond: the adapter dropped the stale bond" has '^adapter: bond lost \(the phone pairs again\): dropped ours'
check "forgetbond: bond lost reported, then healthy" has_then '^health state=bond-lost' '^health state=healthy'
check "forgetbond: paired again (two pairing codes), encrypted and bonded" \
  test "$(count '^pairing code')" -eq 2 -a "$(count '^encryption status=0 encrypted=1 authenticated=1 bonded=1')" -eq 2
check "forgetbond: the notification posted after the fault shown" has_then '^health state=bond-lost' '^ready uid=[0-9]+ .*title="After pairing again"'
fi

if want removeancs; then
echo "== removeancs: ANCS removed and added back without Service Changed"
fault removeancs "After the restart"
check "removeancs: shown before the fault" has '^ready uid=[0-9]+ .*title="Before the fault"'
check "removeancs: no Service Changed seen" has_not '^ready uid=' '^adapter: Service Changed'
check "removeancs: the probe answered 0xFD, subscribed again (subscription lost)" has '^health state=resubscribing reason=subscription-lost'
check "removeancs: the notification posted after the fault shown, once" test "$(count '^ready uid=[0-9]+ .*title="After the restart"')" -eq 1
fi

if want unpublished; then
echo "== unpublished: Service Changed removes ANCS, it returns unannounced, the link drops"
start unpublished "${liveness[@]}" -- --scenario integrations/nimble/test/unpublished.yaml --duration 40
wait_for '^adapter: Service Changed' 20
sleep 2   # ANCS is back (no Service Changed): the link is told nothing
send disconnect
wait_for '^ready uid=[0-9]+ .*title="After the reconnection"' 30
sleep 1
kill -TERM "$provide_pid" 2>/dev/null
finish
check "unpublished: shown before the fault" has '^ready uid=[0-9]+ .*title="Before the fault"'
check "unpublished: Service Changed ended the session (service unpublished)" has_then '^adapter: Service Changed' '^session-ended reason=2'
check "unpublished: the next link started a session" has_then '^disconnected' '^session-started'
check "unpublished: the notification posted after the fault shown on the next link" has_then '^disconnected' '^ready uid=[0-9]+ .*title="After the reconnection"'
fi

# ---- 4. Cortex-M4: the adapter against NimBLE's headers, the core
want size && echo "== Cortex-M4 (soft- and hard-float) and ESP32-C3 builds and size"
if ! want size; then :
elif timeout 600 scripts/firmware-size.sh > "$out/size.txt" 2>&1; then
  # firmware-size.sh fails if a build or link fails, if the soft-float adapter
  # links with the hard-float library, or if ANCS_NIMBLE_LOG=0 still formats.
  cat "$out/size.txt"; passed=$((passed + 1)); echo "  ok   Cortex-M4 and ESP32-C3 builds"
  # The firmware's share of flash: adapter + C API + core within its budget of text.
  total=$(awk '/^adapter \+ C API \+ core / { print $(NF - 2) }' "$out/size.txt")
  check "Cortex-M4: adapter + C API + core ${total:-?} bytes of text, within ${FIRMWARE_TEXT_BUDGET:=32768}" \
    test "${total:-999999}" -le "$FIRMWARE_TEXT_BUDGET"
  hard=$(awk '/^hard-float: adapter \+ C API \+ core / { print $(NF - 2) }' "$out/size.txt")
  check "Cortex-M4F hard-float: adapter + C API + core ${hard:-?} bytes of text, within $FIRMWARE_TEXT_BUDGET" \
    test "${hard:-999999}" -le "$FIRMWARE_TEXT_BUDGET"
  check "ESP32-C3: adapter + C API + core linked" grep -Eq '^rv32imc: adapter \+ C API \+ core ' "$out/size.txt"
  # ams.h's library (AMS and CTS), a budget of its own: its first figure, 21 836 bytes, rounded up to KiB.
  media_text=$(awk '/^Cortex-M4: media C API \(ams.h/ { print $(NF - 2) }' "$out/size.txt")
  check "Cortex-M4: ams.h's C API (AMS and CTS) ${media_text:-?} bytes of text, within ${MEDIA_TEXT_BUDGET:=22528}" \
    test "${media_text:-999999}" -le "$MEDIA_TEXT_BUDGET"
  check "Cortex-M4: ancs.h and ams.h link side by side in one firmware" grep -Eq '^Cortex-M4: ancs.h and ams.h in one firmware' "$out/size.txt"
  # The adapter's media part (ancs_nimble_media.c), a budget of its own: its first figure, 4 956 bytes, rounded up to 5 KiB.
  media_part=$(awk '/^Cortex-M4: NimBLE media part/ { print $(NF - 2) }' "$out/size.txt")
  check "Cortex-M4: the adapter's media part ${media_part:-?} bytes of text, within ${MEDIA_PART_TEXT_BUDGET:=5120}" \
    test "${media_part:-999999}" -le "$MEDIA_PART_TEXT_BUDGET"
  check "ESP32-C3: the adapter and libancs.a linked by GNU ld, as ESP-IDF links" grep -q '^rv32imc: adapter + libancs.a linked by GNU ld' "$out/size.txt"
  check "ESP32-C3: the media part and libancs_media.a linked by GNU ld too, as the component ships them" \
    grep -q '^rv32imc: adapter + media part + libancs_media.a + libancs.a linked by GNU ld' "$out/size.txt"
  check "the ESP-IDF component filled and self-contained" integrations/esp-idf/fill.sh --check "$out/esp-idf"
  check "the C library's functions counted (picolibc, libgcc)" grep -Eq '^ +of which libc\.a [0-9]+, libgcc\.a [0-9]+' "$out/size.txt"
  # BENCHMARKS.md section 8 shows these figures: regenerated with the change that moves them.
  check "BENCHMARKS.md's firmware table is what scripts/firmware-size.sh prints (scripts/update-tables.sh)" \
    scripts/update-tables.sh --check scripts/firmware-size.sh "$out/size.txt"
else
  cat "$out/size.txt"; failed=$((failed + 1)); echo "  FAIL Cortex-M4 and ESP32-C3 builds"
fi

for index in "${!children[@]}"; do
  wait "${children[$index]}"
  log=$out/group$index.log
  echo "== group $((index + 1)): ${groups[$index]}"
  grep -v '^nimble: [0-9]* passed' "$log"
  counts=$(sed -n 's/^nimble: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$log")
  if [ -z "$counts" ]; then failed=$((failed + 1)); echo "  FAIL group $((index + 1)) ended without its counts"; continue; fi
  passed=$((passed + ${counts% *})); failed=$((failed + ${counts#* }))
done

echo "nimble: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
