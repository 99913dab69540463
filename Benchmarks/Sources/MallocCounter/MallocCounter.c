// Counts heap allocations of the whole process by defining the malloc
// family in the executable: the dynamic linker binds every library's calls
// (the Swift runtime included) to these, which count and forward to glibc's
// own allocator. Only glibc exports the __libc_* entry points used here;
// elsewhere the counter reports itself unavailable.

#include "MallocCounter.h"

#if defined(__linux__) && defined(__GLIBC__)
#include <errno.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static uint64_t counter;

// A plain load and store, not a locked add: the measured code runs on one
// thread, and a locked add on every malloc would slow down what is timed.
static inline void count(void) {
    __atomic_store_n(&counter, __atomic_load_n(&counter, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

void *malloc(size_t size) { count(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count(); return __libc_calloc(n, size); }
void *realloc(void *pointer, size_t size) { if (pointer == NULL) count(); return __libc_realloc(pointer, size); }
void *memalign(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    count();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL && size != 0) return ENOMEM;
    *out = pointer;
    return 0;
}

uint64_t malloc_counter_value(void) { return __atomic_load_n(&counter, __ATOMIC_RELAXED); }
int malloc_counter_available(void) { return 1; }
#else
uint64_t malloc_counter_value(void) { return 0; }
int malloc_counter_available(void) { return 0; }
#endif
