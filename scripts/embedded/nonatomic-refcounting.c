/*
 * Non-atomic reference counting, for Embedded Swift compiled with
 * -assume-single-threaded (whole-program.sh). The compiler then calls
 * swift_nonatomic_retain/release instead of swift_retain/release, and the
 * Embedded Swift standard library defines only the atomic ones.
 *
 * The same object layout and rules as the library's own (EmbeddedRuntime):
 * a metadata pointer, then the count. The count's top bit means "do not
 * free" (an object on the stack); the other bits all set mean immortal (a
 * constant laid out statically, or an object inside its deinit): such a
 * count is never written. The last release marks the object immortal and
 * runs its destroyer, which deinitializes and frees it, as the library does.
 */
#include <stdint.h>
#include "EmbeddedShims.h"

#define COUNT_BITS INTPTR_MAX
#define DO_NOT_FREE INTPTR_MIN
#define IMMORTAL INTPTR_MAX

/* The object's count, or NULL if it is not counted: no object, an
 * immortal object, or (64-bit) the library's immortal-object pointer bit. */
static intptr_t *counted(void *object) {
  if (!object) return 0;
#if INTPTR_MAX > 0x7fffffff
  if ((uintptr_t)object >> 63) return 0;
#endif
  intptr_t *count = (intptr_t *)object + 1;
  return (*count & COUNT_BITS) == IMMORTAL ? 0 : count;
}

void *swift_nonatomic_retain_n(void *object, uint32_t n) {
  intptr_t *count = counted(object);
  if (count) *count += n;
  return object;
}

void *swift_nonatomic_retain(void *object) { return swift_nonatomic_retain_n(object, 1); }

void swift_nonatomic_release_n(void *object, uint32_t n) {
  intptr_t *count = counted(object);
  if (!count) return;
  if ((*count & COUNT_BITS) != (intptr_t)n) {
    *count -= n;
    return;
  }
  *count = IMMORTAL | (*count & DO_NOT_FREE);
  _swift_embedded_invoke_heap_object_destroy(object);
}

void swift_nonatomic_release(void *object) { swift_nonatomic_release_n(object, 1); }

/* A bridge object (a String's storage on 64-bit targets) carries flags in
 * its spare bits: cleared the same way as the library clears them. */
static void *plain(void *object) {
#if INTPTR_MAX > 0x7fffffff
  return (void *)((uintptr_t)object & 0x8ffffffffffffff8u);
#else
  return object;
#endif
}

void *swift_nonatomic_bridgeObjectRetain_n(void *object, uint32_t n) {
  swift_nonatomic_retain_n(plain(object), n);
  return object;
}

void *swift_nonatomic_bridgeObjectRetain(void *object) { return swift_nonatomic_bridgeObjectRetain_n(object, 1); }

void swift_nonatomic_bridgeObjectRelease_n(void *object, uint32_t n) { swift_nonatomic_release_n(plain(object), n); }

void swift_nonatomic_bridgeObjectRelease(void *object) { swift_nonatomic_release_n(plain(object), 1); }
