/*
 * Tests of the C API (ancs.h) against a phone simulated in C: the bytes on
 * the wire are built here by hand from docs/PROTOCOL.md, independently of
 * the Swift core. Prints one line per test and "capi: N passed, N failed";
 * exits 1 on any failure. The heap is counted through the linker's --wrap
 * of malloc, free and posix_memalign (see integrations/c/test/run.sh).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ancs.h"

/* ---- Heap accounting ---------------------------------------------------- */
void *__real_malloc(size_t);
void __real_free(void *);
int __real_posix_memalign(void **, size_t, size_t);
static long heap_peak, heap_allocations;
static size_t largest_alignment; /* the most any posix_memalign call asked for */
/* The storage the library allocates in (ancs_heap_use) while a test uses
 * it; with -DANCS_TEST_STORAGE, every test runs in it (run.sh). */
static unsigned char *storage_start, *storage_end;
static long storage_escapes; /* the library's calls to the C library's heap while storage is in use, or a block of it freed there */
static long c_heap_now; /* the C library's heap in use, as the test counts it */
static void counted(void *p) {
    if (!p) return;
    c_heap_now += (long)malloc_usable_size(p);
    heap_allocations++;
    if (c_heap_now > heap_peak) heap_peak = c_heap_now;
}
void *__wrap_malloc(size_t n) { void *p = __real_malloc(n); counted(p); return p; }
int __wrap_posix_memalign(void **p, size_t a, size_t n) {
    /* (Only the library calls posix_memalign here: the test's own code and the C library's stdio use malloc.) */
    if (storage_start) storage_escapes++;
    if (a > largest_alignment) largest_alignment = a;
    int r = __real_posix_memalign(p, a, n);
#ifndef ANCS_TEST_POSIX_MEMALIGN
    if (r == 0) counted(*p);
#endif
    /* (The replacement's blocks come from malloc, counted there.) */
    return r;
}
void __wrap_free(void *p) {
    if ((unsigned char *)p >= storage_start && (unsigned char *)p < storage_end) { storage_escapes++; return; }
    if (p) c_heap_now -= (long)malloc_usable_size(p);
    __real_free(p);
}
#ifdef ANCS_TEST_STORAGE
/* Every test in the storage: what the tests read as the heap in use is the storage's. */
#define heap_now ((long)ancs_heap_in_use())
#else
#define heap_now c_heap_now
#endif

/* ---- Checks ------------------------------------------------------------- */
static int failures_in_test;
#define CHECK(cond, ...) do { if (!(cond)) { failures_in_test++; printf("    FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
    printf(__VA_ARGS__); printf("\n"); } } while (0)

/* ---- What the consumer asked for ----------------------------------------- */
#define MAX_EVENTS 4096
typedef struct {
    ancs_event_type type;
    ancs_status status;
    uint32_t request_id, uid;
    uint8_t flags, event_id;
    bool pre_existing, has_app_name;
    ancs_session_end session_end;
    ancs_health health;
    ancs_characteristic refused;
    ancs_resubscribe_reason resubscribe_reason;
    char title[80], app_name[64], app_identifier[64], message[300];
    uint16_t title_length;
    size_t attribute_count;
} seen_event;

typedef struct {
    uint8_t bytes[600];
    size_t length;
    uint32_t token;
} write_request;

typedef struct phone phone;
typedef struct {
    ancs_consumer consumer;
    seen_event events[MAX_EVENTS];
    int event_count;
    write_request writes[64];
    int write_count;         /* queued, not yet answered */
    int writes_total;
    int subscribes[3];       /* enable requests per characteristic */
    int unsubscribes[3];
    int in_flight;           /* writes issued and not answered: must stay <= 1 */
    int max_in_flight;
    /* re-entrancy tests */
    int answer_writes_at_once;
    int deinit_in_callback;
    ancs_status deinit_result;
    int stop_on_added;       /* ancs_consumer_stop() from inside the next ADDED event */
    int stop_on_attributes;  /* ... from inside the next ATTRIBUTES event */
    int ended;               /* SESSION_ENDED seen */
    int writes_after_end;    /* Control Point writes asked after SESSION_ENDED */
    int subscribes_after_end;
    int events_after_end;    /* events after SESSION_ENDED other than REQUEST_DONE */
} harness;

static void copy_text(char *to, size_t size, const uint8_t *from, size_t length) {
    size_t n = length < size - 1 ? length : size - 1;
    if (n) memcpy(to, from, n);
    to[n] = 0;
}

static void on_subscribe(void *context, ancs_characteristic which, bool enable) {
    harness *h = context;
    if (h->ended && enable) h->subscribes_after_end++;
    if (enable) h->subscribes[which]++; else h->unsubscribes[which]++;
}

static void on_write(void *context, const uint8_t *bytes, size_t length, uint32_t token) {
    harness *h = context;
    if (h->ended) h->writes_after_end++;
    h->in_flight++;
    if (h->in_flight > h->max_in_flight) h->max_in_flight = h->in_flight;
    h->writes_total++;
    if (h->answer_writes_at_once) {
        /* a stack that reports the write's result from inside the call */
        h->in_flight--;
        ancs_consumer_write_result(&h->consumer, token, ANCS_OK, 0);
        return;
    }
    if (h->write_count < 64 && length <= sizeof h->writes[0].bytes) {
        memcpy(h->writes[h->write_count].bytes, bytes, length);
        h->writes[h->write_count].length = length;
        h->writes[h->write_count].token = token;
        h->write_count++;
    }
}

static void on_event(void *context, const ancs_event *e) {
    harness *h = context;
    if (h->deinit_in_callback) h->deinit_result = ancs_consumer_deinit(&h->consumer);
    if (h->ended && e->type != ANCS_EVENT_REQUEST_DONE) h->events_after_end++;
    if (e->type == ANCS_EVENT_SESSION_ENDED) h->ended = 1;
    if ((e->type == ANCS_EVENT_ADDED && h->stop_on_added) || (e->type == ANCS_EVENT_ATTRIBUTES && h->stop_on_attributes)) {
        h->stop_on_added = h->stop_on_attributes = 0;
        ancs_consumer_stop(&h->consumer, 0);
    }
    if (h->event_count >= MAX_EVENTS) return;
    seen_event *s = &h->events[h->event_count++];
    memset(s, 0, sizeof *s);
    s->type = e->type;
    s->status = e->status;
    s->request_id = e->request_id;
    s->uid = e->uid;
    s->flags = e->event_flags;
    s->event_id = e->event_id;
    s->pre_existing = e->pre_existing;
    s->session_end = e->session_end;
    s->health = e->health;
    s->refused = e->refused;
    s->resubscribe_reason = e->resubscribe_reason;
    s->has_app_name = e->has_app_name;
    s->attribute_count = e->attribute_count;
    if (e->has_app_name) copy_text(s->app_name, sizeof s->app_name, e->app_name, e->app_name_length);
    if (e->app_identifier) copy_text(s->app_identifier, sizeof s->app_identifier, e->app_identifier, e->app_identifier_length);
    for (size_t i = 0; i < e->attribute_count; i++) {
        const ancs_attribute *a = &e->attributes[i];
        CHECK(a->length == 0 || a->value != NULL, "attribute %u has no bytes", a->id);
        if (e->type == ANCS_EVENT_APP_ATTRIBUTES) continue;
        if (a->id == ANCS_ATTR_TITLE) { copy_text(s->title, sizeof s->title, a->value, a->length); s->title_length = a->length; }
        if (a->id == ANCS_ATTR_MESSAGE) copy_text(s->message, sizeof s->message, a->value, a->length);
        if (a->id == ANCS_ATTR_APP_IDENTIFIER && !s->app_identifier[0]) copy_text(s->app_identifier, sizeof s->app_identifier, a->value, a->length);
    }
}

static const ancs_consumer_callbacks callbacks = { on_subscribe, on_write, on_event };

static int count_events(harness *h, ancs_event_type type) {
    int n = 0;
    for (int i = 0; i < h->event_count; i++) n += h->events[i].type == type;
    return n;
}

static seen_event *find_event(harness *h, ancs_event_type type, uint32_t uid) {
    for (int i = 0; i < h->event_count; i++)
        if (h->events[i].type == type && h->events[i].uid == uid) return &h->events[i];
    return NULL;
}

static seen_event *find_done(harness *h, uint32_t request_id) {
    for (int i = 0; i < h->event_count; i++)
        if (h->events[i].type == ANCS_EVENT_REQUEST_DONE && h->events[i].request_id == request_id) return &h->events[i];
    return NULL;
}

