/*
 * The library's heap (ancs.h, "Memory"): every allocation of libancs.a's
 * Swift code comes here. integrations/c/build.sh renames the object's
 * posix_memalign and free to ancs_heap_alloc and ancs_heap_free, so that
 * the firmware decides where the engine's tables live:
 *
 *   - by default, the C library's heap (posix_memalign and free, as before);
 *   - after ancs_heap_use(storage, size), the caller's storage: every
 *     allocation of every instance is made there and none from the C
 *     library, so the engine's memory is reserved up front (a static array
 *     sized by ANCS_MICROCONTROLLER_HEAP_BOUND) and nothing else in the
 *     firmware can take it, nor can the engine take more.
 *
 * The storage is managed first fit, by address, with neighbours merged on
 * free: one header of two words per block, payloads aligned to two words
 * (8 bytes on 32-bit targets, 16 on 64-bit ones: the most the library asks
 * for). ancs_heap_peak() is the highest address ever handed out, from the
 * storage's start: with first fit by address, storage of that size would
 * have served the same history the same way, gaps included, so it is the
 * figure to size the storage by. Not locked: see ancs.h.
 */
#include <stddef.h>
#include <stdint.h>

#include "ancs.h"

/* The C library's (declared here: firmware compiles this freestanding). */
int posix_memalign(void **result, size_t alignment, size_t size);
void free(void *pointer);
/* ENOMEM in newlib, picolibc, glibc and musl; the library tests only for nonzero. */
#define OUT_OF_MEMORY 12

#define GRANULE (2 * sizeof(void *))

/* A block: its size (header included, a multiple of GRANULE) in the
 * header's first word; a free one links the next free one, by address, in
 * its second. */
typedef struct block {
    size_t size;
    struct block *next;
} block;

static unsigned char *heap_start, *heap_end;
static block *free_blocks;
static size_t in_use, high_water;

ancs_status ancs_heap_use(void *storage, size_t size) {
    if (in_use != 0) return ANCS_ERR_BUSY;
    heap_start = heap_end = NULL;
    free_blocks = NULL;
    high_water = 0;
    if (storage == NULL) return size == 0 ? ANCS_OK : ANCS_ERR_INVALID_ARGUMENT;
    uintptr_t first = ((uintptr_t)storage + GRANULE - 1) & ~(uintptr_t)(GRANULE - 1);
    uintptr_t last = ((uintptr_t)storage + size) & ~(uintptr_t)(GRANULE - 1);
    /* (Storage that wraps past the address space's end ends below its start.) */
    if (size < 4 * GRANULE || last < first + 2 * GRANULE) return ANCS_ERR_INVALID_ARGUMENT;
    heap_start = (unsigned char *)first;
    heap_end = (unsigned char *)last;
    free_blocks = (block *)heap_start;
    free_blocks->size = (size_t)(heap_end - heap_start);
    free_blocks->next = NULL;
    return ANCS_OK;
}

size_t ancs_heap_in_use(void) { return in_use; }

size_t ancs_heap_peak(void) { return high_water; }

int ancs_heap_alloc(void **result, size_t alignment, size_t size) {
    if (heap_start == NULL) return posix_memalign(result, alignment, size);
    if (alignment > GRANULE || size > (size_t)(heap_end - heap_start)) return OUT_OF_MEMORY;
    /* (A block of no bytes still has one: its pointer stays inside the storage.) */
    size_t need = (size + (size == 0) + 2 * GRANULE - 1) & ~(size_t)(GRANULE - 1);
    for (block **link = &free_blocks; *link; link = &(*link)->next) {
        block *found = *link;
        if (found->size < need) continue;
        if (found->size - need >= 2 * GRANULE) {  // split: the tail stays free
            block *rest = (block *)((unsigned char *)found + need);
            rest->size = found->size - need;
            rest->next = found->next;
            *link = rest;
            found->size = need;
        } else {
            *link = found->next;
        }
        in_use += found->size;
        size_t top = (size_t)((unsigned char *)found + found->size - heap_start);
        if (top > high_water) high_water = top;
        *result = (unsigned char *)found + GRANULE;
        return 0;
    }
    return OUT_OF_MEMORY;
}

void ancs_heap_free(void *pointer) {
    unsigned char *bytes = pointer;
    if (heap_start == NULL || bytes < heap_start || bytes >= heap_end) {
        free(pointer);  // the C library's (or NULL)
        return;
    }
    block *freed = (block *)(bytes - GRANULE);
    in_use -= freed->size;
    block *before = NULL, *after = free_blocks;
    while (after && after < freed) {
        before = after;
        after = after->next;
    }
    freed->next = after;
    if (before) before->next = freed; else free_blocks = freed;
    if (after && (unsigned char *)freed + freed->size == (unsigned char *)after) {
        freed->size += after->size;
        freed->next = after->next;
    }
    if (before && (unsigned char *)before + before->size == (unsigned char *)freed) {
        before->size += freed->size;
        before->next = freed->next;
    }
}
