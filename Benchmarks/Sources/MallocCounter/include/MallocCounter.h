#ifndef MALLOC_COUNTER_H
#define MALLOC_COUNTER_H

#include <stdint.h>

/// Heap blocks handed out so far (malloc, calloc, realloc to a new block,
/// the aligned variants) by the process, when `malloc_counter_available`.
uint64_t malloc_counter_value(void);

/// 1 where malloc is interposed (Linux with glibc), else 0.
int malloc_counter_available(void);

#endif