/* ---- The phone ------------------------------------------------------------ */
struct phone {
    uint16_t mtu;
    uint64_t now;
    size_t chunk;       /* Data Source fragment size; 0: MTU - 3 */
    int unknown_apps;   /* answer 0xA2 to Get App Attributes */
    int wrong_uid;      /* answer Get Notification Attributes with uid + 1 (once) */
};

static const char *app_of(uint32_t uid) {
    static const char *apps[] = { "com.apple.MobileSMS", "com.apple.mobilemail", "com.example.bike", "com.apple.mobilephone", "net.whatsapp.WhatsApp" };
    return apps[uid % 5];
}
static const char *name_of(const char *app) {
    if (!strcmp(app, "com.apple.MobileSMS")) return "Messages";
    if (!strcmp(app, "com.apple.mobilemail")) return "Mail";
    if (!strcmp(app, "com.example.bike")) return "Bike";
    if (!strcmp(app, "com.apple.mobilephone")) return "Phone";
    return "WhatsApp";
}

static void put_tuple(uint8_t *out, size_t *n, uint8_t id, const char *value, size_t length) {
    out[(*n)++] = id;
    out[(*n)++] = length & 0xff;
    out[(*n)++] = length >> 8;
    memcpy(out + *n, value, length);
    *n += length;
}

static void send_notification(harness *h, phone *p, uint8_t event, uint8_t flags, uint8_t category, uint32_t uid) {
    uint8_t ns[8] = { event, flags, category, 1, uid & 0xff, (uid >> 8) & 0xff, (uid >> 16) & 0xff, uid >> 24 };
    CHECK(ancs_consumer_notification_source(&h->consumer, ns, 8, p->now) == ANCS_OK, "notification source");
}

static void deliver(harness *h, phone *p, const uint8_t *bytes, size_t length) {
    size_t step = p->chunk ? p->chunk : (size_t)(p->mtu - 3);
    for (size_t at = 0; at < length; at += step) {
        size_t n = length - at < step ? length - at : step;
        CHECK(ancs_consumer_data_source(&h->consumer, bytes + at, n, p->now) == ANCS_OK, "data source");
    }
}

/* Builds the phone's response to a Control Point command; returns its length, or 0 if none follows. */
static size_t respond(phone *p, const uint8_t *cmd, size_t length, uint8_t *out, ancs_status *result) {
    size_t n = 0;
    *result = ANCS_OK;
    if (length >= 6 && cmd[0] == 0) {
        uint32_t uid = cmd[1] | cmd[2] << 8 | cmd[3] << 16 | (uint32_t)cmd[4] << 24;
        uint32_t answered = uid;
        if (p->wrong_uid) { answered = uid + 1; p->wrong_uid = 0; }
        if (uid >= 100000) { *result = ANCS_ATT_INVALID_PARAMETER; return 0; }
        out[n++] = 0;
        out[n++] = answered & 0xff; out[n++] = (answered >> 8) & 0xff; out[n++] = (answered >> 16) & 0xff; out[n++] = answered >> 24;
        size_t i = 5;
        while (i < length) {
            uint8_t id = cmd[i++];
            size_t max = 0xffff;
            if (id == ANCS_ATTR_TITLE || id == ANCS_ATTR_SUBTITLE || id == ANCS_ATTR_MESSAGE) { max = cmd[i] | cmd[i + 1] << 8; i += 2; }
            char value[300];
            if (id == ANCS_ATTR_APP_IDENTIFIER) snprintf(value, sizeof value, "%s", app_of(uid));
            else if (id == ANCS_ATTR_TITLE) snprintf(value, sizeof value, uid == 7 ? "Caf\xc3\xa9 \xf0\x9f\x9a\xb2 ride %u" : "Title %u", uid);
            else if (id == ANCS_ATTR_MESSAGE) snprintf(value, sizeof value, "Message of notification %u", uid);
            else if (id == ANCS_ATTR_DATE) snprintf(value, sizeof value, "20261123T2300%02u", uid % 60);
            else value[0] = 0;
            size_t vl = strlen(value);
            if (vl > max) vl = max;
            put_tuple(out, &n, id, value, vl);
        }
        return n;
    }
    if (length >= 3 && cmd[0] == 1) {
        const char *app = (const char *)cmd + 1;
        size_t al = strnlen(app, length - 1);
        if (p->unknown_apps) { *result = ANCS_ATT_INVALID_PARAMETER; return 0; }
        out[n++] = 1;
        memcpy(out + n, app, al + 1);
        n += al + 1;
        for (size_t i = 1 + al + 1; i < length; i++) {
            const char *name = name_of(app);
            put_tuple(out, &n, cmd[i], name, strlen(name));
        }
        return n;
    }
    if (length == 6 && cmd[0] == 2) {
        uint32_t uid = cmd[1] | cmd[2] << 8 | cmd[3] << 16 | (uint32_t)cmd[4] << 24;
        *result = uid % 2 ? ANCS_ATT_ACTION_FAILED : ANCS_OK;
        return 0;
    }
    *result = ANCS_ATT_UNKNOWN_COMMAND;
    return 0;
}

/* Answers every write the consumer makes, until it makes none. */
static void pump(harness *h, phone *p) {
    for (int rounds = 0; h->write_count > 0 && rounds < 100000; rounds++) {
        write_request w = h->writes[0];
        memmove(h->writes, h->writes + 1, (size_t)(h->write_count - 1) * sizeof w);
        h->write_count--;
        uint8_t out[2048];
        ancs_status result;
        size_t n = respond(p, w.bytes, w.length, out, &result);
        p->now += 5;
        h->in_flight--;
        CHECK(ancs_consumer_write_result(&h->consumer, w.token, result, p->now) == ANCS_OK, "write result");
        if (n) deliver(h, p, out, n);
    }
}

/* A new instance whose link is up: it asks for Data Source first. */
static void link_up(harness *h, phone *p, const ancs_consumer_config *config) {
    memset(h, 0, sizeof *h);
    CHECK(ancs_consumer_init(&h->consumer, config, &callbacks, h) == ANCS_OK, "init");
    CHECK(ancs_consumer_link_up(&h->consumer, p->mtu, p->now) == ANCS_OK, "link up");
    CHECK(h->subscribes[ANCS_DATA_SOURCE] == 1 && h->subscribes[ANCS_NOTIFICATION_SOURCE] == 0, "Data Source first");
}

/* ...and both subscriptions succeed: a session. */
static void start(harness *h, phone *p, const ancs_consumer_config *config) {
    link_up(h, p, config);
    ancs_consumer_subscription_result(&h->consumer, ANCS_DATA_SOURCE, ANCS_OK, p->now);
    CHECK(h->subscribes[ANCS_NOTIFICATION_SOURCE] == 1, "then Notification Source");
    ancs_consumer_subscription_result(&h->consumer, ANCS_NOTIFICATION_SOURCE, ANCS_OK, p->now);
    CHECK(count_events(h, ANCS_EVENT_SESSION_STARTED) == 1, "session started");
    CHECK(ancs_consumer_in_session(&h->consumer), "in session");
}

static harness H, H2;

/* ---- Tests ---------------------------------------------------------------- */
static void test_storage_and_arguments(void) {
    static ancs_consumer zeroed;
    CHECK(ancs_consumer_storage_size() <= sizeof(ancs_consumer), "%zu > %zu", ancs_consumer_storage_size(), sizeof(ancs_consumer));
    CHECK(ancs_consumer_link_up(&zeroed, 23, 0) == ANCS_ERR_STORAGE, "uninitialized storage is refused");
    CHECK(ancs_consumer_tick(NULL, 0) == ANCS_ERR_STORAGE, "NULL");
    ancs_consumer_callbacks partial = { on_subscribe, NULL, on_event };
    CHECK(ancs_consumer_init(&zeroed, NULL, &partial, NULL) == ANCS_ERR_INVALID_ARGUMENT, "a missing callback");
    CHECK(ancs_consumer_init(&zeroed, NULL, &callbacks, &H) == ANCS_OK, "init with defaults");
    CHECK(ancs_consumer_link_up(&zeroed, 22, 0) == ANCS_ERR_INVALID_ARGUMENT, "an MTU below 23");
    CHECK(ancs_consumer_subscription_result(&zeroed, ANCS_CONTROL_POINT, ANCS_OK, 0) == ANCS_ERR_INVALID_ARGUMENT, "Control Point has no subscription");
    CHECK(ancs_consumer_write_result(&zeroed, 1, 300, 0) == ANCS_ERR_INVALID_ARGUMENT, "result out of range");
    CHECK(ancs_consumer_perform_action(&zeroed, 1, 7, 0, NULL) == ANCS_ERR_INVALID_ARGUMENT, "action 7");
    CHECK(ancs_consumer_deinit(&zeroed) == ANCS_OK, "deinit");
    CHECK(ancs_consumer_deinit(&zeroed) == ANCS_ERR_STORAGE, "deinit twice");
    CHECK(!strcmp(ancs_status_name(ANCS_ATT_INVALID_PARAMETER), "invalid parameter (ANCS 0xA2)"), "name");
}

