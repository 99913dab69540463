// The host side of entry-driver.c: stdio instead of semihosting.
#include <stdint.h>
#include <stdio.h>

void firmware_main(void);

void fw_puts(const char *text) { fputs(text, stdout); }

void fw_put_uint(uint64_t value) { printf("%llu", (unsigned long long)value); }

int main(void) {
  firmware_main();
  return 0;
}
