// The worst case of a consumer session, driven through the C API (ancs.h)
// as a firmware drives it: libancs.a as integrations/c/build.sh builds it for
// the device, a NULL configuration (the microcontroller preset), and a phone
// played here that announces more notifications than the model keeps, each
// from another app, and answers every fetch with every value as long as the
// consumer accepts (the max length asked, or the preset's 128 bytes for a
// value asked without one), while the application keeps its four requests
// waiting. The heap peak must stay within ANCS_MICROCONTROLLER_HEAP_BOUND.
//
// Then the steady state: one notification's life (added, fetched, shown,
// removed) once its app is known makes no heap allocation; the count is
// printed per kind of input, and the run fails on any.
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ancs.h"
#include "firmware.h"

// The bound the worst case is held to: ancs.h's, unless a self-check builds
// the image with a lower one to see it fail (firmware/selfcheck.sh).
#ifndef CAPI_HEAP_BOUND
#define CAPI_HEAP_BOUND ANCS_MICROCONTROLLER_HEAP_BOUND
#endif

#define MTU 185
#define UNLIMITED 128  // the preset's value length for an attribute asked without a max length

// What the engine asked for, performed after the input that asked (the
// callbacks may not call back into the instance).
typedef struct {
  bool write;                    // a Control Point write; else a subscription
  ancs_characteristic characteristic;
  uint32_t token;
  uint16_t length;
  uint8_t bytes[160];
} pending_action;

static pending_action queue[16];
static size_t queue_head, queue_count;
static bool overflowed;
static unsigned shown, named, answered, failures;
static uint64_t now_ms;
// While counting the steady state: the heap allocations made by each kind
// of input (a Notification Source event, a write's result, the response's
// Data Source notifications).
static bool counting;
static size_t made_by_event, made_by_write_result, made_by_response;
// Nonzero: every notification's app is this one's ("app.<fixed_app>.").
static uint32_t fixed_app;

static void check(bool condition, const char *what) {
  fw_puts(condition ? "ok   " : "FAIL ");
  fw_puts(what);
  fw_puts("\n");
  if (!condition) failures++;
}

static pending_action *push(void) {
  if (queue_count == sizeof queue / sizeof queue[0]) {
    overflowed = true;
    return 0;
  }
  pending_action *action = &queue[(queue_head + queue_count++) % (sizeof queue / sizeof queue[0])];
  return action;
}

static void on_subscribe(void *context, ancs_characteristic characteristic, bool enable) {
  (void)context;
  if (!enable) return;  // unsubscribing needs no answer
  pending_action *action = push();
  if (!action) return;
  action->write = false;
  action->characteristic = characteristic;
}

static void on_write(void *context, const uint8_t *bytes, size_t length, uint32_t token) {
  (void)context;
  pending_action *action = push();
  if (!action) return;
  if (length > sizeof action->bytes) {
    overflowed = true;
    length = sizeof action->bytes;
  }
  action->write = true;
  action->token = token;
  action->length = (uint16_t)length;
  for (size_t i = 0; i < length; i++) action->bytes[i] = bytes[i];
}

static void on_event(void *context, const ancs_event *event) {
  (void)context;
  switch (event->type) {
  case ANCS_EVENT_READY: shown++; break;
  case ANCS_EVENT_APP_ATTRIBUTES: named++; break;
  case ANCS_EVENT_REQUEST_DONE:
    if (event->status == ANCS_OK && event->attribute_count > 0 && event->app_identifier_length == 0) answered++;
    break;
  default: break;
  }
}

static const ancs_consumer_callbacks callbacks = {on_subscribe, on_write, on_event};
static ancs_consumer consumer;

// ---- the phone

static uint8_t response[1200];
static size_t response_length;

static void put(uint8_t byte) {
  if (response_length < sizeof response) response[response_length++] = byte;
}

static size_t put_decimal(uint8_t *to, uint32_t value) {
  char digits[10];
  size_t count = 0;
  do { digits[count++] = (char)('0' + value % 10); value /= 10; } while (value);
  for (size_t i = 0; i < count; i++) to[i] = (uint8_t)digits[count - 1 - i];
  return count;
}

// The random phone (drive_random): values of any length up to the longest
// accepted, 24 apps, refusals, responses cut short.
static bool randomizing;
static uint32_t random_state;
static uint32_t next_random(void) {  // xorshift32
  random_state ^= random_state << 13;
  random_state ^= random_state >> 17;
  random_state ^= random_state << 5;
  return random_state;
}