static void test_microcontroller_preset(void) {
    ancs_consumer_config c, d;
    ancs_consumer_config_microcontroller(&c);
    ancs_consumer_config_default(&d);
    CHECK(c.max_notifications == 16 && c.max_cached_apps == 8 && c.max_requests == 4 && c.unlimited_value_length == 128,
          "bounds: %u notifications, %u apps, %u requests, %u bytes", c.max_notifications, c.max_cached_apps, c.max_requests,
          c.unlimited_value_length);
    CHECK(c.display_attribute_count == d.display_attribute_count && c.display_attributes == d.display_attributes &&
          c.display_app_names && c.request_timeout_ms == d.request_timeout_ms && c.probe_interval_s == d.probe_interval_s,
          "otherwise the defaults");
    CHECK(ANCS_MICROCONTROLLER_HEAP_BOUND == 8192, "the stated bound");
}

/* The steady state of the microcontroller preset: notifications of one
 * app, whose name the session knows, each added, fetched, shown and
 * removed, allocate nothing. Counted per input. The events' attributes
 * reach the callback without a copy (the C layer allocates nothing), the
 * display's fetch command is written over in place, the response shares
 * the reassembler's buffer and list, reused once the callbacks are done
 * with them, and removing allocates nothing (docs: BENCHMARKS.md
 * section 8). */
static void test_steady_state_allocations(void) {
    phone p = { .mtu = 185 };
    start(&H, &p, NULL);
    pump(&H, &p);                           /* the new session's probe */
    send_notification(&H, &p, 0, 0, 4, 7);  /* the app's name asked once */
    pump(&H, &p);
    send_notification(&H, &p, 2, 0, 4, 7);
    long added = 0, answered = 0, removed = 0, heap_at_start = heap_now;
    int shown_before = count_events(&H, ANCS_EVENT_READY);
    for (uint32_t uid = 12; uid < 12 + 5 * 10; uid += 5) {  /* the same app as 7's (UID modulo 5) */
        long before = heap_allocations;
        send_notification(&H, &p, 0, 0, 4, uid);
        added += heap_allocations - before;
        before = heap_allocations;
        pump(&H, &p);
        answered += heap_allocations - before;
        before = heap_allocations;
        send_notification(&H, &p, 2, 0, 4, uid);
        removed += heap_allocations - before;
    }
    CHECK(count_events(&H, ANCS_EVENT_READY) - shown_before == 10, "10 shown");
    seen_event *ready = find_event(&H, ANCS_EVENT_READY, 12 + 5 * 9);
    CHECK(ready && ready->has_app_name && ready->attribute_count == 4 && !strcmp(ready->app_name, "Bike"),
          "shown whole, with the app's name");
    CHECK(added == 0, "Added, which writes the fetch: none: %ld in 10", added);
    CHECK(answered == 0, "its write's result and response: none: %ld in 10", answered);
    CHECK(removed == 0, "Removed, which carries the attributes to the callback: none: %ld in 10", removed);
    CHECK(heap_now == heap_at_start, "the heap in use back where it was: %ld, then %ld", heap_at_start, heap_now);
    ancs_consumer_deinit(&H.consumer);
}

/* hidden_categories, skip_silent, max_pre_existing: what the display fetches. */
static void test_display_filters(void) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    c.hidden_categories = 1u << 4;  /* Social */
    c.skip_silent = true;
    c.max_pre_existing = 3;
    phone p = { .mtu = 185 };
    long before = heap_now;
    start(&H, &p, &c);
    for (uint32_t uid = 1; uid <= 10; uid++) send_notification(&H, &p, 0, ANCS_FLAG_PRE_EXISTING, 6, uid);
    send_notification(&H, &p, 0, 0, 4, 11);                /* Social: hidden */
    send_notification(&H, &p, 0, ANCS_FLAG_SILENT, 6, 12); /* Silent: skipped */
    send_notification(&H, &p, 0, 0, 6, 13);                /* shown */
    pump(&H, &p);
    CHECK(count_events(&H, ANCS_EVENT_ADDED) == 13, "all 13 added: %d", count_events(&H, ANCS_EVENT_ADDED));
    CHECK(count_events(&H, ANCS_EVENT_READY) == 4, "the live one and 3 of the backlog shown: %d", count_events(&H, ANCS_EVENT_READY));
    CHECK(find_event(&H, ANCS_EVENT_READY, 13) && find_event(&H, ANCS_EVENT_READY, 10) && find_event(&H, ANCS_EVENT_READY, 9),
          "the live one and the newest of the backlog");
    CHECK(!find_event(&H, ANCS_EVENT_READY, 11) && !find_event(&H, ANCS_EVENT_READY, 12) && !find_event(&H, ANCS_EVENT_READY, 5),
          "not the hidden, the Silent or the older backlog");
    CHECK(count_events(&H, ANCS_EVENT_HIDDEN) == 9 && find_event(&H, ANCS_EVENT_HIDDEN, 11) && find_event(&H, ANCS_EVENT_HIDDEN, 12) &&
          find_event(&H, ANCS_EVENT_HIDDEN, 5), "each one not fetched told HIDDEN: %d", count_events(&H, ANCS_EVENT_HIDDEN));
    ancs_consumer_deinit(&H.consumer);
    CHECK(heap_now == before, "freed");
}

/* hidden_apps: a notification of a hidden app is asked for its AppIdentifier
 * alone, and nothing more; the others are fetched after it. */
static void test_hidden_apps(void) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    c.display_app_names = false;
    static const char *const hidden[] = { "com.example.bike", "net.whatsapp.WhatsApp" };
    c.hidden_apps = hidden;
    c.hidden_app_count = 2;
    phone p = { .mtu = 185 };
    long before = heap_now;
    start(&H, &p, &c);
    int writes_before = H.writes_total;
    for (uint32_t uid = 1; uid <= 5; uid++) send_notification(&H, &p, 0, 0, 6, uid);  /* 2: bike, 4: WhatsApp */
    pump(&H, &p);
    CHECK(count_events(&H, ANCS_EVENT_ADDED) == 5, "all 5 added: %d", count_events(&H, ANCS_EVENT_ADDED));
    CHECK(count_events(&H, ANCS_EVENT_READY) == 3, "3 shown: %d", count_events(&H, ANCS_EVENT_READY));
    CHECK(find_event(&H, ANCS_EVENT_READY, 1) && find_event(&H, ANCS_EVENT_READY, 3) && find_event(&H, ANCS_EVENT_READY, 5),
          "the apps not hidden");
    CHECK(!find_event(&H, ANCS_EVENT_READY, 2) && !find_event(&H, ANCS_EVENT_READY, 4), "not the hidden apps'");
    CHECK(count_events(&H, ANCS_EVENT_HIDDEN) == 2 && find_event(&H, ANCS_EVENT_HIDDEN, 2) && find_event(&H, ANCS_EVENT_HIDDEN, 4),
          "the hidden apps' told HIDDEN");
    CHECK(H.writes_total - writes_before == 8, "5 AppIdentifiers, 3 fetches: %d writes", H.writes_total - writes_before);
    /* The steady state with apps hidden: each notification's AppIdentifier,
     * fetched alone, is kept by the model until its display fetch (the app
     * filter reads it), so responses are not lent (ancs.h "Memory"). */
    for (uint32_t uid = 1; uid <= 5; uid++) send_notification(&H, &p, 2, 0, 6, uid);
    long allocations = heap_allocations;
    for (uint32_t uid = 11; uid < 61; uid += 5) {  /* the app of UID 1 */
        send_notification(&H, &p, 0, 0, 6, uid);
        pump(&H, &p);
        send_notification(&H, &p, 2, 0, 6, uid);
    }
    CHECK(find_event(&H, ANCS_EVENT_READY, 56), "shown");
#ifndef ANCS_TEST_STORAGE
    long per_notification = (heap_allocations - allocations) / 10;
    printf("    hidden apps: %ld heap allocations per notification added, fetched (AppIdentifier alone, then shown) and removed\n", per_notification);
    CHECK(per_notification <= 7, "at most 7 heap allocations per notification (the figure in ancs.h): %ld", per_notification);
#else
    (void)allocations;
