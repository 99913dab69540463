#!/usr/bin/env bash
# CI step for the Bumble stack, on virtual controllers (no radio):
# the Python environment, the ANCSBumble tests, then the
# command-line interop runs whose captures are decoded and compared:
#   1. Bumble's own AncsClient against `ancs provide` at MTU 23 and 185;
#   2. `ancs listen --stack bumble` against `ancs provide --stack bumble`,
#      two processes on one virtual link;
#      provide also serves AMS and CTS (--media), and listen follows them;
#   3. Bumble's own AmsClient against `ancs provide --media` at MTU 23: a
#      title longer than one notification read whole, next track and
#      play/pause performed (and reported by provide), CTS's time and zone;
#   4. `ancs listen --stack bumble` following the music and clock of a phone
#      built on Bumble's own AMS service (bumble_media_phone.py) at MTU 23:
#      a title longer than one notification read whole, next track pressed
#      through its MPRIS player (playerctl, on a session bus of its own) and
#      pause typed on its standard input, both performed, the time with its
#      zone, and its capture decoded.
# Every run has a timeout. Output and captures go to .build/ci-bumble.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== Bumble stack: interop on virtual controllers"

out=.build/ci-bumble
source scripts/bumble-env.sh
# A session bus and playerctl, for listen's MPRIS player.
need=()
command -v dbus-run-session >/dev/null || need+=(dbus)
command -v playerctl >/dev/null || need+=(playerctl)
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=600 update -q
  apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${need[@]}"
fi

echo "== swift test: the Bumble tests (the capture tests ran in swift test)"
swift test --filter 'ANCSBumbleTests'

echo "== interop runs"
swift build --product ancs
ancs=$(swift build --show-bin-path)/ancs
host=Sources/ANCSBumble/Host/ancs_bumble_host.py
rm -rf "$out"; mkdir -p "$out"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

# A virtual link with two controllers on loopback ports; sets $port_a, $port_b. Ports
# below the ephemeral range, drawn at random; a pair in use is drawn again.
start_link() {
  local name=$1 attempt
  for attempt in 1 2 3 4 5; do
    port_a=$((12000 + RANDOM % 20000)); port_b=$((port_a + 1))
    exec {link_fd}< <(sleep 600)
    pids+=($!)  # the sleep holding the link's stdin open: ended with the rest
    "$ANCS_BUMBLE_PYTHON" -B -u "$host" link --hci "tcp-server:127.0.0.1:$port_a" --hci "tcp-server:127.0.0.1:$port_b" \
      <&"$link_fd" >"$out/$name-link.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
      grep -q '^ready' "$out/$name-link.log" && return 0
      grep -q 'address already in use' "$out/$name-link.log" && break
      sleep 0.1
    done
    grep -q 'address already in use' "$out/$name-link.log" || break
  done
  echo "virtual link did not start"; cat "$out/$name-link.log"; return 1
}

# Each failure is told where it happens and again at the end, with the log that
# says why: a CI page that shows only the step's last lines still names it.
failures=0
failed=()
fail() { echo "FAILED: $1"; failures=$((failures + 1)); failed+=("$1|${2:-}"); }
for mtu in 23 185; do
  run="ancsclient-mtu$mtu"
  echo "-- Bumble AncsClient against ancs provide, MTU $mtu"
  start_link "$run"
  keys=()
  [ "$mtu" = 185 ] && keys=(--keys "$out/$run-client-keys.json")
  timeout 90 "$ancs" provide --stack "bumble:tcp-client:127.0.0.1:$port_a" --snoop "$out/$run-np.btsnoop" \
    --keys "$out/$run-np-keys.json" --duration 80 --json >"$out/$run-provide.jsonl" 2>"$out/$run-provide.err" &
  provide=$!; pids+=($provide)
  sleep 1
  if timeout 90 "$ANCS_BUMBLE_PYTHON" -B -u Tests/ANCSBumbleTests/Interop/bumble_ancs_client.py \
       --transport "tcp-client:127.0.0.1:$port_b" --mtu "$mtu" "${keys[@]}" --json "$out/$run-client.json" | tee "$out/$run-client.log"; then
    :
  else
    fail "$run: Bumble's AncsClient" "$out/$run-client.log"
  fi
  kill "$provide" 2>/dev/null || true; wait "$provide" 2>/dev/null || true
  cleanup; pids=()
