// The C runtime an Embedded Swift image needs on bare metal, and no more:
//   - console output and exit over semihosting (putchar is line-buffered);
//   - a first-fit heap (malloc, free, posix_memalign, calloc, realloc) that
//     counts what it hands out, so the images can report their heap peak;
//   - the stack high-water mark (the reset code paints the stack);
//   - memcpy, memmove, memset, memcmp, strlen and the ARM EABI names for them;
//   - arc4random_buf (Hasher seeding; deterministic, so runs are repeatable),
//     __stack_chk_guard/__stack_chk_fail, ceil (Dictionary capacity math).
// Soft-float and 64-bit division helpers come from libgcc.
#include <stddef.h>
#include <stdint.h>

#include "firmware.h"
#include "semihosting.h"

// ------------------------------------------------------------ semihosting

#if defined(__arm__)
__attribute__((noinline)) long semihosting_call(uint32_t operation, void *argument) {
  register uint32_t r0 __asm__("r0") = operation;
  register void *r1 __asm__("r1") = argument;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return (long)r0;
}
#elif defined(__riscv)
// RISC-V semihosting is recognised by this exact uncompressed sequence, which
// must not straddle a page boundary: a function of its own, 16-byte aligned.
__attribute__((noinline, aligned(16))) long semihosting_call(uint32_t operation, void *argument) {
  register uint32_t a0 __asm__("a0") = operation;
  register void *a1 __asm__("a1") = argument;
  __asm__ volatile(
      ".option push\n"
      ".option norvc\n"
      "slli x0, x0, 0x1f\n"
      "ebreak\n"
      "srai x0, x0, 7\n"
      ".option pop\n"
      : "+r"(a0)
      : "r"(a1)
      : "memory");
  return (long)a0;
}
#else
#error "firmware runtime: unsupported architecture"
#endif

static char console_line[160];
static size_t console_length;

static void console_flush(void) {
  if (console_length == 0) return;
  console_line[console_length] = '\0';
  semihosting_call(SEMIHOSTING_SYS_WRITE0, console_line);
  console_length = 0;
}

int putchar(int c) {
  console_line[console_length++] = (char)c;
  if (c == '\n' || console_length == sizeof console_line - 1) console_flush();
  return c & 0xff;
}

void fw_puts(const char *text) {
  while (*text) putchar(*text++);
}

void fw_put_uint(uint64_t value) {
  char digits[21];
  int at = 20;
  digits[at] = '\0';
  do {
    digits[--at] = (char)('0' + value % 10u);
    value /= 10u;
  } while (value != 0);
  fw_puts(&digits[at]);
}

void fw_put_figure(const char *name, uint64_t value) {
  fw_puts("figure ");
  fw_puts(name);
  fw_puts(" ");
  fw_put_uint(value);
  fw_puts("\n");
}

void fw_exit(int status) {
  console_flush();
  uint32_t block[2] = {SEMIHOSTING_APPLICATION_EXIT, (uint32_t)status};
  semihosting_call(SEMIHOSTING_SYS_EXIT_EXTENDED, block);
  for (;;) {
  }
}

void exit(int status) { fw_exit(status); }

void abort(void) {
  fw_puts("firmware: abort()\n");
  fw_exit(FW_EXIT_ABORT);
}

// ------------------------------------------------------------------- heap

extern char __heap_start[], __heap_end[];

// Every block starts with a 16-byte header so that payloads stay 16-byte
// aligned (the largest alignment Embedded Swift asks for here).
typedef struct heap_block {
  size_t size;              // whole block, header included, a multiple of 16
  struct heap_block *next;  // free blocks only: next free block, by address
  size_t requested;         // blocks in use: the bytes asked for
  size_t unused;
} heap_block;

#define HEAP_GRANULE 16u
#define HEAP_HEADER sizeof(heap_block)

static heap_block *free_blocks;
static char *heap_break;  // first byte never handed out
static size_t heap_used, heap_used_peak, heap_allocations;
static size_t heap_requested, heap_requested_peak;  // the bytes asked for, without headers

