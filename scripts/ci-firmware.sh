#!/usr/bin/env bash
# CI: the firmware images on emulated microcontrollers (firmware/run.sh):
# the test image and the consumer footprint image, for Cortex-M4 (QEMU
# mps2-an386) and RV32IMAC (QEMU virt). Installs what a fresh Debian machine
# lacks, fails if any image fails (a failed check, a trap, out of heap, the
# session heap budget, a hang), then prints the figures, and fails if the
# consumer path passes its instruction budget (callgrind on the host).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v qemu-system-arm >/dev/null || missing+=(qemu-system-arm)
command -v qemu-system-riscv32 >/dev/null || missing+=(qemu-system-misc)
command -v arm-none-eabi-gcc >/dev/null || missing+=(gcc-arm-none-eabi)
command -v riscv64-unknown-elf-gcc >/dev/null || missing+=(gcc-riscv64-unknown-elf)
command -v valgrind >/dev/null || missing+=(valgrind)
command -v llvm-size >/dev/null || [ -x /opt/swift/usr/bin/llvm-size ] || ls /usr/bin/llvm-size-* >/dev/null 2>&1 || missing+=(llvm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Another apt may hold the lock: wait for it (up to 10 min), then retry.
  for attempt in 1 2 3; do
    if apt-get -o DPkg::Lock::Timeout=600 update -q &&
       apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"; then
      break
    fi
    [ "$attempt" = 3 ] && { echo "error: could not install ${missing[*]}" >&2; exit 1; }
    echo "== apt-get failed (attempt $attempt), retrying in 20 s"
    sleep 20
  done
fi

echo "== firmware images on QEMU (Cortex-M4, RV32IMAC)"
firmware/run.sh all
echo "== firmware images on QEMU: armv8-M Mainline (Cortex-M33, mps2-an505)"
firmware/run.sh armv8m
echo "== firmware harness self-check (a trap, out of heap, a hang, a failed check, over budget: each must fail)"
firmware/selfcheck.sh all
echo "== firmware figures"
firmware/measure.sh --no-build
