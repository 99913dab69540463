// What the runtime offers the images (Swift reaches these with @_extern(c)).
#ifndef FW_FIRMWARE_H
#define FW_FIRMWARE_H
#include <stddef.h>
#include <stdint.h>

// Exit statuses: QEMU exits with them, so they are the verdict of a run.
enum {
  FW_EXIT_PASS = 0,
  FW_EXIT_CHECKS_FAILED = 1,  // decided by the image
  FW_EXIT_ABORT = 134,        // abort()
  FW_EXIT_STACK_SMASHED = 135,
  FW_EXIT_BAD_ALIGNMENT = 136,
  FW_EXIT_OUT_OF_HEAP = 137,
  FW_EXIT_TRAP = 139,         // HardFault / UsageFault / illegal instruction (a Swift trap)
};

void fw_puts(const char *text);
void fw_put_uint(uint64_t value);
// One `figure NAME VALUE` line: firmware/run.sh collects them into figures.txt.
void fw_put_figure(const char *name, uint64_t value);
void fw_exit(int status) __attribute__((noreturn));

// Instructions retired since reset (RISC-V: minstret; Cortex-M: SysTick under
// QEMU -icount shift=0, to within 40 instructions).
uint64_t fw_instructions(void);
// Runs a loop of exactly 2 * iterations instructions and returns what the
// counter says it took (a check of the counter).
uint64_t fw_count_loop(uint32_t iterations);

// Heap: bytes in blocks handed out (headers and rounding included).
size_t fw_heap_in_use(void);
size_t fw_heap_peak(void);
// Starts a new measurement: the peak becomes what is in use now; returns it.
size_t fw_heap_mark(void);
// The same for the bytes asked for (no headers, no rounding): what a leaner
// allocator would need at least.
size_t fw_heap_requested(void);
size_t fw_heap_requested_peak(void);
size_t fw_heap_size(void);
size_t fw_heap_allocations(void);

// Stack: deepest use since the last fw_stack_mark (or reset), in bytes from the top.
size_t fw_stack_peak(void);
void fw_stack_mark(void);
size_t fw_stack_size(void);

// The limit a session's heap peak must stay within (set at build time).
size_t fw_session_heap_budget(void);

#endif
