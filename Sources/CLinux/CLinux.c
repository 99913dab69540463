#if defined(__linux__)
#include "CLinux.h"
#include <sys/prctl.h>

int clinux_disable_transparent_huge_pages(void) {
  return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
}
#endif