#endif
    ancs_consumer_deinit(&H.consumer);
    CHECK(heap_now == before, "freed");
    c.hidden_apps = NULL;
    CHECK(ancs_consumer_init(&H.consumer, &c, &callbacks, &H) == ANCS_ERR_INVALID_ARGUMENT, "a count without a list");
    static const char *const with_null[] = { "com.example.bike", NULL };
    c.hidden_apps = with_null;
    CHECK(ancs_consumer_init(&H.consumer, &c, &callbacks, &H) == ANCS_ERR_INVALID_ARGUMENT, "a NULL AppIdentifier");
}

/* A name kept by the firmware is not asked for again. */
static void test_app_name_kept(void) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    phone p = { .mtu = 185 };
    start(&H, &p, &c);
    const char *name = "Messages (kept)";
    CHECK(ancs_consumer_add_app_name(&H.consumer, NULL, 3, NULL, 0) == ANCS_ERR_INVALID_ARGUMENT, "NULL identifier");
    int before_writes = H.writes_total;
    send_notification(&H, &p, 0, 0, 4, 7);
    pump(&H, &p);
    seen_event *ready = find_event(&H, ANCS_EVENT_READY, 7);
    CHECK(ready && ready->has_app_name, "shown with a name");
    int asked = H.writes_total - before_writes;
    char app[64] = "";
    if (ready) memcpy(app, ready->app_identifier, sizeof app);
    CHECK(app[0] != 0, "its AppIdentifier");
    /* again in a new session, with the name given at its start */
    ancs_consumer_link_down(&H.consumer, p.now);
    H.event_count = 0;
    CHECK(ancs_consumer_link_up(&H.consumer, p.mtu, p.now) == ANCS_OK, "link up again");
    ancs_consumer_subscription_result(&H.consumer, ANCS_DATA_SOURCE, ANCS_OK, p.now);
    ancs_consumer_subscription_result(&H.consumer, ANCS_NOTIFICATION_SOURCE, ANCS_OK, p.now);
    pump(&H, &p);  /* the new session's probe, answered */
    CHECK(ancs_consumer_add_app_name(&H.consumer, (const uint8_t *)app, strlen(app), (const uint8_t *)name, strlen(name)) == ANCS_OK,
          "added");
    before_writes = H.writes_total;
    send_notification(&H, &p, 0, 0, 4, 12);  /* the same app as 7's (the phone's apps go by UID modulo 5) */
    pump(&H, &p);
    ready = find_event(&H, ANCS_EVENT_READY, 12);
    CHECK(ready && ready->has_app_name && strcmp(ready->app_name, name) == 0, "the kept name: %s", ready ? ready->app_name : "none");
    CHECK(H.writes_total - before_writes == asked - 1, "one write fewer: %d then %d", asked, H.writes_total - before_writes);
    ancs_consumer_deinit(&H.consumer);
}

static void test_defaults(void) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    CHECK(c.request_timeout_ms == 10000 && c.pipelining_depth == 1 && c.max_notifications == 512 && c.max_requests == 64 &&
          c.max_cached_apps == 128 && c.unlimited_value_length == 1024 && c.display_app_names && c.refresh_on_modified, "defaults");
    CHECK(c.display_attribute_count == 4 && c.display_attributes[1].id == ANCS_ATTR_TITLE && c.display_attributes[1].max_length == 64 &&
          c.display_attributes[2].id == ANCS_ATTR_MESSAGE && c.display_attributes[2].max_length == 256, "display attributes");
}

/* A configuration left zero-initialised (but for what to show) works as the
 * defaults do: a zero timeout is not 1 ms, a zero length bound does not refuse
 * every AppIdentifier and Date, a zero bound on notifications does not keep
 * only one. */
static void test_zero_configuration(void) {
    static const ancs_attribute_request unbounded[] = { { ANCS_ATTR_APP_IDENTIFIER, 0 }, { ANCS_ATTR_DATE, 0 } };
    ancs_consumer_config c;
    memset(&c, 0, sizeof c);
    c.display_attributes = unbounded;
    c.display_attribute_count = 2;
    phone p = { .mtu = 23 };
    start(&H, &p, &c);
    send_notification(&H, &p, 0, 0, 4, 21);
    CHECK(ancs_consumer_tick(&H.consumer, p.now + 5) == ANCS_OK, "tick");
    CHECK(count_events(&H, ANCS_EVENT_DISPLAY_FAILED) == 0, "nothing timed out 5 ms after its write");
    for (uint32_t uid = 22; uid <= 23; uid++) send_notification(&H, &p, 0, 0, 4, uid);
    pump(&H, &p);
    CHECK(count_events(&H, ANCS_EVENT_DISPLAY_FAILED) == 0, "no response refused as too long");
    CHECK(count_events(&H, ANCS_EVENT_REMOVED) == 0, "no notification dropped from the model");
    for (uint32_t uid = 21; uid <= 23; uid++) {
        seen_event *r = find_event(&H, ANCS_EVENT_READY, uid);
        CHECK(r && !strcmp(r->app_identifier, app_of(uid)), "notification %u ready with its AppIdentifier", uid);
    }
    /* The table bounds are the microcontroller preset's: 16 notifications kept. */
    for (uint32_t uid = 24; uid <= 40; uid++) send_notification(&H, &p, 0, 0, 4, uid);
    CHECK(count_events(&H, ANCS_EVENT_REMOVED) == 4, "%d of 20 dropped by the model (16 kept)", count_events(&H, ANCS_EVENT_REMOVED));
    ancs_consumer_deinit(&H.consumer);
    /* NULL is that preset too: 16 kept, an AppIdentifier over 128 bytes refused. */
    start(&H, &p, NULL);
    for (uint32_t uid = 1; uid <= 20; uid++) send_notification(&H, &p, 0, 0, 4, uid);
    CHECK(count_events(&H, ANCS_EVENT_REMOVED) == 4, "NULL: %d of 20 dropped by the model (16 kept)", count_events(&H, ANCS_EVENT_REMOVED));
    ancs_consumer_deinit(&H.consumer);
}

static void test_ready_one_byte_at_a_time(void) {
    phone p = { .mtu = 23, .chunk = 1 };
    start(&H, &p, NULL);
    send_notification(&H, &p, 0, ANCS_FLAG_POSITIVE_ACTION | ANCS_FLAG_NEGATIVE_ACTION, 4, 7);
    CHECK(find_event(&H, ANCS_EVENT_ADDED, 7) != NULL, "added");
    CHECK(H.write_count == 1, "one fetch written");
    static const uint8_t expected[] = { 0, 7, 0, 0, 0, 0, 1, 64, 0, 3, 0, 1, 5 };
    CHECK(H.writes[0].length == sizeof expected && !memcmp(H.writes[0].bytes, expected, sizeof expected), "Get Notification Attributes bytes");
    pump(&H, &p);
    seen_event *r = find_event(&H, ANCS_EVENT_READY, 7);
    CHECK(r != NULL, "ready after a response split one byte at a time");
    if (r) {
        CHECK(!strcmp(r->title, "Caf\xc3\xa9 \xf0\x9f\x9a\xb2 ride 7"), "title bytes as sent: %s", r->title);
        CHECK(r->has_app_name && !strcmp(r->app_name, "Bike"), "app name: %s", r->app_name);
        CHECK(!strcmp(r->app_identifier, "com.example.bike"), "app id");
        CHECK(r->attribute_count == 4, "4 attributes");
        CHECK(r->flags == (ANCS_FLAG_POSITIVE_ACTION | ANCS_FLAG_NEGATIVE_ACTION), "flags");
    }
    CHECK(H.writes_total == 2, "the fetch and one app name: %d", H.writes_total);
    /* a second notification of the same app: no second app-name request */
    send_notification(&H, &p, 0, 0, 4, 12);
    pump(&H, &p);
    CHECK(find_event(&H, ANCS_EVENT_READY, 12) && find_event(&H, ANCS_EVENT_READY, 12)->has_app_name, "ready, name from the cache");
    CHECK(H.writes_total == 3, "app name asked once per session: %d writes", H.writes_total);
    CHECK(H.max_in_flight == 1, "one write at a time");
    ancs_consumer_deinit(&H.consumer);
}

static void test_cut_inside_utf8(void) {
    ancs_attribute_request title = { ANCS_ATTR_TITLE, 6 };  /* "Café 🚲": cut inside the bicycle */
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    c.display_attributes = &title;
    c.display_attribute_count = 1;
    phone p = { .mtu = 23 };
    start(&H, &p, &c);
    send_notification(&H, &p, 0, 0, 4, 7);
    pump(&H, &p);
    seen_event *r = find_event(&H, ANCS_EVENT_READY, 7);
    CHECK(r && r->title_length == 6 && !memcmp(r->title, "Caf\xc3\xa9 ", 6), "6 bytes as sent");
    CHECK(r && !r->has_app_name, "no AppIdentifier asked: no name");
    ancs_consumer_deinit(&H.consumer);
}

