// Semihosting: the debugger (here QEMU with -semihosting-config enable=on)
// services a trap instruction on the target's behalf. Only the calls the
// firmware images use.
#ifndef FW_SEMIHOSTING_H
#define FW_SEMIHOSTING_H
#include <stdint.h>

#define SEMIHOSTING_SYS_WRITE0 0x04u
#define SEMIHOSTING_SYS_EXIT 0x18u
#define SEMIHOSTING_SYS_EXIT_EXTENDED 0x20u
// ADP_Stopped_ApplicationExit: with SYS_EXIT_EXTENDED the second word is the
// exit status, which QEMU makes its own exit status.
#define SEMIHOSTING_APPLICATION_EXIT 0x20026u

long semihosting_call(uint32_t operation, void *argument);

#endif
