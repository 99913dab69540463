// libdbus-1 loaded at run time: see include/CDBus.h.
#include "CDBus.h"
#if defined(__linux__)
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define CDBUS_POINTER(type, name, parameters, arguments) static type (*p_##name) parameters;
CDBUS_FUNCTIONS(CDBUS_POINTER)
#undef CDBUS_POINTER

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[512];

static void load(void) {
    static const char *const names[] = {"libdbus-1.so.3", "libdbus-1.so"};
    void *library = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && library == NULL; i++) {
        library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure, "cannot load libdbus-1.so.3 (Debian: libdbus-1-3): %s", why ? why : "not found");
        return;
    }
#define CDBUS_RESOLVE(type, name, parameters, arguments) \
    if ((p_##name = (type (*) parameters)dlsym(library, #name)) == NULL) { \
        snprintf(failure, sizeof failure, "libdbus-1.so.3 has no %s", #name); \
        return; \
    }
    CDBUS_FUNCTIONS(CDBUS_RESOLVE)
#undef CDBUS_RESOLVE
}

int cdbus_load(char *reason, size_t length) {
    pthread_once(&once, load);
    if (failure[0] == 0) return 1;
    if (reason != NULL && length > 0) {
        strncpy(reason, failure, length - 1);
        reason[length - 1] = 0;
    }
    return 0;
}

#define CDBUS_DEFINE(type, name, parameters, arguments) \
    type c##name parameters { return (type)p_##name arguments; }
CDBUS_FUNCTIONS(CDBUS_DEFINE)
#undef CDBUS_DEFINE

#endif // __linux__