void *malloc(size_t size) {
  if (heap_break == 0) {
    heap_break = (char *)(((uintptr_t)__heap_start + HEAP_GRANULE - 1) & ~(uintptr_t)(HEAP_GRANULE - 1));
  }
  size_t need = (size + HEAP_HEADER + HEAP_GRANULE - 1) & ~(size_t)(HEAP_GRANULE - 1);
  heap_block *block = 0;
  for (heap_block **link = &free_blocks; *link; link = &(*link)->next) {
    heap_block *candidate = *link;
    if (candidate->size < need) continue;
    if (candidate->size - need >= HEAP_HEADER + HEAP_GRANULE) {  // split: the tail stays free
      heap_block *rest = (heap_block *)((char *)candidate + need);
      rest->size = candidate->size - need;
      rest->next = candidate->next;
      *link = rest;
      candidate->size = need;
    } else {
      *link = candidate->next;
    }
    block = candidate;
    break;
  }
  if (block == 0) {
    if ((size_t)(__heap_end - heap_break) < need) {
      fw_puts("firmware: out of heap\n");
      fw_exit(FW_EXIT_OUT_OF_HEAP);
    }
    block = (heap_block *)heap_break;
    block->size = need;
    heap_break += need;
  }
  block->requested = size;
  heap_used += block->size;
  if (heap_used > heap_used_peak) heap_used_peak = heap_used;
  heap_requested += size;
  if (heap_requested > heap_requested_peak) heap_requested_peak = heap_requested;
  heap_allocations++;
  return (char *)block + HEAP_HEADER;
}

void free(void *pointer) {
  if (pointer == 0) return;
  heap_block *block = (heap_block *)((char *)pointer - HEAP_HEADER);
  heap_used -= block->size;
  heap_requested -= block->requested;
  // Insert by address and merge with the neighbours.
  heap_block *before = 0, *after = free_blocks;
  while (after && after < block) {
    before = after;
    after = after->next;
  }
  block->next = after;
  if (before) before->next = block; else free_blocks = block;
  if (after && (char *)block + block->size == (char *)after) {
    block->size += after->size;
    block->next = after->next;
  }
  if (before && (char *)before + before->size == (char *)block) {
    before->size += block->size;
    before->next = block->next;
  }
}

int posix_memalign(void **result, size_t alignment, size_t size) {
  if (alignment > HEAP_GRANULE) {
    fw_puts("firmware: posix_memalign asked for more than 16-byte alignment\n");
    fw_exit(FW_EXIT_BAD_ALIGNMENT);
  }
  *result = malloc(size);
  return 0;
}

void *calloc(size_t count, size_t size) {
  size_t total = count * size;
  if (size != 0 && total / size != count) {
    fw_puts("firmware: calloc size overflows\n");
    fw_exit(FW_EXIT_OUT_OF_HEAP);
  }
  unsigned char *bytes = malloc(total);
  for (size_t i = 0; i < total; i++) bytes[i] = 0;
  return bytes;
}

void *realloc(void *pointer, size_t size) {
  if (pointer == 0) return malloc(size);
  heap_block *block = (heap_block *)((char *)pointer - HEAP_HEADER);
  if (block->size - HEAP_HEADER >= size) {
    heap_requested = heap_requested - block->requested + size;
    if (heap_requested > heap_requested_peak) heap_requested_peak = heap_requested;
    block->requested = size;
    return pointer;
  }
  unsigned char *moved = malloc(size);
  const unsigned char *old = pointer;
  for (size_t i = 0; i < block->requested; i++) moved[i] = old[i];
  free(pointer);
  return moved;
}

size_t fw_heap_in_use(void) { return heap_used; }
size_t fw_heap_peak(void) { return heap_used_peak; }
size_t fw_heap_mark(void) {
  heap_used_peak = heap_used;
  heap_requested_peak = heap_requested;
  return heap_used;
}
size_t fw_heap_requested(void) { return heap_requested; }
size_t fw_heap_requested_peak(void) { return heap_requested_peak; }
size_t fw_heap_size(void) { return (size_t)(__heap_end - __heap_start); }
size_t fw_heap_allocations(void) { return heap_allocations; }

#ifndef FW_SESSION_HEAP_BUDGET
#define FW_SESSION_HEAP_BUDGET 2048
#endif
size_t fw_session_heap_budget(void) { return FW_SESSION_HEAP_BUDGET; }

// ------------------------------------------------------------------ stack

extern uint32_t __stack_bottom[], __stack_top[];
#define STACK_PAINT 0x5AA5C33Cu

