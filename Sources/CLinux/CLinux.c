#include "CLinux.h"
#if defined(__linux__)
#include <sys/prctl.h>

// Best effort: a kernel without the option leaves the process as it was.
__attribute__((constructor)) static void clinux_disable_transparent_huge_pages(void) {
  (void)prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
}
#endif
