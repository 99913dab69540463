// Which fault the self-check image shows (firmware/selfcheck.sh sets it).
#ifndef FW_FAULT
#error "FW_FAULT must be defined"
#endif
int fw_fault_mode(void) { return FW_FAULT; }