static void test_hundred_at_connection(int mtu) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    c.max_notifications = 128;
    phone p = { .mtu = (uint16_t)mtu };
    long before = heap_now;
    heap_peak = heap_now;
    start(&H, &p, &c);
    for (uint32_t uid = 1000; uid < 1100; uid++) send_notification(&H, &p, 0, ANCS_FLAG_PRE_EXISTING, 1, uid);
    /* a live one arrives during the backlog, and the user acts on one */
    pump(&H, &p);
    int ready = count_events(&H, ANCS_EVENT_READY);
    CHECK(ready == 100, "all 100 shown at MTU %d: %d", mtu, ready);
    int named = 0;
    for (int i = 0; i < H.event_count; i++) named += H.events[i].type == ANCS_EVENT_READY && H.events[i].has_app_name;
    CHECK(named == 100, "every one with its app's name: %d", named);
    CHECK(H.writes_total == 105, "100 fetches and 5 app names: %d writes", H.writes_total);
    CHECK(H.max_in_flight == 1, "one write at a time");
    CHECK(count_events(&H, ANCS_EVENT_DISPLAY_FAILED) == 0, "none failed");
#ifndef ANCS_TEST_STORAGE /* (the C library's heap: not used then) */
    printf("    heap at MTU %d: peak %ld bytes above the start, %ld in use with 100 notifications\n", mtu, heap_peak - before, heap_now - before);
#endif
    ancs_consumer_deinit(&H.consumer);
    CHECK(heap_now == before, "deinit frees everything: %ld bytes left", heap_now - before);
}

static void test_bounded_by_configuration(void) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    c.max_notifications = 16;
    c.max_requests = 4;
    phone p = { .mtu = 185 };
    long before = heap_now;
    heap_peak = heap_now;
    start(&H, &p, &c);
    /* a hostile phone: 2 000 notifications, never answering */
    for (uint32_t uid = 0; uid < 2000; uid++) send_notification(&H, &p, 0, 0, 1, uid);
    CHECK(count_events(&H, ANCS_EVENT_REMOVED) == 2000 - 16, "the oldest dropped beyond max_notifications: %d", count_events(&H, ANCS_EVENT_REMOVED));
    uint32_t id;
    int refused = 0;
    for (int i = 0; i < 10; i++)
        refused += ancs_consumer_fetch_attributes(&H.consumer, 1999, c.display_attributes, 2, p.now, &id) == ANCS_ERR_TOO_MANY_REQUESTS;
    CHECK(refused == 6, "max_requests 4: %d of 10 refused", refused);
    long peak = heap_peak - before;
#ifndef ANCS_TEST_STORAGE /* (the C library's heap: not used then) */
    printf("    heap with 16 notifications kept of 2 000: peak %ld bytes\n", peak);
#endif
    CHECK(peak < 16 * 1024, "bounded: %ld", peak);
    ancs_consumer_deinit(&H.consumer);
    CHECK(heap_now == before, "freed");
}

static void test_wrong_uid(void) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    c.display_attribute_count = 0;
    phone p = { .mtu = 23, .wrong_uid = 1 };
    start(&H, &p, &c);
    send_notification(&H, &p, 0, 0, 1, 5);
    send_notification(&H, &p, 0, 0, 1, 6);
    ancs_attribute_request title = { ANCS_ATTR_TITLE, 32 };
    uint32_t first, second;
    CHECK(ancs_consumer_fetch_attributes(&H.consumer, 5, &title, 1, p.now, &first) == ANCS_OK, "fetch");
    CHECK(ancs_consumer_fetch_attributes(&H.consumer, 6, &title, 1, p.now, &second) == ANCS_OK, "fetch");
    pump(&H, &p);
    seen_event *a = find_done(&H, first), *b = find_done(&H, second);
    CHECK(a && a->status == ANCS_ERR_INVALID_RESPONSE, "the wrong answer fails its request at once: %d", a ? a->status : 0);
    CHECK(b && b->status == ANCS_OK && b->uid == 6 && !strcmp(b->title, "Title 6"), "the next one goes on");
    ancs_consumer_deinit(&H.consumer);
}

static void test_actions_and_errors(void) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    c.display_attribute_count = 0;
    phone p = { .mtu = 23 };
    start(&H, &p, &c);
    send_notification(&H, &p, 0, ANCS_FLAG_POSITIVE_ACTION | ANCS_FLAG_NEGATIVE_ACTION, 1, 2);
    send_notification(&H, &p, 0, ANCS_FLAG_NEGATIVE_ACTION, 1, 3);
    uint32_t ok, failed, unknown, missing, a2;
    CHECK(ancs_consumer_perform_action(&H.consumer, 2, ANCS_ACTION_POSITIVE, p.now, &ok) == ANCS_OK, "positive");
    CHECK(H.write_count == 1 && H.writes[0].length == 6 && H.writes[0].bytes[0] == 2 && H.writes[0].bytes[1] == 2 && H.writes[0].bytes[5] == 0, "Perform Notification Action bytes");
    CHECK(ancs_consumer_perform_action(&H.consumer, 3, ANCS_ACTION_NEGATIVE, p.now, &failed) == ANCS_OK, "negative");
    CHECK(ancs_consumer_perform_action(&H.consumer, 99, ANCS_ACTION_NEGATIVE, p.now, &unknown) == ANCS_ERR_UNKNOWN_NOTIFICATION, "unknown UID");
    CHECK(find_done(&H, unknown) && find_done(&H, unknown)->status == ANCS_ERR_UNKNOWN_NOTIFICATION, "also ends as an event");
    CHECK(ancs_consumer_perform_action(&H.consumer, 3, ANCS_ACTION_POSITIVE, p.now, &missing) == ANCS_ERR_ACTION_NOT_AVAILABLE, "not offered");
    ancs_attribute_request title = { ANCS_ATTR_TITLE, 32 };
    CHECK(ancs_consumer_fetch_attributes(&H.consumer, 100000, &title, 1, p.now, &a2) == ANCS_OK, "fetch of a UID the phone does not have");
    pump(&H, &p);
    CHECK(find_done(&H, ok) && find_done(&H, ok)->status == ANCS_OK, "performed");
    CHECK(find_done(&H, failed) && find_done(&H, failed)->status == ANCS_ATT_ACTION_FAILED, "0xA3 reported as such");
    CHECK(find_done(&H, a2) && find_done(&H, a2)->status == ANCS_ATT_INVALID_PARAMETER, "0xA2 reported as such");
    /* app attributes: unknown app */
    p.unknown_apps = 1;
    uint32_t app;
    CHECK(ancs_consumer_fetch_app_attributes(&H.consumer, (const uint8_t *)"com.nowhere", 11, NULL, 0, p.now, &app) == ANCS_OK, "app fetch");
    pump(&H, &p);
    CHECK(find_done(&H, app) && find_done(&H, app)->status == ANCS_ATT_INVALID_PARAMETER, "unknown app: 0xA2");
    p.unknown_apps = 0;
    CHECK(ancs_consumer_fetch_app_attributes(&H.consumer, (const uint8_t *)"com.example.bike", 16, NULL, 0, p.now, &app) == ANCS_OK, "app fetch");
    pump(&H, &p);
    CHECK(find_done(&H, app) && !strcmp(find_done(&H, app)->app_identifier, "com.example.bike"), "app fetch answered");
    ancs_consumer_deinit(&H.consumer);
}

static void test_link_drop_and_timeout(void) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    c.display_attribute_count = 0;
    c.request_timeout_ms = 2000;
    phone p = { .mtu = 23, .now = 1000 };
    start(&H, &p, &c);
    send_notification(&H, &p, 0, 0, 1, 1);
    ancs_attribute_request title = { ANCS_ATTR_TITLE, 64 };
    uint32_t id;
    ancs_consumer_fetch_attributes(&H.consumer, 1, &title, 1, p.now, &id);
    CHECK(H.write_count == 1, "written");
    uint64_t deadline = 0;
    CHECK(ancs_consumer_next_deadline(&H.consumer, &deadline) && deadline == 3000, "deadline 2 s after the write: %llu", (unsigned long long)deadline);
    H.in_flight--;
    ancs_consumer_write_result(&H.consumer, H.writes[0].token, ANCS_OK, 1100);
    H.write_count = 0;
    ancs_consumer_tick(&H.consumer, 2999);
    CHECK(!find_done(&H, id), "not before");
    ancs_consumer_tick(&H.consumer, 3000);
    CHECK(find_done(&H, id) && find_done(&H, id)->status == ANCS_ERR_TIMED_OUT, "timed out");
    /* a link that drops mid-response */
    ancs_consumer_fetch_attributes(&H.consumer, 1, &title, 1, 3100, &id);
    CHECK(H.write_count == 1, "written");
    H.in_flight--;
    ancs_consumer_write_result(&H.consumer, H.writes[0].token, ANCS_OK, 3110);
    static const uint8_t half[] = { 0, 1, 0, 0, 0, 1, 10, 0, 'H', 'a', 'l' };
    ancs_consumer_data_source(&H.consumer, half, sizeof half, 3120);
    ancs_consumer_link_down(&H.consumer, 3130);
    CHECK(find_done(&H, id) && find_done(&H, id)->status == ANCS_ERR_SESSION_ENDED, "ended with the session");
    seen_event *end = find_event(&H, ANCS_EVENT_SESSION_ENDED, 0);
    CHECK(end && end->session_end == ANCS_SESSION_LINK_DOWN, "session ended: link down");
    CHECK(!ancs_consumer_next_deadline(&H.consumer, &deadline), "nothing waits");
    CHECK(ancs_consumer_perform_action(&H.consumer, 1, 0, 3200, &id) == ANCS_ERR_NOT_CONNECTED, "no session");
    ancs_consumer_deinit(&H.consumer);
}

