#!/bin/bash
# `ancs listen --json` against the real bluetoothd and a simulated iPhone, in a VM: Debian's
# kernel (hci_vhci) booted with virtme-ng under QEMU (KVM when it works, else TCG); the guest
# sees this machine's filesystem read-only, so the binary is built here first.
# usage: Tests/vm-bluez/run.sh <ancs binary> <venv with virtme-ng and bumble> <output dir>
# VM_CHECKS="listen notify provide" (default all) picks the checks; VM_TIMEOUT bounds the VM.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ANCS=$(realpath "$1"); VENV=$(realpath "$2"); OUT=$3
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
export PATH=$VENV/bin:$PATH
KVER=$(ls /lib/modules | grep -E -- '-amd64$' | sort -V | tail -1)
KERNEL=/boot/vmlinuz-$KVER
[ -f "$KERNEL" ] && [ -f /lib/modules/$KVER/kernel/drivers/bluetooth/hci_vhci.ko ] || { echo "no Debian kernel with hci_vhci"; exit 2; }
ACCEL=tcg
if [ -w /dev/kvm ]; then   # does a KVM guest with '-cpu host' (what vng uses) really boot?
  ( timeout 30 qemu-system-x86_64 -machine accel=kvm -cpu host -m 256 -nographic -no-reboot \
      -kernel $KERNEL -append "console=ttyS0 panic=-1" > "$OUT/kvm_probe.log" 2>&1 </dev/null; true ) 2>/dev/null
  grep -q 'Kernel panic' "$OUT/kvm_probe.log" && ACCEL=kvm
fi
VNG_ACCEL=""; [ $ACCEL = tcg ] && VNG_ACCEL="--disable-kvm"
echo "== VM: kernel $KVER, $ACCEL"
START=$(date +%s)
rm -f "$OUT/rc"
timeout ${VM_TIMEOUT:-720} "$VENV/bin/vng" --run $KERNEL $VNG_ACCEL --memory 1G --cpus 2 --rwdir "$OUT" \
  --exec "HERE=$HERE VENV=$VENV ANCS=$ANCS OUT=$OUT CHECKS='${VM_CHECKS:-all}' $HERE/guest.sh" </dev/null > "$OUT/console.log" 2>&1
echo "== VM exited after $(( $(date +%s) - START )) s"
grep -E '^\[check|^\[guest|passed, ' "$OUT/console.log"
RC=$(cat "$OUT/rc" 2>/dev/null || echo 3)

# btmon's capture of the run (monitor format) through `ancs decode --btsnoop`.
if [ -f "$OUT/listen.jsonl" ]; then
  python3 "$HERE/check_btmon.py" "$ANCS" "$OUT" || { [ "$RC" = 0 ] && RC=1; }
fi

[ "$RC" = 0 ] && echo "vm-bluez: PASS" || { echo "vm-bluez: FAIL (rc $RC; logs in $OUT)"; tail -40 "$OUT/console.log"; }
exit $RC