// A value of exactly `length` bytes (of any length up to it, for the random
// phone): "app.<uid>." for an AppIdentifier, padded with 'x'.
static void put_tuple(uint8_t id, uint16_t length, uint32_t app_of_uid, const char *prefix) {
  uint8_t value[UNLIMITED > 256 ? UNLIMITED : 256];
  size_t used = 0;
  if (randomizing) {
    length = (uint16_t)(next_random() % (length + 1u));
    if (app_of_uid) app_of_uid = 1 + app_of_uid % 24;
  }
  if (app_of_uid) {
    static const uint8_t app[] = {'a', 'p', 'p', '.'};
    for (size_t i = 0; i < sizeof app; i++) value[used++] = app[i];
    used += put_decimal(value + used, app_of_uid);
    value[used++] = '.';
  }
  for (; prefix && *prefix && used < sizeof value; prefix++) value[used++] = (uint8_t)*prefix;
  if (used > length) used = length;
  put(id);
  put((uint8_t)length);
  put((uint8_t)(length >> 8));
  for (size_t i = 0; i < length; i++) put(i < used ? value[i] : 'x');
}

// The longest response to a command; false for one that has none (an action).
static bool longest_response(const uint8_t *command, size_t length) {
  response_length = 0;
  if (length < 1) return false;
  if (command[0] == 0 && length >= 5) {  // Get Notification Attributes
    uint32_t uid = (uint32_t)command[1] | (uint32_t)command[2] << 8 | (uint32_t)command[3] << 16 | (uint32_t)command[4] << 24;
    for (size_t i = 0; i < 5; i++) put(command[i]);
    for (size_t at = 5; at < length;) {
      uint8_t id = command[at++];
      uint16_t max = UNLIMITED;
      if (id >= 1 && id <= 3 && at + 2 <= length) {
        max = (uint16_t)(command[at] | command[at + 1] << 8);
        at += 2;
      }
      put_tuple(id, max, id == ANCS_ATTR_APP_IDENTIFIER ? (fixed_app ? fixed_app : uid) : 0, 0);
    }
    return true;
  }
  if (command[0] == 1) {  // Get App Attributes: the AppIdentifier with its NUL, then the IDs
    size_t at = 1;
    put(1);
    while (at < length && command[at] != 0) put(command[at++]);
    put(0);
    for (at++; at < length; at++) put_tuple(command[at], UNLIMITED, 0, "Name of ");
    return true;
  }
  return false;
}

static void send_response(void) {
  for (size_t at = 0; at < response_length; at += MTU - 3) {
    size_t length = response_length - at < MTU - 3 ? response_length - at : MTU - 3;
    ancs_consumer_data_source(&consumer, response + at, length, now_ms);
  }
}

static void announce(uint8_t event, uint8_t flags, uint32_t uid) {
  uint8_t bytes[8] = {event, flags, 4 /* social */, 1, (uint8_t)uid, (uint8_t)(uid >> 8), (uint8_t)(uid >> 16), (uint8_t)(uid >> 24)};
  size_t before = fw_heap_allocations();
  ancs_consumer_notification_source(&consumer, bytes, sizeof bytes, now_ms);
  if (counting) made_by_event += fw_heap_allocations() - before;
}

// Performs what the engine asked, oldest first, until nothing is left.
static unsigned app_names_asked;
// Nonzero: settle answers at most this many writes (the random phone, slow).
static unsigned settle_limit;

