/*
 * posix_memalign for C libraries that lack it (pico-sdk's newlib build,
 * some vendor libcs). The library allocates through posix_memalign and
 * frees with free (integrations/c/build.sh prints what it needs from the
 * C library); compile this file into firmware whose C library has no
 * posix_memalign, and nothing else changes.
 *
 * The library never asks for more alignment than its largest scalar's
 * (8 bytes on 32-bit targets: a 64-bit integer), and every C library's
 * malloc returns blocks aligned for any scalar (alignof(max_align_t)), so
 * malloc serves each request and free releases it. A request this cannot
 * serve with a block that free() releases (alignment above max_align_t's)
 * fails with ENOMEM, never with a block less aligned than asked; one that
 * is not a power of two times sizeof(void *) fails with EINVAL, as POSIX says.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment % sizeof(void *) != 0) return EINVAL;
    if (alignment > _Alignof(max_align_t)) return ENOMEM;
    void *block = malloc(size ? size : 1);
    if (!block) return ENOMEM;
    if ((uintptr_t)block % alignment != 0) {
        /* A malloc that breaks its own guarantee: refuse rather than misalign. */
        free(block);
        return ENOMEM;
    }
    *result = block;
    return 0;
}
