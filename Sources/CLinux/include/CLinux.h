// Process settings the `ancs` executable applies at start-up, before any
// thread exists (Linux only; elsewhere the module is empty). Nothing to call:
// the module's constructor does it, and linking the module is enough.
//
// - No transparent huge pages (prctl PR_SET_THP_DISABLE, variadic in C, so
//   Swift cannot call it): on a kernel that has them "always", a 2 MB page
//   can back one of the 8 MB thread stacks the process barely touches and
//   double its resident memory. Set before the Swift runtime starts its
//   threads: a page faulted before the opt-out stays huge.
#ifndef CLINUX_H
#define CLINUX_H
#endif