// Paints the free stack below the caller's frame; fw_stack_peak then finds
// the lowest word written since.
__attribute__((noinline)) void fw_stack_mark(void) {
  uint32_t *sp;
#if defined(__arm__)
  __asm__ volatile("mov %0, sp" : "=r"(sp));
#else
  __asm__ volatile("mv %0, sp" : "=r"(sp));
#endif
  for (uint32_t *word = __stack_bottom; word < sp - 8; word++) *word = STACK_PAINT;
}

size_t fw_stack_peak(void) {
  const uint32_t *word = __stack_bottom;
  while (word < __stack_top && *word == STACK_PAINT) word++;
  return (size_t)((const char *)__stack_top - (const char *)word);
}

size_t fw_stack_size(void) { return (size_t)((char *)__stack_top - (char *)__stack_bottom); }

// ----------------------------------------------------------------- memory

void *memcpy(void *destination, const void *source, size_t count) {
  unsigned char *to = destination;
  const unsigned char *from = source;
  while (count--) *to++ = *from++;
  return destination;
}

void *memmove(void *destination, const void *source, size_t count) {
  unsigned char *to = destination;
  const unsigned char *from = source;
  if (to < from) {
    while (count--) *to++ = *from++;
  } else {
    to += count;
    from += count;
    while (count--) *--to = *--from;
  }
  return destination;
}

void *memset(void *destination, int value, size_t count) {
  unsigned char *to = destination;
  while (count--) *to++ = (unsigned char)value;
  return destination;
}

int memcmp(const void *left, const void *right, size_t count) {
  const unsigned char *a = left, *b = right;
  for (; count; count--, a++, b++) {
    if (*a != *b) return (int)*a - (int)*b;
  }
  return 0;
}

size_t strlen(const char *text) {
  size_t length = 0;
  while (text[length]) length++;
  return length;
}

#if defined(__arm__)
// The ARM run-time ABI names the compiler calls (memset's arguments differ).
void __aeabi_memcpy(void *d, const void *s, size_t n) { memcpy(d, s, n); }
void __aeabi_memcpy4(void *d, const void *s, size_t n) { memcpy(d, s, n); }
void __aeabi_memcpy8(void *d, const void *s, size_t n) { memcpy(d, s, n); }
void __aeabi_memmove(void *d, const void *s, size_t n) { memmove(d, s, n); }
void __aeabi_memmove4(void *d, const void *s, size_t n) { memmove(d, s, n); }
void __aeabi_memmove8(void *d, const void *s, size_t n) { memmove(d, s, n); }
void __aeabi_memset(void *d, size_t n, int c) { memset(d, c, n); }
void __aeabi_memset4(void *d, size_t n, int c) { memset(d, c, n); }
void __aeabi_memset8(void *d, size_t n, int c) { memset(d, c, n); }
void __aeabi_memclr(void *d, size_t n) { memset(d, 0, n); }
void __aeabi_memclr4(void *d, size_t n) { memset(d, 0, n); }
void __aeabi_memclr8(void *d, size_t n) { memset(d, 0, n); }
// Unwind tables name these personality routines. Embedded Swift never
// unwinds (a trap stops the program), so they only keep libgcc's unwinder out.
void __aeabi_unwind_cpp_pr0(void) { abort(); }
void __aeabi_unwind_cpp_pr1(void) { abort(); }
void __aeabi_unwind_cpp_pr2(void) { abort(); }
#endif

// ------------------------------------------------------------------- misc

// Hasher seeding: a fixed xorshift32 stream, so every run is the same run.
void arc4random_buf(void *buffer, size_t count) {
  static uint32_t state = 0x9E3779B9u;
  unsigned char *bytes = buffer;
  for (size_t i = 0; i < count; i++) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    bytes[i] = (unsigned char)(state >> 24);
  }
}

uintptr_t __stack_chk_guard = 0x1BADB002u;

void __stack_chk_fail(void) {
  fw_puts("firmware: stack smashing detected\n");
  fw_exit(FW_EXIT_STACK_SMASHED);
}

double ceil(double x) {
  // Beyond 2^52 every double is an integer (NaN and infinities pass through).
  if (!(x > -4503599627370496.0 && x < 4503599627370496.0)) return x;
  double whole = (double)(long long)x;
  return whole < x ? whole + 1.0 : whole;
}