// The random phone's answer to a write: an app it does not know (a quarter
// of them), a command it refuses, a response cut short (the request times
// out, or the next response runs into it). (Out of line: the worst case's
// stack figure is the engine's under settle's frame, not this one's.)
__attribute__((noinline)) static void answer_randomly(const pending_action *action) {
  uint32_t roll = next_random() % 32;
  if ((action->bytes[0] == 1 && roll < 8) || roll == 8) {
    ancs_consumer_write_result(&consumer, action->token, roll == 8 ? ANCS_ATT_INVALID_COMMAND : ANCS_ATT_INVALID_PARAMETER, now_ms);
    return;
  }
  ancs_consumer_write_result(&consumer, action->token, ANCS_OK, now_ms);
  if (longest_response(action->bytes, action->length)) {
    if (roll == 9) response_length /= 2;
    send_response();
  }
}
static bool settle(unsigned *turns) {
  while (queue_count > 0) {
    if (++*turns > 10000) return false;
    now_ms += 20;
    pending_action action = queue[queue_head];
    queue_head = (queue_head + 1) % (sizeof queue / sizeof queue[0]);
    queue_count--;
    if (!action.write) {
      ancs_consumer_subscription_result(&consumer, action.characteristic, ANCS_OK, now_ms);
      continue;
    }
    // The phone knows the first 32 apps asked for by name, not the last 8
    // (0xA2): the app cache is full of names when the apps the phone did
    // not know take their places (one list holds both).
    if (action.length > 0 && action.bytes[0] == 1 && ++app_names_asked > 32 && !randomizing) {
      ancs_consumer_write_result(&consumer, action.token, ANCS_ATT_INVALID_PARAMETER, now_ms);
      continue;
    }
    if (randomizing) {
      answer_randomly(&action);
      if (settle_limit && --settle_limit == 0) break;
      continue;
    }
    size_t before = fw_heap_allocations();
    ancs_consumer_write_result(&consumer, action.token, ANCS_OK, now_ms);
    size_t between = fw_heap_allocations();
    if (longest_response(action.bytes, action.length)) send_response();
    if (counting) {
      made_by_write_result += between - before;
      made_by_response += fw_heap_allocations() - between;
    }
  }
  return true;
}

// The worst case, on whichever heap the library uses: init, 40
// notifications, link down (the instance stays). False if it did not settle.
static bool drive_worst_case(unsigned *turns) {
  queue_head = queue_count = 0;
  shown = named = answered = app_names_asked = 0;
  fixed_app = 0;
  // (The stack from here: the engine's use under this harness's frames.)
  fw_stack_mark();
  check(ancs_consumer_init(&consumer, 0, &callbacks, 0) == ANCS_OK, "init with a NULL configuration");
  unsigned asked = 0;
  bool settled = true;
  ancs_consumer_link_up(&consumer, MTU, now_ms);
  settled = settle(turns);
  size_t count;
  const ancs_attribute_request *display = ancs_default_display_attributes(&count);
  for (uint32_t announced = 1; settled && announced <= 40; announced++) {
    now_ms += 20;
    announce(0, announced % 2 == 0 ? (ANCS_FLAG_POSITIVE_ACTION | ANCS_FLAG_NEGATIVE_ACTION) : ANCS_FLAG_PRE_EXISTING, announced);
    if (announced > 30 && asked < 4) {
      // The application asks for the newest notification's attributes, as the display does.
      ancs_consumer_fetch_attributes(&consumer, announced - asked, display, count, now_ms, 0);
      asked++;
    }
    settled = settle(turns);
  }
  check(settled, "the session settles");
  check(!overflowed, "the phone's queue held every action");
  check(shown >= 16 && named == 32 && app_names_asked == 40 && answered == 4,
        "16 or more notifications shown, 40 app names asked (32 known, 8 refused 0xA2), 4 application requests answered");
  return settled;
}

// The steady state: a new session, one app, its name fetched once; then
// each notification added, fetched, shown and removed, counted. Returns the
// heap allocations per notification.
static size_t drive_steady_state(unsigned *turns) {
  queue_head = queue_count = 0;
  fixed_app = 1;
  made_by_event = made_by_write_result = made_by_response = 0;
  ancs_consumer_link_up(&consumer, MTU, now_ms);
  settle(turns);
  unsigned shown_before = shown;
  size_t allocations = 0, allocated_at_start = 0;
  for (uint32_t uid = 100; uid < 110; uid++) {
    if (uid == 105) {
      allocations = fw_heap_allocations();
      allocated_at_start = fw_heap_in_use();
      counting = true;
    }
    now_ms += 20;
    announce(0, 0, uid);  // added
    settle(turns);        // fetched (the app's name asked once, for the first), shown
    now_ms += 20;
    announce(2, 0, uid);  // removed
    settle(turns);
  }
  counting = false;
  check(shown - shown_before == 10, "steady state: 10 notifications shown");
  check(fw_heap_in_use() == allocated_at_start, "steady state: the heap in use is back where it was (nothing kept per notification)");
  return (fw_heap_allocations() - allocations) / 5;
}

