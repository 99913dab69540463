// Cortex-M4 start-up for QEMU's mps2-an386 board (and the Cortex-M33 of its
// mps2-an505, in the Secure state it starts in): vector table, reset,
// fault handlers, and the instruction counter (SysTick).
#include <stdint.h>

#include "firmware.h"

extern uint32_t __stack_top[];
extern uint32_t __data_load[], __data_start[], __data_end[];
extern uint32_t __bss_start[], __bss_end[];
extern void firmware_main(void);

void reset_continue(void) __attribute__((noreturn, used));
void SysTick_Handler(void);

__attribute__((naked, noreturn)) void Reset_Handler(void) {
  // Full access to the FPU (CP10, CP11) before any C code runs: swiftc's
  // armv7em code may use FPv4-SP instructions, which fault otherwise.
  __asm__ volatile(
      "ldr r0, =0xE000ED88\n"
      "ldr r1, [r0]\n"
      "orr r1, r1, #0x00F00000\n"
      "str r1, [r0]\n"
      "dsb\n"
      "isb\n"
      "b reset_continue\n");
}

// SysTick counts the processor clock (25 MHz on mps2-an386, 20 MHz on
// mps2-an505's Cortex-M33, built with FW_INSTRUCTIONS_PER_TICK=50). Under
// QEMU -icount shift=0 virtual time advances 1 ns per instruction, so one
// tick is 40 instructions (50): counts are exact to within one tick.
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_RELOAD 0x00FFFFFFu
#ifdef FW_INSTRUCTIONS_PER_TICK
#define INSTRUCTIONS_PER_TICK FW_INSTRUCTIONS_PER_TICK
#else
#define INSTRUCTIONS_PER_TICK 40u
#endif
static volatile uint32_t systick_periods;

void SysTick_Handler(void) { systick_periods++; }

static void instruction_counter_start(void) {
  SYST_RVR = SYST_RELOAD;
  SYST_CVR = 0;
  SYST_CSR = 7;  // processor clock, interrupt at wrap, enabled
  while (SYST_CVR == 0) {
  }
}

uint64_t fw_instructions(void) {
  uint32_t periods, value;
  do {
    periods = systick_periods;
    value = SYST_CVR;
  } while (periods != systick_periods);
  return ((uint64_t)periods * (SYST_RELOAD + 1u) + (SYST_RELOAD - value)) * INSTRUCTIONS_PER_TICK;
}

// A loop of exactly 2 * iterations instructions (subs, bne), counted: the
// test image checks the counter with it.
uint64_t fw_count_loop(uint32_t iterations) {
  uint64_t start = fw_instructions();
  __asm__ volatile("1: subs %0, %0, #1\n bne 1b\n" : "+r"(iterations) : : "cc");
  return fw_instructions() - start;
}

void reset_continue(void) {
  const uint32_t *from = __data_load;
  for (uint32_t *to = __data_start; to < __data_end;) *to++ = *from++;
  for (uint32_t *to = __bss_start; to < __bss_end;) *to++ = 0;
  fw_stack_mark();
  instruction_counter_start();
  firmware_main();
  fw_exit(FW_EXIT_PASS);
}

static void fault(const char *name) {
  fw_puts("firmware: ");
  fw_puts(name);
  fw_puts(" (a Swift trap ends here too)\n");
  fw_exit(FW_EXIT_TRAP);
}

void HardFault_Handler(void) { fault("HardFault"); }
void MemManage_Handler(void) { fault("MemManage fault"); }
void BusFault_Handler(void) { fault("BusFault"); }
void UsageFault_Handler(void) { fault("UsageFault"); }
void Unexpected_Handler(void) { fault("unexpected exception"); }

typedef void (*handler)(void);
__attribute__((section(".vectors"), used)) const handler vector_table[16 + 32] = {
    [0] = (handler)__stack_top,
    [1] = Reset_Handler,
    [2 ... 47] = Unexpected_Handler,
    [3] = HardFault_Handler,
    [4] = MemManage_Handler,
    [5] = BusFault_Handler,
    [6] = UsageFault_Handler,
    [15] = SysTick_Handler,
};
