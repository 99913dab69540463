// RV32IMAC start-up for QEMU's virt board (-bios none): machine mode, one
// hart; the trap handler reports and exits; minstret counts instructions.
#include <stdint.h>

#include "firmware.h"

extern uint32_t __data_load[], __data_start[], __data_end[];
extern uint32_t __bss_start[], __bss_end[];
extern void firmware_main(void);

void reset_continue(void) __attribute__((noreturn, used));
void trap_continue(void) __attribute__((noreturn, used));

__attribute__((naked, noreturn, section(".text.start"))) void _start(void) {
  __asm__ volatile(
      ".option push\n"
      ".option norelax\n"
      "la gp, __global_pointer$\n"
      ".option pop\n"
      "la sp, __stack_top\n"
      "la t0, trap_vector\n"
      "csrw mtvec, t0\n"
      "j reset_continue\n"
      ".balign 4\n"
      "trap_vector:\n"
      "j trap_continue\n");
}

void reset_continue(void) {
  const uint32_t *from = __data_load;
  if (from != __data_start) {
    for (uint32_t *to = __data_start; to < __data_end;) *to++ = *from++;
  }
  for (uint32_t *to = __bss_start; to < __bss_end;) *to++ = 0;
  fw_stack_mark();
  firmware_main();
  fw_exit(FW_EXIT_PASS);
}

static void put_hex(uint32_t value) {
  static const char digits[] = "0123456789abcdef";
  char text[11];
  text[0] = '0';
  text[1] = 'x';
  for (int i = 0; i < 8; i++) text[2 + i] = digits[(value >> (28 - 4 * i)) & 0xFu];
  text[10] = '\0';
  fw_puts(text);
}

void trap_continue(void) {
  uint32_t cause, pc, value;
  __asm__ volatile("csrr %0, mcause\n csrr %1, mepc\n csrr %2, mtval" : "=r"(cause), "=r"(pc), "=r"(value));
  fw_puts("firmware: trap, mcause ");
  put_hex(cause);
  fw_puts(" mepc ");
  put_hex(pc);
  fw_puts(" mtval ");
  put_hex(value);
  fw_puts(" (a Swift trap is an illegal instruction, mcause 2)\n");
  fw_exit(FW_EXIT_TRAP);
}

// minstret is exact under QEMU -icount (without it, it follows host time).
uint64_t fw_instructions(void) {
  uint32_t high, low, again;
  do {
    __asm__ volatile("csrr %0, minstreth\n csrr %1, minstret\n csrr %2, minstreth" : "=r"(high), "=r"(low), "=r"(again));
  } while (high != again);
  return ((uint64_t)high << 32) | low;
}

// A loop of exactly 2 * iterations instructions (addi, bnez), counted: the
// test image checks the counter with it.
uint64_t fw_count_loop(uint32_t iterations) {
  uint64_t start = fw_instructions();
  __asm__ volatile("1: addi %0, %0, -1\n bnez %0, 1b\n" : "+r"(iterations));
  return fw_instructions() - start;
}
