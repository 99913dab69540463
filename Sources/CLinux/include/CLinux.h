// Linux process controls that Swift cannot call directly (prctl is variadic
// in C, so Glibc's overlay does not import it). Elsewhere the module is empty.
#ifndef CLINUX_H
#define CLINUX_H
#if defined(__linux__)

/// Opts the process out of transparent huge pages (prctl PR_SET_THP_DISABLE):
/// no 2 MB page backs its memory from now on, on a kernel that has them
/// "always". Inherited by child processes. Returns 0, or -1 with errno set.
int clinux_disable_transparent_huge_pages(void);

#endif
#endif