done

echo "-- Bumble AncsClient's known bugs, reproduced (each step passes when the bug shows)"
run=ancsclient-known-bugs
start_link "$run"
timeout 60 "$ancs" provide --stack "bumble:tcp-client:127.0.0.1:$port_a" --scenario Tests/ANCSBumbleTests/Scenarios/ancsclient-bugs.yaml \
  --sessions 1 --duration 50 --json >"$out/$run-provide.jsonl" 2>"$out/$run-provide.err" &
provide=$!; pids+=($provide)
sleep 1
timeout 60 "$ANCS_BUMBLE_PYTHON" -B -u Tests/ANCSBumbleTests/Interop/bumble_ancs_client.py --transport "tcp-client:127.0.0.1:$port_b" \
  --known-bugs 2>"$out/$run-client.err" | tee "$out/$run-client.log" || fail "$run: Bumble's AncsClient" "$out/$run-client.log"
kill "$provide" 2>/dev/null || true; wait "$provide" 2>/dev/null || true
cleanup; pids=()

echo "-- ancs listen --stack bumble against ancs provide --stack bumble (two processes)"
run=listen-provide
start_link "$run"
timeout 90 "$ancs" provide --stack "bumble:tcp-client:127.0.0.1:$port_a" --snoop "$out/$run-np.btsnoop" \
  --media --sessions 1 --duration 60 --json >"$out/$run-provide.jsonl" 2>"$out/$run-provide.err" &
provide=$!; pids+=($provide)
sleep 1
timeout 90 "$ancs" listen --stack "bumble:tcp-client:127.0.0.1:$port_b" --snoop "$out/$run-nc.btsnoop" \
  --duration 20 --json >"$out/$run-listen.jsonl" 2>"$out/$run-listen.err" || fail "$run: listen exited $?" "$out/$run-listen.err"
wait "$provide" || fail "$run: provide exited $?" "$out/$run-provide.err"
cleanup; pids=()
for title in "Team stand-up" "Pick up bike" "Alice" "Bike Shop" "Mum" "#release" "Rain in 20 minutes"; do
  if grep -q "\"$title\"" "$out/$run-listen.jsonl"; then echo "PASS listen shows “$title”"; else fail "$run: listen lacks “$title”" "$out/$run-listen.jsonl"; fi
done
if grep -q '"event":"sessionStarted"' "$out/$run-provide.jsonl"; then echo "PASS provide saw the session"; else fail "$run: provide saw no session" "$out/$run-provide.err"; fi
# listen --json tells each notification as `ready` (title and app name) once it can be shown.
if python3 - "$out/$run-listen.jsonl" <<'PY'
import json, sys
ready = [json.loads(line) for line in open(sys.argv[1]) if '"event":"ready"' in line]
titles = {a.get("value") for o in ready for a in o.get("attributes", []) if a.get("id") == "title"}
wanted = {"Team stand-up", "Pick up bike", "Alice", "Mum", "#release", "Rain in 20 minutes"}
named = all("appName" in o for o in ready)
print(f"ready objects: {len(ready)}, titles {sorted(titles & wanted)}, all with appName: {named}")
sys.exit(0 if wanted <= titles and named else 1)
PY
then echo "PASS listen --json tells ready with titles and app names"; else fail "$run: listen --json ready objects" "$out/$run-listen.jsonl"; fi
# provide --media: the demo's player and the computer's clock, followed by listen.
if grep -q '"event":"mediaUpdated","attribute":"title","value":"Bohemian Rhapsody"' "$out/$run-listen.jsonl" \
   && grep -q '"event":"timeZone","utcOffsetMinutes":0' "$out/$run-listen.jsonl" \
   && grep -q '"event":"mediaRegistered"' "$out/$run-provide.jsonl"; then
  echo "PASS listen follows provide's player and clock (AMS, CTS)"