static void test_subscription_refused_and_service_changed(void) {
    phone p = { .mtu = 23 };
    link_up(&H, &p, NULL);
    ancs_consumer_subscription_result(&H.consumer, ANCS_DATA_SOURCE, ANCS_ATT_INSUFFICIENT_AUTHENTICATION, 0);
    CHECK(find_event(&H, ANCS_EVENT_DATA_SOURCE_UNAVAILABLE, 0) && find_event(&H, ANCS_EVENT_DATA_SOURCE_UNAVAILABLE, 0)->status == 5, "Data Source refused: 0x05");
    ancs_consumer_subscription_result(&H.consumer, ANCS_NOTIFICATION_SOURCE, ANCS_ATT_INSUFFICIENT_AUTHENTICATION, 0);
    seen_event *end = find_event(&H, ANCS_EVENT_SESSION_ENDED, 0);
    CHECK(end && end->session_end == ANCS_SESSION_SUBSCRIPTION_FAILED && end->status == 5, "Notification Source refused ends the session");
    /* the adapter secures the link and starts again: link_up */
    H.event_count = 0;
    ancs_consumer_link_up(&H.consumer, 23, 10);
    CHECK(H.subscribes[ANCS_DATA_SOURCE] == 2, "subscribes again");
    ancs_consumer_subscription_result(&H.consumer, ANCS_DATA_SOURCE, ANCS_OK, 10);
    ancs_consumer_subscription_result(&H.consumer, ANCS_NOTIFICATION_SOURCE, ANCS_OK, 10);
    send_notification(&H, &p, 0, 0, 1, 3);
    pump(&H, &p);
    CHECK(find_event(&H, ANCS_EVENT_READY, 3), "shown after the retry");
    ancs_consumer_service_changed(&H.consumer, false, 20);
    end = find_event(&H, ANCS_EVENT_SESSION_ENDED, 0);
    CHECK(end && end->session_end == ANCS_SESSION_SERVICE_UNPUBLISHED, "ANCS removed");
    ancs_consumer_service_changed(&H.consumer, true, 30);
    CHECK(H.subscribes[ANCS_DATA_SOURCE] == 3, "ANCS back: subscribes again");
    ancs_consumer_stop(&H.consumer, 40);
    ancs_consumer_deinit(&H.consumer);
}

static void test_reentrancy_and_instances(void) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    phone p = { .mtu = 23 };
    start(&H, &p, &c);
    start(&H2, &p, &c);
    H.answer_writes_at_once = 1;  /* write results reported from inside write_control_point */
    send_notification(&H, &p, 0, ANCS_FLAG_POSITIVE_ACTION, 1, 8);
    uint32_t id;
    CHECK(ancs_consumer_perform_action(&H.consumer, 8, ANCS_ACTION_POSITIVE, 0, &id) == ANCS_OK, "action");
    CHECK(find_done(&H, id) && find_done(&H, id)->status == ANCS_OK, "completed from inside the callback");
    CHECK(H2.event_count == 1 && count_events(&H2, ANCS_EVENT_ADDED) == 0, "the other instance saw nothing");
    H.deinit_in_callback = 1;
    send_notification(&H, &p, 2, 0, 1, 8);
    CHECK(H.deinit_result == ANCS_ERR_BUSY, "deinit refused inside a callback");
    H.deinit_in_callback = 0;
    CHECK(ancs_consumer_deinit(&H.consumer) == ANCS_OK, "deinit after");
    CHECK(ancs_consumer_deinit(&H2.consumer) == ANCS_OK, "deinit");
}

/* ancs_consumer_stop() called from inside an ADDED event: what the input had
 * computed before (the display's fetch of that notification, written after
 * the event) belongs to the session just ended and is not delivered; a
 * request already answered still ends once. */
static void test_stop_inside_a_callback(void) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    phone p = { .mtu = 23 };
    start(&H, &p, &c);
    send_notification(&H, &p, 0, 0, 1, 3);
    pump(&H, &p);
    CHECK(find_event(&H, ANCS_EVENT_READY, 3), "the first notification shown");
    H.stop_on_added = 1;
    send_notification(&H, &p, 0, 0, 1, 4);
    CHECK(H.ended, "no session ended");
    CHECK(H.writes_after_end == 0, "%d Control Point writes after the session ended", H.writes_after_end);
    CHECK(H.subscribes_after_end == 0, "%d subscriptions after the session ended", H.subscribes_after_end);
    CHECK(H.events_after_end == 0, "%d events after the session ended", H.events_after_end);
    CHECK(H.unsubscribes[ANCS_NOTIFICATION_SOURCE] == 1 && H.unsubscribes[ANCS_DATA_SOURCE] == 1, "stop unsubscribes both");
    CHECK(!ancs_consumer_in_session(&H.consumer), "no session");
    /* and the link goes on: started again, the phone's notification shown */
    CHECK(ancs_consumer_link_up(&H.consumer, p.mtu, p.now) == ANCS_OK, "started again");
    H.ended = 0;
    ancs_consumer_subscription_result(&H.consumer, ANCS_DATA_SOURCE, ANCS_OK, p.now);
    ancs_consumer_subscription_result(&H.consumer, ANCS_NOTIFICATION_SOURCE, ANCS_OK, p.now);
    send_notification(&H, &p, 0, 0x04, 1, 4);
    pump(&H, &p);
    CHECK(find_event(&H, ANCS_EVENT_READY, 4), "not shown after starting again");
    ancs_consumer_deinit(&H.consumer);

    /* Stopped from inside ATTRIBUTES, in an input whose actions go on after
     * it: the application's request that joined the display's fetch still
     * ends (its REQUEST_DONE comes next), and what follows that (the app
     * name's fetch) is not written. */
    start(&H, &p, &c);
    send_notification(&H, &p, 0, 0, 1, 5);
    send_notification(&H, &p, 0, 0, 1, 6);
    uint32_t joined;
    CHECK(ancs_consumer_fetch_attributes(&H.consumer, 5, c.display_attributes, c.display_attribute_count, p.now, &joined) == ANCS_OK,
          "the application's fetch of the notification being fetched");
    H.stop_on_attributes = 1;
    pump(&H, &p);
    CHECK(H.ended, "no session ended");
    CHECK(find_done(&H, joined) != NULL, "the joined request did not end");
    CHECK(H.writes_after_end == 0, "%d Control Point writes after the session ended", H.writes_after_end);
    CHECK(H.events_after_end == 0, "%d events after the session ended", H.events_after_end);
    ancs_consumer_deinit(&H.consumer);
}