// A random phone, in storage of the caller's: notifications added,
// removed and modified at random, values of random lengths from 24 apps,
// refusals and responses cut short, the application's requests, links that
// drop, time that passes; the phone answers late. The storage needed
// (fragmentation included) is measured over all of it.
static void drive_random(uint32_t seed, unsigned steps, unsigned *turns) {
  static const uint16_t mtus[] = {23, 64, 185, 247};
  randomizing = true;
  random_state = seed;
  queue_head = queue_count = 0;
  check(ancs_consumer_init(&consumer, 0, &callbacks, 0) == ANCS_OK, "random phone: init");
  ancs_consumer_link_up(&consumer, mtus[next_random() % 4], now_ms);
  size_t count;
  const ancs_attribute_request *display = ancs_default_display_attributes(&count);
  uint32_t uid = 1;
  for (unsigned step = 0; step < steps; step++) {
    uint32_t roll = next_random() % 100, recent = uid > 1 ? uid - 1 - next_random() % (uid - 1 < 24 ? uid - 1 : 24) : 0;
    now_ms += 20;
    if (roll < 45) {
      static const uint8_t flags[] = {0, ANCS_FLAG_PRE_EXISTING, ANCS_FLAG_SILENT, ANCS_FLAG_POSITIVE_ACTION | ANCS_FLAG_NEGATIVE_ACTION};
      announce(0, flags[next_random() % 4], uid++);
    } else if (roll < 65 && recent) {
      announce(2, 0, recent);
    } else if (roll < 72 && recent) {
      announce(1, 0, recent);
    } else if (roll < 77 && recent) {
      ancs_consumer_fetch_attributes(&consumer, recent, display, 1 + next_random() % count, now_ms, 0);
    } else if (roll < 80) {
      uint8_t app[16] = {'a', 'p', 'p', '.'};
      size_t length = 4 + put_decimal(app + 4, 1 + next_random() % 24);
      app[length++] = '.';
      ancs_consumer_fetch_app_attributes(&consumer, app, length, 0, 0, now_ms, 0);
    } else if (roll < 82 && recent) {
      ancs_consumer_perform_action(&consumer, recent, (uint8_t)(next_random() % 2), now_ms, 0);
    } else if (roll < 84) {
      ancs_consumer_link_down(&consumer, now_ms);
      settle(turns);
      queue_head = queue_count = 0;
      ancs_consumer_link_up(&consumer, mtus[next_random() % 4], now_ms);
    } else {
      now_ms += next_random() % 20000;
      ancs_consumer_tick(&consumer, now_ms);
    }
    settle_limit = next_random() % 3;  // 0: all; else that many writes, the rest later
    *turns = 0;
    settle(turns);
    settle_limit = 0;
  }
  ancs_consumer_link_down(&consumer, now_ms);
  *turns = 0;
  settle(turns);
  check(ancs_consumer_deinit(&consumer) == ANCS_OK, "random phone: deinit");
  randomizing = false;
}

// The storage of the second run (ancs_heap_use): the bound's size, unless a
// self-check builds the image with less to see it trap (firmware/selfcheck.sh).
#ifndef CAPI_STORAGE_SIZE
#define CAPI_STORAGE_SIZE CAPI_HEAP_BOUND
#endif
static uint64_t storage[CAPI_STORAGE_SIZE / sizeof(uint64_t)];
#ifndef RANDOM_SEEDS
#define RANDOM_SEEDS 8
#endif
#ifndef RANDOM_STEPS
#define RANDOM_STEPS 50000
#endif

// After a run in storage of the caller's: nothing from the C library's heap
// (which had made `from_c_library` allocations before it), all of the
// storage free after deinit, and the storage needed within the bound.
static void check_storage(size_t from_c_library) {
  check(fw_heap_allocations() == from_c_library, "in storage: no allocation from the C library's heap");
  check(ancs_heap_in_use() == 0, "in storage: all of it free after deinit");
  check(ancs_heap_peak() <= CAPI_HEAP_BOUND, "in storage: the storage needed within ANCS_MICROCONTROLLER_HEAP_BOUND");
}