else fail "$run: listen did not follow provide's player and clock" "$out/$run-listen.jsonl"; fi

echo "-- Bumble's AmsClient against ancs provide --media, MTU 23"
run=amsclient
start_link "$run"
timeout 90 "$ancs" provide --stack "bumble:tcp-client:127.0.0.1:$port_a" --media --scenario Tests/ANCSBumbleTests/Scenarios/media.yaml \
  --sessions 1 --duration 60 --json >"$out/$run-provide.jsonl" 2>"$out/$run-provide.err" &
provide=$!; pids+=($provide)
sleep 1
timeout 90 "$ANCS_BUMBLE_PYTHON" -B -u Tests/ANCSBumbleTests/Interop/bumble_ams_client.py --transport "tcp-client:127.0.0.1:$port_b" --mtu 23 \
  --expect-title "Ça plane pour moi — Émilie Sørensen live à Zürich, été 2026" --expect-time 2026-11-28T14:53 \
  --expect-utc-offset-minutes 60 --json "$out/$run-client.json" 2>"$out/$run-client.err" | tee "$out/$run-client.log" \
  || fail "$run: Bumble's AmsClient" "$out/$run-client.log"
# The scenario's play step comes 2 s after the timeline's start (the client's registration).
for _ in $(seq 50); do grep -q '"event":"player"' "$out/$run-provide.jsonl" && break; sleep 0.2; done
kill "$provide" 2>/dev/null || true; wait "$provide" 2>/dev/null || true
cleanup; pids=()
if grep -q '"event":"mediaCommand".*"command":"nextTrack","performed":true' "$out/$run-provide.jsonl"; then
  echo "PASS provide reports the accessory's next track"
else fail "$run: provide did not report the accessory's command" "$out/$run-provide.jsonl"; fi
# An accessory with AMS alone (no ANCS session): its registration starts the scenario's timeline.
if grep -q '"event":"player"' "$out/$run-provide.jsonl"; then
  echo "PASS an AMS registration alone started the timeline: the phone's play step ran"
else fail "$run: the timeline did not start without an ANCS session" "$out/$run-provide.jsonl"; fi

echo "-- ancs listen (AMS, CTS) against a phone built on Bumble's Ams service, MTU 23"
run=listen-media
start_link "$run"
title="Ünïcode Sönata for a Title Longer than One Notification at MTU 23"
timeout 90 "$ANCS_BUMBLE_PYTHON" -B -u Tests/ANCSBumbleTests/Interop/bumble_media_phone.py --transport "tcp-client:127.0.0.1:$port_a" \
  --title "$title" --record "$out/$run-phone.json" --duration 60 </dev/null >"$out/$run-phone.log" 2>&1 &
phone=$!; pids+=($phone)
sleep 1
# Under a session bus of its own, as on a desktop: the track read and next
# track pressed through MPRIS with playerctl, pause typed on listen's
# standard input; listen exits after --duration.
ANCS=$ancs OUT=$out RUN=$run PORT=$port_b dbus-run-session -- bash -c '
  { sleep 15; echo pause; sleep 30; } | timeout 90 "$ANCS" listen --stack "bumble:tcp-client:127.0.0.1:$PORT" \
    --mtu 23 --duration 22 --snoop "$OUT/$RUN-nc.btsnoop" --json >"$OUT/$RUN-listen.jsonl" 2>"$OUT/$RUN-listen.err" &
  listen=$!
  sleep 12
  playerctl --player ancs metadata xesam:title >"$OUT/$RUN-playerctl-title.txt" 2>&1
  playerctl --player ancs next >>"$OUT/$RUN-playerctl.log" 2>&1
  wait "$listen"' 2>"$out/$run-dbus.err" || fail "$run: listen exited $?" "$out/$run-listen.err"
