# Sourced by the scripts that build the core for a microcontroller: what each
# target is compiled with, in one place.
#
#   embedded_target TRIPLE   sets swift_target (the Embedded Swift library the
#       code is compiled against), clang_target and codegen (clang's code
#       generation flags: given to swiftc with -Xcc, to clang for C, and to
#       the final compilation, so the object is the target's throughout),
#       and xcc (codegen as swiftc takes it, each flag after -Xcc).
#       The toolchain has libraries for armv7em-none-none-eabi and
#       riscv32-none-none-eabi; the others are built against one of them:
#         armv7em-none-none-eabihf    Cortex-M4F, hard-float ABI (fpv4-sp-d16)
#         armv8m.main-none-none-eabi  Cortex-M33 (nRF53, nRF54L), soft-float
#         rv32imc, rv32imac, ...      RISC-V with that ISA (-march), ABI ilp32
#                                     (ilp32f/ilp32d with F/D)
#       Any other triple is taken as it is (a host's, for instance).
#
#   firmware_arch ARCH   for the QEMU images (firmware/run.sh, selfcheck.sh):
#       sets fw_triple (the triple above), ctarget (clang's flags for the C
#       runtime), libgcc, qemu (the board), rt (the start-up and linker
#       script's name) and trap_text (how a trap shows on the console), then
#       embedded_target for fw_triple. ARCH: arm (Cortex-M4, mps2-an386),
#       armv8m (Cortex-M33, mps2-an505), riscv (RV32IMAC, virt).
#
#   embedded_swift   what every Embedded Swift build of the core is compiled
#       with, whatever the target (scripts/check-embedded.sh, whole-program.sh,
#       integrations/c/build.sh, firmware/run.sh): whole module, for size, with
#       mergeable traps (-mergeable-traps): each failed check (a bounds, an
#       overflow, a precondition) branches to the one trap of its function,
#       not to a trap of its own. A trap still stops the firmware where it
#       is; only which check failed in a function is no longer told by the
#       trap's address. 140 bytes of the whole consumer's Cortex-M4 text
#       (110 traps were 38).

embedded_swift=(-enable-experimental-feature Embedded -wmo -parse-as-library -Osize -Xfrontend -mergeable-traps)

embedded_target() {
  swift_target=$1 clang_target=$1 codegen=()
  case "$1" in
    armv7em-none-none-eabihf)
      swift_target=armv7em-none-none-eabi
      codegen=(-mcpu=cortex-m4 -mfloat-abi=hard -mfpu=fpv4-sp-d16) ;;
    armv8m.main-none-none-eabi)
      swift_target=armv7em-none-none-eabi clang_target=thumbv8m.main-none-eabi
      codegen=(-mcpu=cortex-m33 -mfloat-abi=soft) ;;
    rv32*)
      local abi=ilp32
      case "${1#rv32}" in
        *d*|*g*) abi=ilp32d ;;
        *f*) abi=ilp32f ;;
      esac
      swift_target=riscv32-none-none-eabi clang_target=riscv32-none-none-eabi
      codegen=(-march="$1" -mabi="$abi") ;;
  esac
  xcc=()
  local flag
  for flag in "${codegen[@]}"; do xcc+=(-Xcc "$flag"); done
}

firmware_arch() {
  case "$1" in
    arm)
      fw_triple=armv7em-none-none-eabi rt=arm trap_text="HardFault\|UsageFault"
      ctarget=(--target=thumbv7em-none-eabi -mcpu=cortex-m4 -mfloat-abi=soft)
      libgcc=$(arm-none-eabi-gcc -mthumb -march=armv7e-m+fp -mfloat-abi=softfp -print-libgcc-file-name)
      qemu=(qemu-system-arm -M mps2-an386 -cpu cortex-m4) ;;
    armv8m)
      # SysTick runs at 20 MHz on the an505: 50 instructions a tick under -icount shift=0.
      fw_triple=armv8m.main-none-none-eabi rt=arm trap_text="HardFault\|UsageFault"
      ctarget=(--target=thumbv8m.main-none-eabi -mcpu=cortex-m33 -mfloat-abi=soft -DFW_INSTRUCTIONS_PER_TICK=50u)
      libgcc=$(arm-none-eabi-gcc -mthumb -march=armv8-m.main -mfloat-abi=soft -print-libgcc-file-name)
      qemu=(qemu-system-arm -M mps2-an505 -cpu cortex-m33) ;;
    riscv)
      fw_triple=riscv32-none-none-eabi rt=riscv trap_text="mcause 0x00000002"
      ctarget=(--target=riscv32-none-elf -march=rv32imac -mabi=ilp32)
      libgcc=$(riscv64-unknown-elf-gcc -march=rv32imac -mabi=ilp32 -print-libgcc-file-name)
      qemu=(qemu-system-riscv32 -M virt -bios none) ;;
    *) echo "firmware_arch: unknown architecture $1" >&2; return 1 ;;
  esac
  embedded_target "$fw_triple"
}