void firmware_main(void) {
  fw_puts("Worst case through ancs.h, microcontroller preset (a NULL configuration): 40 notifications from 40 apps (the last 8 unknown to the phone), every value as long as accepted, 4 application requests waiting\n");
  // Measured from before init: the instance's whole heap counts.
  size_t baseline = fw_heap_mark();
  size_t requested_baseline = fw_heap_requested();
  unsigned turns = 0;
  drive_worst_case(&turns);
  size_t heap = fw_heap_peak() - baseline, stack = fw_stack_peak();
  size_t requested = fw_heap_requested_peak() - requested_baseline;
  fw_puts("# worst case through ancs.h: heap peak ");
  fw_put_uint(heap);
  fw_puts(" B (");
  fw_put_uint(requested);
  fw_puts(" B asked for), stack peak ");
  fw_put_uint(stack);
  fw_puts(" B\n");
  fw_put_figure("capi_worstcase_heap_peak", heap);
  fw_put_figure("capi_worstcase_heap_requested_peak", requested);
  fw_put_figure("capi_worstcase_stack_peak", stack);
  fw_put_figure("capi_worstcase_heap_bound", CAPI_HEAP_BOUND);
  check(heap <= CAPI_HEAP_BOUND, "heap peak within ANCS_MICROCONTROLLER_HEAP_BOUND");
  ancs_consumer_link_down(&consumer, now_ms);
  settle(&turns);

  size_t per_notification = drive_steady_state(&turns);
  check(per_notification == 0, "steady state: no heap allocation per notification");
  fw_puts("# steady state through ancs.h: ");
  fw_put_uint(per_notification);
  fw_puts(" heap allocations per notification added, fetched, shown and removed: ");
  fw_put_uint(made_by_event / 5);
  fw_puts(" in its two Notification Source events (Added, which writes its fetch, and Removed), ");
  fw_put_uint(made_by_write_result / 5);
  fw_puts(" in the write's result, ");
  fw_put_uint(made_by_response / 5);
  fw_puts(" in its response (reassembly, the model, READY)\n");
  fw_put_figure("capi_steady_allocations_per_notification", per_notification);
  fw_put_figure("capi_steady_allocations_events", made_by_event / 5);
  fw_put_figure("capi_steady_allocations_write_result", made_by_write_result / 5);
  fw_put_figure("capi_steady_allocations_response", made_by_response / 5);
  ancs_consumer_link_down(&consumer, now_ms);
  settle(&turns);
  check(ancs_consumer_deinit(&consumer) == ANCS_OK, "deinit");

  // Again, in storage of the caller's (ancs_heap_use) of the bound's size:
  // nothing from the C library's heap, and the storage needed (gaps
  // included) within it. (Skipped when the bound already failed above: a
  // self-check's lower bound; too small, the storage traps.)
  if (failures == 0) {
    fw_puts("The same, in storage of the caller's (ancs_heap_use)\n");
    check(ancs_heap_use(storage, sizeof storage) == ANCS_OK, "ancs_heap_use");
    size_t from_c_library = fw_heap_allocations();
    drive_worst_case(&turns);
    size_t worst = ancs_heap_peak();
    ancs_consumer_link_down(&consumer, now_ms);
    settle(&turns);
    drive_steady_state(&turns);
    ancs_consumer_link_down(&consumer, now_ms);
    settle(&turns);
    check(ancs_consumer_deinit(&consumer) == ANCS_OK, "deinit");
    check_storage(from_c_library);
    fw_puts("# worst case in storage of the caller's: ");
    fw_put_uint(worst);
    fw_puts(" B of it needed (headers and gaps included), ");
    fw_put_uint(ancs_heap_peak());
    fw_puts(" B with the steady state after it\n");
    fw_put_figure("capi_storage_peak", ancs_heap_peak());
    // (Its own figure: the storage given anew, its peak from zero.)
    fw_puts("The random phone, in storage of the caller's\n");
    check(ancs_heap_use(storage, sizeof storage) == ANCS_OK, "random phone: ancs_heap_use");
    unsigned shown_before = shown;
    for (uint32_t seed = 1; seed <= RANDOM_SEEDS; seed++) drive_random(seed * 2654435761u, RANDOM_STEPS, &turns);
    check(shown - shown_before > RANDOM_SEEDS * RANDOM_STEPS / 10, "random phone: notifications shown");
    check(!overflowed, "random phone: the phone's queue held every action");
    check_storage(from_c_library);
    fw_puts("# random phone (");
    fw_put_uint(RANDOM_SEEDS);
    fw_puts(" seeds, ");
    fw_put_uint(RANDOM_STEPS);
    fw_puts(" inputs each, ");
    fw_put_uint(shown - shown_before);
    fw_puts(" notifications shown): the storage needed ");
    fw_put_uint(ancs_heap_peak());
    fw_puts(" B\n");
    fw_put_figure("capi_storage_random_peak", ancs_heap_peak());
    fw_put_figure("capi_storage_random_seeds", RANDOM_SEEDS);
    fw_put_figure("capi_storage_random_inputs", RANDOM_STEPS);
    check(ancs_heap_use(0, 0) == ANCS_OK, "back to the C library's heap");
  }
  fw_puts(failures == 0 ? "PASS\n" : "FAILED\n");
  if (failures) fw_exit(FW_EXIT_CHECKS_FAILED);
}
