// Drives the consumer footprint build (firmware/entry/consumer-entry.swift:
// the Consumer with eager attributes and app names, reached only through
// ancs_consumer_input) through a whole session at MTU 23, printing the
// running action count after each input. The same file is built for the host
// (FW_HOST); the firmware's output must equal the host's.
#include <stddef.h>
#include <stdint.h>

#include "firmware.h"

extern int32_t ancs_consumer_input(void *storage, int32_t kind, const uint8_t *bytes, intptr_t count, int64_t milliseconds);

enum {
  MAKE = -1, LINK_UP = 0, DATA_SOURCE_SUBSCRIBED = 1, NOTIFICATION_SOURCE_SUBSCRIBED = 2, NOTIFICATION_SOURCE = 3,
  DATA_SOURCE = 4, WRITE_COMPLETED = 5, PERFORM_ACTION = 8, LINK_DOWN = 9, TICK = 10,
};

static int64_t clock_ms;
// The consumer lives here: storage the caller provides, as with the C API.
static _Alignas(16) uint8_t consumer_storage[1024];
// consumer-entry.swift reads `count` bytes for every kind, also where count
// is a number (an MTU, a write token): give it readable bytes then.
static const uint8_t spare[32];

static void input(const char *what, int32_t kind, const uint8_t *bytes, intptr_t count) {
  clock_ms += 10;
  int32_t total = ancs_consumer_input(consumer_storage, kind, bytes ? bytes : spare, count, clock_ms);
  fw_puts(what);
  fw_puts(": ");
  fw_put_uint((uint64_t)total);
  fw_puts("\n");
}

// A response as an NP builds it, sent in MTU 23 notifications (20 bytes).
static uint8_t response[128];
static size_t response_length;

static void response_start(const uint8_t *header, size_t length) {
  response_length = 0;
  for (size_t i = 0; i < length; i++) response[response_length++] = header[i];
}

static void response_text(const char *text) {
  while (*text) response[response_length++] = (uint8_t)*text++;
}

static void response_tuple(uint8_t id, const char *value) {
  size_t length = 0;
  while (value[length]) length++;
  response[response_length++] = id;
  response[response_length++] = (uint8_t)length;
  response[response_length++] = (uint8_t)(length >> 8);
  response_text(value);
}

static void response_send(const char *what) {
  for (size_t at = 0; at < response_length; at += 20) {
    size_t length = response_length - at < 20 ? response_length - at : 20;
    input(what, DATA_SOURCE, response + at, (intptr_t)length);
  }
}

// Get App Attributes response: CommandID 1, the AppIdentifier with its NUL, DisplayName.
static void app_response(const char *identifier, const char *name) {
  static const uint8_t command[] = {1};
  response_start(command, 1);
  response_text(identifier);
  response[response_length++] = 0;
  response_tuple(0, name);
}

void firmware_main(void) {
#ifndef FW_HOST
  fw_stack_mark();
  size_t baseline = fw_heap_mark();
  size_t requested_baseline = fw_heap_requested();
  uint64_t start = fw_instructions();
#endif
  static const uint8_t sms_added[] = {0x00, 0x04, 0x04, 0x01, 0x02, 0x00, 0x00, 0x00};  // PreExisting, social, uid 2
  static const uint8_t call_added[] = {0x00, 0x10, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00};  // NegativeAction, incoming call, uid 1
  static const uint8_t call_removed[] = {0x02, 0x10, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00};
  static const uint8_t sms_header[] = {0x00, 0x02, 0x00, 0x00, 0x00};
  static const uint8_t call_header[] = {0x00, 0x01, 0x00, 0x00, 0x00};

  if (ancs_consumer_input(consumer_storage, MAKE, spare, (intptr_t)sizeof consumer_storage, 0) != 0) {
    fw_puts("error: the consumer does not fit in its storage\n");
#ifndef FW_HOST
    fw_exit(FW_EXIT_CHECKS_FAILED);
#endif
    return;
  }

  input("link up, MTU 23", LINK_UP, 0, 23);
  input("Data Source subscribed", DATA_SOURCE_SUBSCRIBED, 0, 0);
  input("Notification Source subscribed", NOTIFICATION_SOURCE_SUBSCRIBED, 0, 0);
  input("PreExisting SMS, uid 2", NOTIFICATION_SOURCE, sms_added, sizeof sms_added);
  input("write 1 completed", WRITE_COMPLETED, 0, 1);
  // The bicycle's UTF-8 sequence (f0 9f 9a b2) is split across notifications.
  response_start(sms_header, sizeof sms_header);
  response_tuple(0, "com.apple.MobileSMS");
  response_tuple(1, "Alice");
  response_tuple(3, "On my way \xe2\x80\x94 5 min \xf0\x9f\x9a\xb2");
  response_tuple(5, "20140322T154200");
  response_send("SMS attributes");
  input("write 2 completed", WRITE_COMPLETED, 0, 2);
  app_response("com.apple.MobileSMS", "Messages");
  response_send("app attributes");
  input("incoming call, uid 1", NOTIFICATION_SOURCE, call_added, sizeof call_added);
  input("write 3 completed", WRITE_COMPLETED, 0, 3);
  response_start(call_header, sizeof call_header);
  response_tuple(0, "com.apple.mobilephone");
  response_tuple(1, "Mum");
  response_tuple(3, "");
  response_tuple(5, "20240506T113000");
  response_send("call attributes");
  input("write 4 completed", WRITE_COMPLETED, 0, 4);
  app_response("com.apple.mobilephone", "Phone");
  response_send("app attributes");
  input("decline uid 1", PERFORM_ACTION, 0, 1);
  input("write 5 completed", WRITE_COMPLETED, 0, 5);
  input("call removed", NOTIFICATION_SOURCE, call_removed, sizeof call_removed);
  input("tick", TICK, 0, 0);
  input("link down", LINK_DOWN, 0, 0);
  fw_puts("done\n");
#ifndef FW_HOST
  uint64_t spent = fw_instructions() - start;
  size_t heap = fw_heap_peak() - baseline, stack = fw_stack_peak();
  size_t requested = fw_heap_requested_peak() - requested_baseline;
  fw_puts("# session: heap peak ");
  fw_put_uint(heap);
  fw_puts(" B (");
  fw_put_uint(requested);
  fw_puts(" B asked for), stack peak ");
  fw_put_uint(stack);
  fw_puts(" B, ");
  fw_put_uint(spent);
  fw_puts(" instructions\n");
  fw_put_figure("session_heap_peak", heap);
  fw_put_figure("session_heap_requested_peak", requested);
  fw_put_figure("session_stack_peak", stack);
  fw_put_figure("session_instructions", spent);
  if (heap > fw_session_heap_budget()) {
    fw_puts("# OVER BUDGET: session heap peak exceeds the budget of ");
    fw_put_uint(fw_session_heap_budget());
    fw_puts(" B by ");
    fw_put_uint(heap - fw_session_heap_budget());
    fw_puts(" B\n");
    fw_exit(FW_EXIT_CHECKS_FAILED);
  }
#endif
}