static void test_cancel_stop_and_odd_input(void) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    c.display_attribute_count = 0;
    phone p = { .mtu = 23 };
    start(&H, &p, &c);
    send_notification(&H, &p, 0, 0, 1, 4);
    ancs_attribute_request title = { ANCS_ATTR_TITLE, 16 };
    uint32_t first, second;
    ancs_consumer_fetch_attributes(&H.consumer, 4, &title, 1, p.now, &first);
    ancs_consumer_fetch_attributes(&H.consumer, 4, &title, 1, p.now, &second);
    CHECK(ancs_consumer_cancel(&H.consumer, first, p.now) == ANCS_OK, "cancel");
    CHECK(find_done(&H, first) && find_done(&H, first)->status == ANCS_ERR_CANCELLED, "cancelled");
    pump(&H, &p);
    CHECK(find_done(&H, second) && find_done(&H, second)->status == ANCS_OK, "the identical request still answered");
    /* a Notification Source value of 7 bytes, an EventID this library does not know */
    static const uint8_t short_event[7] = { 0, 0, 1, 1, 9, 0, 0 };
    ancs_consumer_notification_source(&H.consumer, short_event, sizeof short_event, p.now);
    CHECK(count_events(&H, ANCS_EVENT_PROTOCOL_ERROR) == 1, "7 bytes: a protocol error");
    send_notification(&H, &p, 7, 0, 1, 9);
    seen_event *unknown = find_event(&H, ANCS_EVENT_UNKNOWN_EVENT, 9);
    CHECK(unknown && unknown->event_id == 7, "EventID 7 told as unknown");
    /* Data Source bytes nobody asked for */
    static const uint8_t unasked[] = { 0, 4, 0, 0, 0, 1, 1, 0, 'x' };
    int errors = count_events(&H, ANCS_EVENT_PROTOCOL_ERROR);
    ancs_consumer_data_source(&H.consumer, unasked, sizeof unasked, p.now);
    CHECK(count_events(&H, ANCS_EVENT_PROTOCOL_ERROR) == errors + 1, "an unsolicited response: a protocol error");
    CHECK(ancs_consumer_stop(&H.consumer, p.now) == ANCS_OK, "stop");
    CHECK(H.unsubscribes[ANCS_NOTIFICATION_SOURCE] == 1 && H.unsubscribes[ANCS_DATA_SOURCE] == 1, "stop unsubscribes both");
    seen_event *end = find_event(&H, ANCS_EVENT_SESSION_ENDED, 0);
    CHECK(end && end->session_end == ANCS_SESSION_UNSUBSCRIBED, "session ended: unsubscribed");
    CHECK(!ancs_consumer_in_session(&H.consumer), "no session");
    ancs_consumer_deinit(&H.consumer);
}

static void test_data_source_refused(void) {
    phone p = { .mtu = 23 };
    link_up(&H, &p, NULL);
    ancs_consumer_subscription_result(&H.consumer, ANCS_DATA_SOURCE, ANCS_ERR_TRANSPORT, 0);
    ancs_consumer_subscription_result(&H.consumer, ANCS_NOTIFICATION_SOURCE, ANCS_OK, 0);
    CHECK(ancs_consumer_in_session(&H.consumer), "a session without Data Source");
    send_notification(&H, &p, 0, 0, 1, 1);
    CHECK(find_event(&H, ANCS_EVENT_ADDED, 1), "events still come");
    CHECK(H.write_count == 0, "no fetch written");
    uint32_t id;
    ancs_attribute_request title = { ANCS_ATTR_TITLE, 16 };
    CHECK(ancs_consumer_fetch_attributes(&H.consumer, 1, &title, 1, 0, &id) == ANCS_ERR_DATA_SOURCE_UNAVAILABLE, "fetch refused at once");
    uint32_t action;
    send_notification(&H, &p, 0, ANCS_FLAG_NEGATIVE_ACTION, 1, 2);
    CHECK(ancs_consumer_perform_action(&H.consumer, 2, ANCS_ACTION_NEGATIVE, 0, &action) == ANCS_OK, "actions still work");
    ancs_consumer_deinit(&H.consumer);
}

/* Health (docs/REAL-IPHONE.md, "When notifications stop"): each state as ANCS_EVENT_HEALTH. */
static void test_health(void) {
    ancs_consumer_config c;
    ancs_consumer_config_default(&c);
    CHECK(c.probe_interval_s == 300 && c.silence_limit_s == 21600 && c.retry_interval_s == 15, "liveness defaults");
    phone p = { .mtu = 23 };
    link_up(&H, &p, &c);
    /* Data Source refused 0x05: waiting for permission, with the characteristic and the code. */
    ancs_consumer_subscription_result(&H.consumer, ANCS_DATA_SOURCE, ANCS_ATT_INSUFFICIENT_AUTHENTICATION, 0);
    seen_event *waiting = find_event(&H, ANCS_EVENT_HEALTH, 0);
    CHECK(waiting && waiting->health == ANCS_HEALTH_WAITING_FOR_PERMISSION && waiting->refused == ANCS_DATA_SOURCE && waiting->status == 5,
          "waiting for permission: Data Source, 0x05");
    ancs_consumer_subscription_result(&H.consumer, ANCS_NOTIFICATION_SOURCE, ANCS_OK, 0);
    /* Asked again after the retry interval (15 s): both subscriptions off, then on. */
    uint64_t deadline = 0;
    CHECK(ancs_consumer_next_deadline(&H.consumer, &deadline) && deadline == 15000, "retry at 15 s, got %llu", (unsigned long long)deadline);
    ancs_consumer_tick(&H.consumer, 15000);
    CHECK(H.subscribes[ANCS_DATA_SOURCE] == 2 && H.unsubscribes[ANCS_NOTIFICATION_SOURCE] == 1, "subscribed again");
    seen_event *again = NULL;
    for (int i = 0; i < H.event_count; i++)
        if (H.events[i].type == ANCS_EVENT_SESSION_ENDED) again = &H.events[i];
    CHECK(again && again->session_end == ANCS_SESSION_RESUBSCRIBING, "the session ends: subscribing again");
    H.event_count = 0;
    ancs_consumer_subscription_result(&H.consumer, ANCS_DATA_SOURCE, ANCS_OK, 15100);
    seen_event *healthy = find_event(&H, ANCS_EVENT_HEALTH, 0);
    CHECK(healthy && healthy->health == ANCS_HEALTH_HEALTHY, "allowed: healthy");
    ancs_consumer_subscription_result(&H.consumer, ANCS_NOTIFICATION_SOURCE, ANCS_OK, 15100);
    /* The session's probe, refused 0x03 twice (sharing off): not shared. */
    H.event_count = 0;
    for (int round = 0; round < 2; round++) {
        uint64_t at = 0;
        CHECK(ancs_consumer_next_deadline(&H.consumer, &at), "a probe is due");
        int before = H.write_count;
        ancs_consumer_tick(&H.consumer, at);
        CHECK(H.write_count == before + 1 && H.writes[before].bytes[0] == 0 && H.writes[before].length == 6, "the probe: GNA, AppIdentifier");
        H.in_flight--;
        ancs_consumer_write_result(&H.consumer, H.writes[before].token, ANCS_ATT_WRITE_NOT_PERMITTED, at);
    }
    seen_event *not_shared = find_event(&H, ANCS_EVENT_HEALTH, 0);
    CHECK(not_shared && not_shared->health == ANCS_HEALTH_NOT_SHARED && count_events(&H, ANCS_EVENT_HEALTH) == 1, "not shared, told once");
    /* The bond lost, told by the adapter. */
    H.event_count = 0;
    CHECK(ancs_consumer_bond_lost(&H.consumer, 40000) == ANCS_OK, "bond lost taken");
    seen_event *bond = find_event(&H, ANCS_EVENT_HEALTH, 0);
    CHECK(bond && bond->health == ANCS_HEALTH_BOND_LOST, "bond lost");
    ancs_consumer_deinit(&H.consumer);

    /* Liveness off: nothing is due in a quiet session. */
    c.probe_interval_s = ANCS_OFF;
    c.silence_limit_s = ANCS_OFF;
    start(&H, &p, &c);
    CHECK(!ancs_consumer_next_deadline(&H.consumer, &deadline), "no deadline with liveness off");
    ancs_consumer_deinit(&H.consumer);
}

/* libancs.a's allocator (src/ancs_heap.c): what the library calls in place
 * of posix_memalign and free; not in ancs.h, tested here directly. */
int ancs_heap_alloc(void **result, size_t alignment, size_t size);
void ancs_heap_free(void *pointer);

/* Storage of the caller's (ancs_heap_use): the allocator, a session in it
 * with nothing from the C library's heap, and storage too small, which traps. */
