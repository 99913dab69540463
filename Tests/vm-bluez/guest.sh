#!/bin/bash
# Runs inside the VM as root: the kernel's hci_vhci, a system D-Bus, the real bluetoothd,
# the simulated iPhone on /dev/vhci, then the checks against `ancs listen --json`, then
# `ancs provide --central` pairing with accessories on bluetoothd (check_provide.py).
# Env: HERE (this folder), VENV (Python venv with Bumble), ANCS (the built binary), OUT (writable).
set -u
echo "[guest] kernel $(uname -r), $(nproc) vCPU, uptime $(cut -d' ' -f1 /proc/uptime)s"
modprobe bluetooth && modprobe hci_vhci && modprobe ecdh_generic || { echo "[guest] modprobe failed"; exit 2; }
mkdir -p /run/dbus /var/lib/bluetooth
dbus-daemon --system --fork
BTD=/usr/libexec/bluetooth/bluetoothd; [ -x $BTD ] || BTD=/usr/lib/bluetooth/bluetoothd
btmon -w $OUT/hci.btsnoop >/dev/null 2>&1 & BTMON=$!
$BTD -n -d > $OUT/bluetoothd.log 2>&1 & BTD_PID=$!
$VENV/bin/python $HERE/iphone.py > $OUT/iphone.log 2>&1 & PHONE=$!
for i in $(seq 1 600); do [ -S /run/iphone.sock ] && break; sleep 0.1; done
for i in $(seq 1 300); do dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci0 org.freedesktop.DBus.Introspectable.Introspect >/dev/null 2>&1 && break; sleep 0.1; done
echo "[guest] bluetoothd $($BTD --version) and the simulated iPhone are up (uptime $(cut -d' ' -f1 /proc/uptime)s)"
RC=0
runs() { [ "${CHECKS:-all}" = all ] || [[ " $CHECKS " == *" $1 "* ]]; }   # CHECKS: listen notify provide
if runs listen; then
  $ANCS doctor > $OUT/doctor.txt 2>&1; DOCTOR=$?; echo "[guest] ancs doctor exit $DOCTOR"; cat $OUT/doctor.txt
  timeout 240 /usr/bin/python3 $HERE/check.py $ANCS $OUT || RC=1
  [ $DOCTOR = 0 ] || { echo "[guest] FAIL: ancs doctor found a problem with a working bluetoothd"; RC=1; }
fi
if runs notify; then timeout 200 /usr/bin/python3 $HERE/check_notify.py $ANCS $OUT $HERE || RC=1; fi
# The simulated iPhone leaves (its adapter with it); `ancs provide` acts as the iPhone on a new one.
kill $PHONE; wait $PHONE 2>/dev/null; sleep 1
if runs provide; then timeout 360 /usr/bin/python3 $HERE/check_provide.py $ANCS $OUT $HERE $VENV || RC=1; fi
kill $BTD_PID; sleep 0.5; kill $BTMON; wait 2>/dev/null
echo "[guest] done rc=$RC uptime $(cut -d' ' -f1 /proc/uptime)s"
echo $RC > $OUT/rc
exit $RC