kill "$phone" 2>/dev/null || true; wait "$phone" 2>/dev/null || true
cleanup; pids=()
if python3 - "$out/$run-listen.jsonl" "$out/$run-phone.json" "$title" <<'PY'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
phone = json.load(open(sys.argv[2]))
title = sys.argv[3]
updates = [e for e in events if e.get("event") == "mediaUpdated"]
whole = [e for e in updates if e.get("attribute") == "title" and e.get("value") == title and not e.get("truncated")]
cut = [e for e in updates if e.get("attribute") == "title" and e.get("truncated")]
done = [e for e in events if e.get("event") == "mediaCommandCompleted"]
zones = [e for e in events if e.get("event") == "timeZone"]
times = [e for e in events if e.get("event") == "phoneTime"]
checks = {
    "the title cut at MTU 23, then read whole": bool(cut) and bool(whole),
    "two commands performed": len(done) == 2 and not any("error" in e for e in done),
    "the phone received next track (playerctl), then pause (typed)": phone.get("commands") == [3, 1],
    "the time and its zone": bool(times) and times[0]["time"].startswith("2026-11-28T14:53") and zones and zones[0]["utcOffsetMinutes"] == 60,
    "leaving (--duration), listen turned AMS's and CTS's notifications off":
        {name: on for name, on in phone.get("subscriptions", [])} == {"remoteCommand": False, "entityUpdate": False, "currentTime": False},
}
for what, ok in checks.items():
    print(("PASS " if ok else "FAIL ") + what)
sys.exit(0 if all(checks.values()) else 1)
PY
then :; else fail "$run: listen following the phone's player and clock" "$out/$run-listen.jsonl"; fi
if [ "$(cat "$out/$run-playerctl-title.txt")" = "$title" ]; then echo "PASS playerctl reads the whole title from listen's MPRIS player"
else fail "$run: playerctl's title" "$out/$run-playerctl-title.txt"; fi
# The accessory's capture, decoded: AMS's and CTS's PDUs found by their discovery.
transcript=$("$ancs" decode --btsnoop "$out/$run-nc.btsnoop" --json)
for event in amsRegistration amsEntityUpdate amsEntityAttribute amsCommand ctsCurrentTime ctsLocalTimeInformation; do
  if grep -q "\"event\":\"$event\"" <<< "$transcript"; then echo "PASS the capture decodes $event"; else fail "$run: the capture has no $event" "$out/$run-nc.btsnoop"; fi
done

echo "-- ancs decode --btsnoop: each capture against what each side logged"
compare=Tests/ANCSBumbleTests/Interop/compare_capture.py
decode() { "$ancs" decode --btsnoop "$1" --json >"${1%.btsnoop}.transcript.jsonl" && "$ancs" decode --btsnoop "$1" >"${1%.btsnoop}.transcript.txt"; }
for mtu in 23 185; do
  run="ancsclient-mtu$mtu"
  decode "$out/$run-np.btsnoop"
  python3 "$compare" "$out/$run-np.transcript.jsonl" --provide "$out/$run-provide.jsonl" --client "$out/$run-client.json" \
    || fail "$run: the NP capture against what each side logged"
done
run=listen-provide
decode "$out/$run-np.btsnoop"
decode "$out/$run-nc.btsnoop"
python3 "$compare" "$out/$run-np.transcript.jsonl" --provide "$out/$run-provide.jsonl" || fail "$run: the NP capture against provide's log"
python3 "$compare" "$out/$run-nc.transcript.jsonl" --listen "$out/$run-listen.jsonl" || fail "$run: the NC capture against listen's log"

if [ "$failures" -ne 0 ]; then
  for entry in "${failed[@]}"; do
    what=${entry%%|*} log=${entry#*|}
    echo "== FAILED: $what"
    [ -n "$log" ] && [ -f "$log" ] && { grep -E '^FAIL|rror' "$log" | tail -n 5; echo "-- last lines of $log"; tail -n 15 "$log"; }
  done
  echo "ci-bumble: $failures failure(s): ${failed[*]%%|*}; logs in $out"
  exit 1
fi
echo "ci-bumble: all interop runs passed"