static void test_caller_storage(void) {
    static uint64_t words[64 * 1024 / 8];
    unsigned char *bytes = (unsigned char *)words, *saved_start = storage_start, *saved_end = storage_end;
    const size_t granule = 2 * sizeof(void *);
    CHECK(ancs_heap_in_use() == 0, "every earlier instance deinitialized: %zu bytes in use", ancs_heap_in_use());
    CHECK(ancs_heap_use(NULL, 5) == ANCS_ERR_INVALID_ARGUMENT, "NULL with a size");
    CHECK(ancs_heap_use(bytes, 4 * granule - 1) == ANCS_ERR_INVALID_ARGUMENT, "smaller than four headers");
    CHECK(ancs_heap_use(bytes, sizeof words) == ANCS_OK, "storage");
    storage_start = bytes;
    storage_end = bytes + sizeof words;
    long escapes = storage_escapes;

    /* The allocator: blocks aligned to two words, first fit, split and merged. */
    void *a = NULL, *b = NULL, *c = NULL, *d = NULL, *refused = NULL;
    CHECK(ancs_heap_alloc(&a, 8, 10) == 0 && ancs_heap_alloc(&b, granule, 100) == 0 && ancs_heap_alloc(&c, 1, 1) == 0, "three blocks");
    CHECK((unsigned char *)a == bytes + granule, "the first after its header");
    CHECK((uintptr_t)a % granule == 0 && (uintptr_t)b % granule == 0 && (uintptr_t)c % granule == 0, "aligned to two words");
    CHECK(ancs_heap_alloc(&refused, 2 * granule, 8) != 0 && !refused, "more alignment than two words: refused");
    size_t three = ancs_heap_in_use();
    CHECK(three == ancs_heap_peak() && (unsigned char *)c + granule == bytes + three, "in use: the three with their headers, %zu", three);
    CHECK(ancs_heap_use(bytes, sizeof words) == ANCS_ERR_BUSY && ancs_heap_use(NULL, 0) == ANCS_ERR_BUSY, "not while blocks are in use");
    ancs_heap_free(b);
    CHECK(ancs_heap_alloc(&d, 8, 50) == 0 && d == b, "first fit: the hole the freed block left");
    CHECK(ancs_heap_peak() == three, "the peak: the highest block's end");
    ancs_heap_free(a);
    ancs_heap_free(c);
    ancs_heap_free(d);
    CHECK(ancs_heap_in_use() == 0, "all free");
    void *whole = NULL;
    CHECK(ancs_heap_alloc(&whole, 8, sizeof words - granule) == 0 && whole == bytes + granule, "merged again: one block holds all of it");
    ancs_heap_free(whole);
    CHECK(ancs_heap_alloc(&refused, 8, sizeof words) != 0 && !refused, "more than the storage: refused");
    ancs_heap_free(NULL);

    /* A session in it: 100 notifications shown, nothing from the C library's heap. */
    CHECK(ancs_heap_use(bytes, sizeof words) == ANCS_OK, "storage again: its peak from zero");
    phone p = { .mtu = 23 };
    start(&H, &p, NULL);
    pump(&H, &p);
    for (uint32_t uid = 1; uid <= 100; uid++) {
        send_notification(&H, &p, 0, uid % 3 ? 0 : ANCS_FLAG_PRE_EXISTING, 4, uid);
        pump(&H, &p);
    }
    CHECK(count_events(&H, ANCS_EVENT_READY) == 100, "100 shown: %d", count_events(&H, ANCS_EVENT_READY));
    CHECK(ancs_heap_in_use() > 0 && ancs_heap_use(NULL, 0) == ANCS_ERR_BUSY, "the instance's tables in it");
    CHECK(ancs_consumer_deinit(&H.consumer) == ANCS_OK, "deinit");
    CHECK(ancs_heap_in_use() == 0, "deinit gives all of it back: %zu", ancs_heap_in_use());
    CHECK(storage_escapes == escapes, "nothing from the C library's heap: %ld", storage_escapes - escapes);
    printf("    storage needed: %zu bytes (100 notifications at MTU 23, microcontroller preset, this host)\n", ancs_heap_peak());

    /* Too small for an instance: an allocation fails, and the library traps (ancs.h "Memory"). */
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        static uint64_t small[16];
        if (ancs_heap_use(small, sizeof small) != ANCS_OK) _exit(2);
        memset(&H2, 0, sizeof H2);
        ancs_consumer_init(&H2.consumer, NULL, &callbacks, &H2);
        phone q = { .mtu = 185 };
        start(&H2, &q, NULL);
        _exit(0);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child, "the child");
    CHECK(WIFSIGNALED(status) && (WTERMSIG(status) == SIGILL || WTERMSIG(status) == SIGTRAP),
          "storage too small: the library traps (wait status %d)", status);

    /* Back to the suite's heap. */
    storage_start = saved_start;
    storage_end = saved_end;
    CHECK(ancs_heap_use(saved_start, (size_t)(saved_end - saved_start)) == ANCS_OK, "the suite's heap again");
}

/* The library asks for no more alignment than malloc gives every block
 * (ancs_posix_memalign.c serves it with malloc). Run last, after every other
 * test has allocated. Built with -DANCS_TEST_POSIX_MEMALIGN, the test binary
 * links integrations/c/src/ancs_posix_memalign.c in place of the C library's:
 * every test above ran on it, and its refusals are checked here. */
static void test_alignment(void) {
#ifdef ANCS_TEST_STORAGE
    CHECK(storage_escapes == 0, "every test in the storage: nothing from the C library's heap: %ld", storage_escapes);
    CHECK(largest_alignment == 0, "posix_memalign never called: %zu", largest_alignment);
#else
    CHECK(largest_alignment > 0 && largest_alignment <= _Alignof(max_align_t),
          "asked for %zu-byte alignment; malloc gives %zu", largest_alignment, (size_t)_Alignof(max_align_t));
#endif
#ifdef ANCS_TEST_POSIX_MEMALIGN
    void *block = NULL;
    CHECK(__real_posix_memalign(&block, sizeof(void *), 10) == 0 && block && (uintptr_t)block % sizeof(void *) == 0, "a block");
    free(block);
    block = NULL;
    CHECK(__real_posix_memalign(&block, _Alignof(max_align_t), 0) == 0 && block, "size 0: a block free() takes");
    free(block);
    block = NULL;
    CHECK(__real_posix_memalign(&block, 3, 10) == EINVAL && !block, "not a power of two: EINVAL");
    CHECK(__real_posix_memalign(&block, sizeof(void *) / 2, 10) == EINVAL && !block, "below sizeof(void *): EINVAL");
    CHECK(__real_posix_memalign(&block, 4 * _Alignof(max_align_t), 10) == ENOMEM && !block,
          "more than malloc's alignment: ENOMEM (the replacement is the one linked)");
#endif
}

int main(void) {
    struct { const char *name; void (*run)(void); } tests[] = {
        { "storage and arguments", test_storage_and_arguments },
        { "defaults", test_defaults },
        { "the microcontroller preset", test_microcontroller_preset },
        { "the steady state's allocations, counted per input", test_steady_state_allocations },
        { "hidden categories, Silent skipped, the backlog's cap", test_display_filters },
        { "hidden apps: asked for their AppIdentifier alone, and no more", test_hidden_apps },
        { "an app's name kept by the firmware", test_app_name_kept },
        { "a zero-initialised configuration, and NULL, work as the microcontroller preset", test_zero_configuration },
        { "ready to show, a response split one byte at a time", test_ready_one_byte_at_a_time },
        { "a value cut inside a UTF-8 sequence", test_cut_inside_utf8 },
        { "100 notifications at connection, MTU 23", NULL },
        { "100 notifications at connection, MTU 185", NULL },
        { "bounded by the configuration against 2 000 notifications", test_bounded_by_configuration },
        { "a response for the wrong UID", test_wrong_uid },
        { "actions, 0xA2 and 0xA3", test_actions_and_errors },
        { "a timeout and a link that drops mid-response", test_link_drop_and_timeout },
        { "subscriptions refused, Service Changed", test_subscription_refused_and_service_changed },
        { "callbacks that call back, two instances", test_reentrancy_and_instances },
        { "stop from inside an ADDED event: nothing computed before it is delivered", test_stop_inside_a_callback },
        { "cancel, stop, a short event, an unknown EventID, unasked bytes", test_cancel_stop_and_odd_input },
        { "Data Source refused: a session without fetches", test_data_source_refused },
        { "health: refused, not shared, subscribing again, bond lost; liveness configured", test_health },
        { "storage of the caller's (ancs_heap_use): the allocator, a session, storage too small", test_caller_storage },
#ifdef ANCS_TEST_POSIX_MEMALIGN
        { "alignment asked; the posix_memalign replacement, linked", test_alignment },
#elif defined(ANCS_TEST_STORAGE)
        { "every test in the caller's storage: nothing from the C library's heap", test_alignment },
#else
        { "alignment asked", test_alignment },
#endif
    };
    int passed = 0, failed = 0;
#ifdef ANCS_TEST_STORAGE
    static uint64_t suite_storage[256 * 1024 / 8];
    if (ancs_heap_use(suite_storage, sizeof suite_storage) != ANCS_OK) return 1;
    storage_start = (unsigned char *)suite_storage;
    storage_end = storage_start + sizeof suite_storage;
#endif
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        failures_in_test = 0;
        if (tests[i].run) tests[i].run();
        else test_hundred_at_connection(strstr(tests[i].name, "185") ? 185 : 23);
        printf("%s %s\n", failures_in_test ? "FAIL" : "ok  ", tests[i].name);
        if (failures_in_test) failed++; else passed++;
    }
    printf("capi: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
