#!/usr/bin/env bash
# CI step for the BlueZ consumer: installs what it needs (a fresh Debian 12, as root), runs the
# D-Bus tests (a private dbus-daemon), then `ancs listen --json` against the real bluetoothd and
# a simulated iPhone in a VM (Tests/vm-bluez), then --notify through dunst on a private session bus.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
packages=(qemu-system-x86 linux-image-amd64 busybox-static bluez dbus python3-dbus python3-gi python3-venv
          kmod procps time xvfb dunst playerctl)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
VENV=.build/venv-bluez
[ -x $VENV/bin/vng ] || { python3 -m venv $VENV; $VENV/bin/pip install -q 'virtme-ng==1.42' 'bumble==0.0.236'; }

echo "== D-Bus and BlueZ unit tests"
swift test --filter ANCSBlueZTests
# The VM runs what scripts/install.sh installs: the release build with static Swift libraries
# (already built when the install step ran first), so its resident memory is what users see.
source scripts/release-flags.sh
echo "== swift build ${release_flags[*]} --product ancs"
swift build "${release_flags[@]}" --product ancs
echo "== ancs listen against bluetoothd $(bluetoothd --version 2>/dev/null || /usr/libexec/bluetooth/bluetoothd --version) in a VM"
Tests/vm-bluez/run.sh "$(swift build "${release_flags[@]}" --show-bin-path)/ancs" $VENV .build/vm-bluez-out
