/*
 * Tests of ancs_parser.h: the Notification Source decoder, the Control Point
 * encoders and the Data Source parser, at their edges. The bytes on the wire
 * are built here by hand from docs/PROTOCOL.md, independently of the Swift
 * core; the errors and offsets expected are the Swift parser's
 * (Tests/ANCSTests/DataSourceParserTests.swift). Prints one line per test
 * and "parser: N passed, N failed"; exits 1 on any failure. The heap is
 * counted through the linker's --wrap of malloc, free and posix_memalign
 * (integrations/c/test/run.sh): no test may see the library allocate.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ancs_parser.h"

/* ---- Heap accounting ---------------------------------------------------- */
void *__real_malloc(size_t);
void __real_free(void *);
int __real_posix_memalign(void **, size_t, size_t);
static volatile long heap_allocations, heap_frees; /* volatile: the compiler assumes malloc changes no global */
void *__wrap_malloc(size_t n) { void *p = __real_malloc(n); if (p) heap_allocations++; return p; }
int __wrap_posix_memalign(void **p, size_t a, size_t n) {
    int r = __real_posix_memalign(p, a, n);
    if (r == 0) heap_allocations++;
    return r;
}
void __wrap_free(void *p) { if (p) heap_frees++; __real_free(p); }

/* ---- Checks ------------------------------------------------------------- */
static int failures_in_test;
#define CHECK(cond, ...) do { if (!(cond)) { failures_in_test++; printf("    FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
    printf(__VA_ARGS__); printf("\n"); } } while (0)

/* Every enum of the header is int-sized (ANCS_ENUM_INT); the storage is the same on every target. */
_Static_assert(sizeof(ancs_decode_reason) == 4 && sizeof(ancs_parser_event_type) == 4, "an enum is not int-sized");
_Static_assert(sizeof(ancs_parser) == 8 * ANCS_PARSER_STORAGE_WORDS, "ancs_parser's size");

/* ---- Bytes from docs/PROTOCOL.md ----------------------------------------- */
/* Get Notification Attributes for UID 5: AppIdentifier, Title (max 16), Message (max 32). */
static const uint8_t command_a[] = { 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x01, 0x10, 0x00, 0x03, 0x20, 0x00 };
/* Its response: AppIdentifier "com.apple.MobileSMS" (19 bytes), Title "Alice" (5),
 * Message "On my way " and a bicycle, U+1F6B2, F0 9F 9A B2 (14): 52 bytes. */
static const uint8_t response_a[] = {
    0x00, 0x05, 0x00, 0x00, 0x00,
    0x00, 0x13, 0x00, 'c', 'o', 'm', '.', 'a', 'p', 'p', 'l', 'e', '.', 'M', 'o', 'b', 'i', 'l', 'e', 'S', 'M', 'S',
    0x01, 0x05, 0x00, 'A', 'l', 'i', 'c', 'e',
    0x03, 0x0E, 0x00, 'O', 'n', ' ', 'm', 'y', ' ', 'w', 'a', 'y', ' ', 0xF0, 0x9F, 0x9A, 0xB2,
};
#define MESSAGE_START 38 /* where the Message value begins in response_a */
static const uint8_t message_a[] = { 'O', 'n', ' ', 'm', 'y', ' ', 'w', 'a', 'y', ' ', 0xF0, 0x9F, 0x9A, 0xB2 };

/* Get App Attributes for com.apple.mobilemail: DisplayName. */
static const uint8_t app_command[] = {
    0x01, 'c', 'o', 'm', '.', 'a', 'p', 'p', 'l', 'e', '.', 'm', 'o', 'b', 'i', 'l', 'e', 'm', 'a', 'i', 'l', 0x00, 0x00,
};
/* DisplayName U+90AE U+4EF6 (6 bytes). */
static const uint8_t display_name[] = { 0xE9, 0x82, 0xAE, 0xE4, 0xBB, 0xB6 };

/* A Get App Attributes response for `identifier` with one DisplayName tuple of `value`. */
static size_t app_response(const char *identifier, const uint8_t *value, size_t value_length, uint8_t *out) {
    size_t n = 0, id_length = strlen(identifier);
    out[n++] = 0x01;
    memcpy(out + n, identifier, id_length);
    n += id_length;
    out[n++] = 0x00;
    out[n++] = 0x00; /* DisplayName */
    out[n++] = (uint8_t)value_length;
    out[n++] = (uint8_t)(value_length >> 8);
    if (value_length) memcpy(out + n, value, value_length);
    return n + value_length;
}

/* ---- What the parser reported -------------------------------------------- */
typedef struct {
    int attributes;                /* ATTRIBUTE events */
    uint8_t ids[8];
    uint16_t lengths[8];
    uint8_t values[8][64];
    size_t value_counts[8];
    int value_events;
    int bad_pieces;                /* VALUE events that do not follow on from the bytes before them */
    int completes, failures;
    int after_end;                 /* events after COMPLETE or FAILED */
    ancs_decode_error error;
    ancs_parser_event_type last;
    /* re-entrancy probe: calls made from the callback */
    ancs_parser *self, *other;
    ancs_status nested_begin, nested_reset, nested_finish, nested_other;
    size_t nested_feed;
    int probed;
} recorder;

static void on_event(void *context, const ancs_parser_event *e) {
    recorder *r = context;
    if (r->completes || r->failures) r->after_end++;
    r->last = e->type;
    switch (e->type) {
    case ANCS_PARSER_ATTRIBUTE:
        if (r->attributes < 8) {
            r->ids[r->attributes] = e->attribute_id;
            r->lengths[r->attributes] = e->length;
            r->value_counts[r->attributes] = 0;
        }
        r->attributes++;
        break;
    case ANCS_PARSER_VALUE: {
        r->value_events++;
        int i = r->attributes - 1;
        if (i < 0 || i >= 8 || e->length == 0 || !e->value || e->attribute_id != r->ids[i] ||
            e->value_offset != r->value_counts[i] || e->value_offset + e->length > r->lengths[i] ||
            r->value_counts[i] + e->length > sizeof r->values[i]) {
            r->bad_pieces++;
            break;
        }
        memcpy(r->values[i] + r->value_counts[i], e->value, e->length);
        r->value_counts[i] += e->length;
        break;
    }
    case ANCS_PARSER_COMPLETE:
        r->completes++;
        break;
    case ANCS_PARSER_FAILED:
        r->failures++;
        r->error = e->error;
        break;
    default:
        r->after_end += 1000; /* no such event */
    }
    if (r->self && !r->probed) {
        r->probed = 1;
        r->nested_begin = ancs_parser_begin(r->self, command_a, sizeof command_a, NULL);
        r->nested_feed = ancs_parser_feed(r->self, command_a, sizeof command_a, response_a, 5, on_event, NULL);
        r->nested_reset = ancs_parser_reset(r->self);
        r->nested_finish = ancs_parser_finish(r->self, command_a, sizeof command_a, NULL);
        r->nested_other = ancs_parser_begin(r->other, command_a, sizeof command_a, NULL);
    }
}

static ancs_parser parser;

/* Begins `command` on the shared parser with a fresh recorder. */
static void begin(recorder *r, const uint8_t *command, size_t length) {
    memset(r, 0, sizeof *r);
    ancs_decode_error error;
    ancs_status status = ancs_parser_begin(&parser, command, length, &error);
    CHECK(status == ANCS_OK, "begin: %d (%s)", status, ancs_decode_reason_name(error.reason));
}

/* Feeds `bytes` in pieces of `size`; returns the bytes consumed in all and
 * checks that each piece was taken whole until the response's end. */
static size_t feed_pieces(recorder *r, const uint8_t *command, size_t command_length, const uint8_t *bytes,
                          size_t length, size_t size) {
    size_t total = 0;
    for (size_t at = 0; at < length; at += size) {
        size_t n = length - at < size ? length - at : size;
        bool parsing = ancs_parser_is_parsing(&parser);
        size_t used = ancs_parser_feed(&parser, command, command_length, bytes + at, n, on_event, r);
        CHECK(used <= n, "took %zu of %zu", used, n);
        CHECK(!parsing || used == n || !ancs_parser_is_parsing(&parser), "a piece cut short while parsing goes on");
        total += used;
    }
    return total;
}

static bool value_is(const recorder *r, int index, const void *bytes, size_t length) {
    return index < r->attributes && r->value_counts[index] == length && r->lengths[index] == length &&
           memcmp(r->values[index], bytes, length) == 0;
}

/* Response A arrived whole and right. */
static void check_response_a(const recorder *r, const char *context) {
    CHECK(r->completes == 1 && r->failures == 0, "%s: %d complete, %d failed", context, r->completes, r->failures);
    CHECK(r->attributes == 3 && r->ids[0] == ANCS_ATTR_APP_IDENTIFIER && r->ids[1] == ANCS_ATTR_TITLE &&
          r->ids[2] == ANCS_ATTR_MESSAGE, "%s: %d attributes", context, r->attributes);
    CHECK(value_is(r, 0, "com.apple.MobileSMS", 19), "%s: AppIdentifier", context);
    CHECK(value_is(r, 1, "Alice", 5), "%s: Title", context);
    CHECK(value_is(r, 2, message_a, sizeof message_a), "%s: Message", context);
    CHECK(r->bad_pieces == 0 && r->after_end == 0, "%s: %d bad pieces, %d events after the end", context,
          r->bad_pieces, r->after_end);
    CHECK(r->last == ANCS_PARSER_COMPLETE, "%s: the last event", context);
}

static void check_error(const ancs_decode_error *e, ancs_decode_reason reason, size_t offset, const char *context) {
    CHECK(e->reason == reason, "%s: reason %d (%s), expected %d (%s)", context, e->reason,
          ancs_decode_reason_name(e->reason), reason, ancs_decode_reason_name(reason));
    CHECK(e->offset == offset, "%s: offset %zu, expected %zu", context, e->offset, offset);
}

/* ---- Tests ----------------------------------------------------------------- */

static void test_storage_and_arguments(void) {
    CHECK(ancs_parser_storage_size() > 8 && ancs_parser_storage_size() <= sizeof(ancs_parser),
          "storage size %zu of %zu", ancs_parser_storage_size(), sizeof(ancs_parser));
    CHECK(ancs_parser_init(NULL) == ANCS_ERR_INVALID_ARGUMENT, "init NULL");
    ancs_parser garbage;
    memset(&garbage, 0xA5, sizeof garbage);
    recorder r;
    memset(&r, 0, sizeof r);
    ancs_decode_error error;
    CHECK(ancs_parser_begin(&garbage, command_a, sizeof command_a, &error) == ANCS_ERR_STORAGE, "begin uninitialized");
    CHECK(ancs_parser_feed(&garbage, command_a, sizeof command_a, response_a, sizeof response_a, on_event, &r) == 0,
          "feed uninitialized");
    CHECK(ancs_parser_finish(&garbage, command_a, sizeof command_a, &error) == ANCS_ERR_STORAGE, "finish uninitialized");
    CHECK(ancs_parser_reset(&garbage) == ANCS_ERR_STORAGE, "reset uninitialized");
    CHECK(!ancs_parser_is_parsing(&garbage) && !ancs_parser_is_parsing(NULL), "is_parsing uninitialized");
    CHECK(ancs_parser_begin(NULL, command_a, sizeof command_a, NULL) == ANCS_ERR_STORAGE, "begin NULL");

    CHECK(ancs_parser_init(&garbage) == ANCS_OK, "init");
    CHECK(!ancs_parser_is_parsing(&garbage), "idle after init");
    CHECK(ancs_parser_feed(&garbage, command_a, sizeof command_a, response_a, sizeof response_a, on_event, &r) == 0,
          "nothing taken before begin");
    CHECK(ancs_parser_finish(&garbage, command_a, sizeof command_a, &error) == ANCS_OK && error.reason == ANCS_DECODE_NONE,
          "nothing begun, nothing to report");
    CHECK(ancs_parser_begin(&garbage, NULL, 3, &error) == ANCS_ERR_INVALID_ARGUMENT, "a NULL command");
    CHECK(ancs_parser_begin(&garbage, command_a, sizeof command_a, &error) == ANCS_OK, "begin");
    CHECK(ancs_parser_feed(&garbage, command_a, sizeof command_a, response_a, sizeof response_a, NULL, &r) == 0, "NULL callback");
    CHECK(ancs_parser_feed(&garbage, command_a, sizeof command_a, NULL, 4, on_event, &r) == 0, "NULL fragment");
    CHECK(ancs_parser_feed(&garbage, command_a, sizeof command_a - 1, response_a, sizeof response_a, on_event, &r) == 0,
          "a command of another length");
    CHECK(ancs_parser_feed(&garbage, command_a, sizeof command_a, NULL, 0, on_event, &r) == 0, "an empty fragment");
    CHECK(r.attributes == 0 && r.value_events == 0 && r.completes == 0 && r.failures == 0, "no events from refused calls");
    CHECK(ancs_parser_finish(&garbage, command_a, 3, &error) == ANCS_ERR_INVALID_ARGUMENT && ancs_parser_is_parsing(&garbage),
          "finish with another command: refused, left as it was");
    CHECK(ancs_parser_feed(&garbage, command_a, sizeof command_a, response_a, sizeof response_a, on_event, &r) == sizeof response_a,
          "then the response");
    check_response_a(&r, "after refused calls");

    CHECK(!strcmp(ancs_parser_status_name(ANCS_ERR_DECODING), "the bytes do not decode"), "status name");
    CHECK(!strcmp(ancs_parser_status_name(ANCS_ERR_BUFFER_TOO_SMALL), "the buffer is too small for the command"), "status name");
    CHECK(!strcmp(ancs_decode_reason_name(ANCS_DECODE_WRONG_NOTIFICATION_UID),
                  "response is for another NotificationUID than the command's"), "reason name");
    CHECK(!strcmp(ancs_decode_reason_name((ancs_decode_reason)99), "unknown reason"), "an unknown reason");
    for (int a = ANCS_DECODE_NONE; a <= ANCS_DECODE_INCOMPLETE; a++) {
        const char *name = ancs_decode_reason_name((ancs_decode_reason)a);
        CHECK(name && strlen(name) > 5 && strcmp(name, "unknown reason"), "reason %d named", a);
        for (int b = ANCS_DECODE_NONE; b < a; b++)
            CHECK(strcmp(name, ancs_decode_reason_name((ancs_decode_reason)b)), "reasons %d and %d share a name", a, b);
    }
}

static void test_notification_source(void) {
    ancs_notification_source_event event;
    ancs_decode_error error;
    /* docs/PROTOCOL.md, "An exchange, byte by byte": an incoming call. */
    static const uint8_t added[] = { 0x00, 0x1A, 0x01, 0x01, 0x07, 0x00, 0x00, 0x00 };
    CHECK(ancs_decode_notification_source(added, sizeof added, &event, &error) == ANCS_OK, "added");
    CHECK(event.event_id == ANCS_EVENT_ID_ADDED && event.event_flags == (ANCS_FLAG_IMPORTANT | ANCS_FLAG_POSITIVE_ACTION |
          ANCS_FLAG_NEGATIVE_ACTION) && event.category_id == ANCS_CATEGORY_INCOMING_CALL && event.category_count == 1 &&
          event.uid == 7, "fields %u %u %u %u %u", event.event_id, event.event_flags, event.category_id,
          event.category_count, event.uid);
    CHECK(error.reason == ANCS_DECODE_NONE, "no error");
    /* Reserved values are kept; the UID is little-endian. */
    static const uint8_t reserved[] = { 0xFF, 0xE0, 0xC8, 0xFF, 0x78, 0x56, 0x34, 0x12 };
    CHECK(ancs_decode_notification_source(reserved, sizeof reserved, &event, NULL) == ANCS_OK, "reserved");
    CHECK(event.event_id == 0xFF && event.event_flags == 0xE0 && event.category_id == 200 && event.category_count == 255 &&
          event.uid == 0x12345678u, "reserved values kept");
    /* Any other length: the error at min(length, 8), the event zeroed. */
    CHECK(ancs_decode_notification_source(added, 7, &event, &error) == ANCS_ERR_DECODING, "7 bytes");
    check_error(&error, ANCS_DECODE_NOTIFICATION_SOURCE_LENGTH, 7, "7 bytes");
    CHECK(error.actual == 7 && event.uid == 0 && event.event_flags == 0, "7 bytes: actual %u, event zeroed", error.actual);
    static const uint8_t nine[] = { 0x00, 0x1A, 0x01, 0x01, 0x07, 0x00, 0x00, 0x00, 0x00 };
    CHECK(ancs_decode_notification_source(nine, sizeof nine, &event, &error) == ANCS_ERR_DECODING, "9 bytes");
    check_error(&error, ANCS_DECODE_NOTIFICATION_SOURCE_LENGTH, 8, "9 bytes");
    CHECK(error.actual == 9, "9 bytes: actual %u", error.actual);
    CHECK(ancs_decode_notification_source(NULL, 0, &event, &error) == ANCS_ERR_DECODING, "no bytes");
    check_error(&error, ANCS_DECODE_NOTIFICATION_SOURCE_LENGTH, 0, "no bytes");
    CHECK(ancs_decode_notification_source(added, sizeof added, NULL, &error) == ANCS_ERR_INVALID_ARGUMENT, "NULL event");
    CHECK(ancs_decode_notification_source(NULL, 8, &event, &error) == ANCS_ERR_INVALID_ARGUMENT, "NULL bytes");
}

static void test_encoding(void) {
    uint8_t buffer[600];
    size_t length = 99;
    static const ancs_attribute_request wanted_a[] = {
        { ANCS_ATTR_APP_IDENTIFIER, 0 }, { ANCS_ATTR_TITLE, 16 }, { ANCS_ATTR_MESSAGE, 32 },
    };
    CHECK(ancs_encode_get_notification_attributes(5, wanted_a, 3, buffer, sizeof buffer, &length) == ANCS_OK, "command A");
    CHECK(length == sizeof command_a && !memcmp(buffer, command_a, length), "command A's bytes (%zu)", length);
    /* docs/PROTOCOL.md's exchange: AppIdentifier, Title (at most 32), Date (a max length given for it is dropped). */
    static const ancs_attribute_request wanted_call[] = {
        { ANCS_ATTR_APP_IDENTIFIER, 0 }, { ANCS_ATTR_TITLE, 32 }, { ANCS_ATTR_DATE, 99 },
    };
    static const uint8_t call[] = { 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x00, 0x05 };
    CHECK(ancs_encode_get_notification_attributes(7, wanted_call, 3, buffer, sizeof buffer, &length) == ANCS_OK &&
          length == sizeof call && !memcmp(buffer, call, length), "the exchange's command");
    /* Subtitle without a limit, a reserved AttributeID (no max length), a big UID. */
    static const ancs_attribute_request odd[] = { { ANCS_ATTR_SUBTITLE, 0xFFFF }, { 9, 5 } };
    static const uint8_t odd_bytes[] = { 0x00, 0x04, 0x03, 0x02, 0x01, 0x02, 0xFF, 0xFF, 0x09 };
    CHECK(ancs_encode_get_notification_attributes(0x01020304, odd, 2, buffer, sizeof buffer, &length) == ANCS_OK &&
          length == sizeof odd_bytes && !memcmp(buffer, odd_bytes, length), "subtitle, reserved");

    static const uint8_t display[] = { ANCS_APP_ATTR_DISPLAY_NAME };
    CHECK(ancs_encode_get_app_attributes((const uint8_t *)"com.apple.mobilemail", 20, display, 1, buffer, sizeof buffer,
                                         &length) == ANCS_OK, "app command");
    CHECK(length == sizeof app_command && !memcmp(buffer, app_command, length), "app command's bytes (%zu)", length);

    static const uint8_t positive[] = { 0x02, 0x07, 0x00, 0x00, 0x00, 0x00 };
    CHECK(ancs_encode_perform_notification_action(7, ANCS_ACTION_POSITIVE, buffer, sizeof buffer, &length) == ANCS_OK &&
          length == 6 && !memcmp(buffer, positive, 6), "positive action");
    static const uint8_t negative[] = { 0x02, 0x78, 0x56, 0x34, 0x12, 0x01 };
    CHECK(ancs_encode_perform_notification_action(0x12345678, ANCS_ACTION_NEGATIVE, buffer, 6, &length) == ANCS_OK &&
          length == 6 && !memcmp(buffer, negative, 6), "negative action, exact capacity");

    /* A buffer too small: nothing written, the length needed given. */
    memset(buffer, 0xEE, sizeof buffer);
    CHECK(ancs_encode_get_notification_attributes(5, wanted_a, 3, buffer, sizeof command_a - 1, &length) ==
          ANCS_ERR_BUFFER_TOO_SMALL && length == sizeof command_a, "one byte short: %zu", length);
    CHECK(ancs_encode_get_notification_attributes(5, wanted_a, 3, NULL, 0, &length) == ANCS_ERR_BUFFER_TOO_SMALL &&
          length == sizeof command_a, "the length asked with no buffer");
    CHECK(ancs_encode_get_app_attributes((const uint8_t *)"com.apple.mobilemail", 20, display, 1, buffer,
                                         sizeof app_command - 1, &length) == ANCS_ERR_BUFFER_TOO_SMALL &&
          length == sizeof app_command, "app command one byte short");
    CHECK(ancs_encode_perform_notification_action(7, 0, buffer, 5, &length) == ANCS_ERR_BUFFER_TOO_SMALL && length == 6,
          "action one byte short");
    bool untouched = true;
    for (size_t i = 0; i < sizeof buffer; i++) untouched = untouched && buffer[i] == 0xEE;
    CHECK(untouched, "a refused encoding wrote into the buffer");
    CHECK(ancs_encode_get_notification_attributes(5, wanted_a, 3, buffer, sizeof command_a, &length) == ANCS_OK &&
          length == sizeof command_a, "the exact capacity");

    /* What cannot be encoded. */
    CHECK(ancs_encode_get_app_attributes((const uint8_t *)"com.\0apple", 10, display, 1, buffer, sizeof buffer, &length) ==
          ANCS_ERR_ENCODING && length == 0, "a NUL inside the AppIdentifier");
    CHECK(ancs_encode_get_app_attributes((const uint8_t *)"com.apple.mobilemail", 20, NULL, 0, buffer, sizeof buffer,
                                         &length) == ANCS_ERR_ENCODING, "an app command with no attribute");
    CHECK(ancs_encode_get_notification_attributes(5, NULL, 0, buffer, sizeof buffer, &length) == ANCS_ERR_ENCODING,
          "a notification command with no attribute");
    ancs_attribute_request many[171];
    for (int i = 0; i < 171; i++) many[i] = (ancs_attribute_request){ ANCS_ATTR_MESSAGE, 10 };
    CHECK(ancs_encode_get_notification_attributes(5, many, 169, buffer, sizeof buffer, &length) == ANCS_OK && length == 512,
          "512 bytes: %zu", length);
    CHECK(ancs_encode_get_notification_attributes(5, many, 170, buffer, sizeof buffer, &length) == ANCS_ERR_ENCODING &&
          length == 0, "515 bytes");
    uint8_t long_name[520];
    memset(long_name, 'a', sizeof long_name);
    CHECK(ancs_encode_get_app_attributes(long_name, 509, display, 1, buffer, sizeof buffer, &length) == ANCS_OK &&
          length == 512 && buffer[510] == 0 && buffer[511] == 0, "a 512-byte app command");
    CHECK(ancs_encode_get_app_attributes(long_name, 510, display, 1, buffer, sizeof buffer, &length) == ANCS_ERR_ENCODING,
          "a 513-byte app command");
    /* Arguments. */
    CHECK(ancs_encode_perform_notification_action(7, 0, buffer, sizeof buffer, NULL) == ANCS_ERR_INVALID_ARGUMENT, "NULL length");
    CHECK(ancs_encode_perform_notification_action(7, 0, NULL, 6, &length) == ANCS_ERR_INVALID_ARGUMENT, "NULL buffer, capacity 6");
    CHECK(ancs_encode_get_notification_attributes(5, NULL, 2, buffer, sizeof buffer, &length) == ANCS_ERR_INVALID_ARGUMENT,
          "NULL attributes, count 2");
    CHECK(ancs_encode_get_app_attributes(NULL, 3, display, 1, buffer, sizeof buffer, &length) == ANCS_ERR_INVALID_ARGUMENT,
          "NULL identifier, length 3");
}

static void test_one_byte_at_a_time(void) {
    recorder r;
    begin(&r, command_a, sizeof command_a);
    CHECK(ancs_parser_is_parsing(&parser), "parsing after begin");
    for (size_t i = 0; i < sizeof response_a; i++) {
        size_t used = ancs_parser_feed(&parser, command_a, sizeof command_a, response_a + i, 1, on_event, &r);
        CHECK(used == 1, "byte %zu: took %zu", i, used);
        if (i + 1 < sizeof response_a) CHECK(r.completes == 0 && ancs_parser_is_parsing(&parser), "ended early at byte %zu", i);
    }
    check_response_a(&r, "one byte at a time");
    CHECK(r.value_events == 19 + 5 + 14, "a piece per byte: %d", r.value_events);
    CHECK(!ancs_parser_is_parsing(&parser), "over");
    ancs_decode_error error;
    CHECK(ancs_parser_finish(&parser, command_a, sizeof command_a, &error) == ANCS_OK && error.reason == ANCS_DECODE_NONE,
          "finish after the end reports nothing");
    /* Whole, and cut at every point into two. */
    begin(&r, command_a, sizeof command_a);
    CHECK(ancs_parser_feed(&parser, command_a, sizeof command_a, response_a, sizeof response_a, on_event, &r) ==
          sizeof response_a, "whole");
    check_response_a(&r, "whole");
    CHECK(r.value_events == 3, "a piece per value: %d", r.value_events);
    for (size_t cut = 0; cut <= sizeof response_a; cut++) {
        begin(&r, command_a, sizeof command_a);
        size_t first = ancs_parser_feed(&parser, command_a, sizeof command_a, response_a, cut, on_event, &r);
        size_t second = ancs_parser_feed(&parser, command_a, sizeof command_a, response_a + cut, sizeof response_a - cut,
                                         on_event, &r);
        CHECK(first == cut && second == sizeof response_a - cut, "cut at %zu: took %zu, %zu", cut, first, second);
        char context[32];
        snprintf(context, sizeof context, "cut at %zu", cut);
        check_response_a(&r, context);
    }
}

static void test_utf8_cut(void) {
    /* The bicycle's four bytes are the Message's last four: cut after its 1st, 2nd, 3rd. */
    for (size_t cut = sizeof response_a - 3; cut < sizeof response_a; cut++) {
        recorder r;
        begin(&r, command_a, sizeof command_a);
        size_t used = feed_pieces(&r, command_a, sizeof command_a, response_a, cut, cut);
        CHECK(used == cut && r.completes == 0, "first part");
        size_t value_events = (size_t)r.value_events;
        size_t before = r.value_counts[2];
        CHECK(before == cut - MESSAGE_START && r.values[2][before - 1] >= 0x80, "cut at %zu: %zu bytes, the last %02X",
              cut, before, r.values[2][before - 1]);
        used = ancs_parser_feed(&parser, command_a, sizeof command_a, response_a + cut, sizeof response_a - cut, on_event, &r);
        CHECK(used == sizeof response_a - cut, "second part");
        CHECK((size_t)r.value_events == value_events + 1, "one more piece");
        check_response_a(&r, "cut inside the bicycle");
    }
}

static void test_wrong_uid(void) {
    uint8_t bytes[sizeof response_a];
    memcpy(bytes, response_a, sizeof bytes);
    bytes[1] = 0x06;
    recorder r;
    begin(&r, command_a, sizeof command_a);
    size_t used = feed_pieces(&r, command_a, sizeof command_a, bytes, sizeof bytes, 7);
    CHECK(r.failures == 1 && r.completes == 0, "%d failed, %d complete", r.failures, r.completes);
    check_error(&r.error, ANCS_DECODE_WRONG_NOTIFICATION_UID, 1, "wrong UID");
    CHECK(r.error.expected == 5 && r.error.actual == 6, "expected %u, actual %u", r.error.expected, r.error.actual);
    CHECK(r.attributes == 0 && r.value_events == 0 && r.after_end == 0, "nothing reported after the failure");
    CHECK(used == sizeof bytes && !ancs_parser_is_parsing(&parser), "framed to its end: %zu", used);
    ancs_decode_error error;
    CHECK(ancs_parser_finish(&parser, command_a, sizeof command_a, &error) == ANCS_OK && error.reason == ANCS_DECODE_NONE,
          "the failure was reported already");
    /* A UID that differs in its last byte only. */
    bytes[1] = 0x05;
    bytes[4] = 0x80;
    begin(&r, command_a, sizeof command_a);
    CHECK(feed_pieces(&r, command_a, sizeof command_a, bytes, sizeof bytes, 1) == sizeof bytes, "one byte at a time");
    check_error(&r.error, ANCS_DECODE_WRONG_NOTIFICATION_UID, 1, "last byte");
    CHECK(r.failures == 1 && r.error.actual == 0x80000005u, "actual %08X", r.error.actual);
}

static void test_wrong_app_identifier(void) {
    struct { const char *identifier; size_t offset; } cases[] = {
        { "com.apple.mobile", 17 },       /* shorter: its NUL where the command has 'm' */
        { "com.apple.mobilemailer", 21 }, /* longer: 'e' where the command has its NUL */
        { "com.apple.MobileSMS", 11 },    /* 'M' for 'm' */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t bytes[64];
        size_t length = app_response(cases[i].identifier, display_name, sizeof display_name, bytes);
        recorder r;
        begin(&r, app_command, sizeof app_command);
        size_t used = feed_pieces(&r, app_command, sizeof app_command, bytes, length, 2);
        CHECK(r.failures == 1 && r.completes == 0 && r.attributes == 0, "%s: %d failed", cases[i].identifier, r.failures);
        check_error(&r.error, ANCS_DECODE_WRONG_APP_IDENTIFIER, cases[i].offset, cases[i].identifier);
        CHECK(used == length && !ancs_parser_is_parsing(&parser), "%s: framed to its end (%zu of %zu)",
              cases[i].identifier, used, length);
        /* In pieces of every size, with a byte after it that is not its. */
        bytes[length] = 0x01;
        for (size_t size = 1; size <= length + 1; size++) {
            begin(&r, app_command, sizeof app_command);
            used = feed_pieces(&r, app_command, sizeof app_command, bytes, length + 1, size);
            CHECK(r.failures == 1 && r.error.reason == ANCS_DECODE_WRONG_APP_IDENTIFIER && r.error.offset == cases[i].offset &&
                  used == length && r.after_end == 0, "%s in pieces of %zu: offset %zu, took %zu", cases[i].identifier,
                  size, r.error.offset, used);
        }
    }
    /* A Get Notification Attributes response where an app's was due: the CommandID differs. */
    recorder wrong;
    begin(&wrong, app_command, sizeof app_command);
    CHECK(ancs_parser_feed(&parser, app_command, sizeof app_command, response_a, sizeof response_a, on_event, &wrong) ==
          sizeof response_a && wrong.failures == 1, "a notification's response");
    check_error(&wrong.error, ANCS_DECODE_WRONG_COMMAND_ID, 0, "a notification's response");
    /* The right app, in 3-byte pieces: the name cut inside its characters. */
    uint8_t bytes[64];
    size_t length = app_response("com.apple.mobilemail", display_name, sizeof display_name, bytes);
    recorder r;
    begin(&r, app_command, sizeof app_command);
    CHECK(feed_pieces(&r, app_command, sizeof app_command, bytes, length, 3) == length, "the right app");
    CHECK(r.completes == 1 && r.failures == 0 && r.attributes == 1 && r.ids[0] == ANCS_APP_ATTR_DISPLAY_NAME &&
          value_is(&r, 0, display_name, sizeof display_name) && r.bad_pieces == 0, "its display name");
}

static void test_wrong_tuples(void) {
    /* Title where AppIdentifier was asked first. */
    uint8_t swapped[sizeof response_a];
    memcpy(swapped, response_a, sizeof swapped);
    swapped[5] = ANCS_ATTR_TITLE;
    recorder r;
    begin(&r, command_a, sizeof command_a);
    size_t used = ancs_parser_feed(&parser, command_a, sizeof command_a, swapped, sizeof swapped, on_event, &r);
    CHECK(r.failures == 1 && r.completes == 0 && r.attributes == 0, "out of order: %d failed", r.failures);
    check_error(&r.error, ANCS_DECODE_UNEXPECTED_ATTRIBUTE, 5, "out of order");
    CHECK(r.error.expected == ANCS_ATTR_APP_IDENTIFIER && r.error.actual == ANCS_ATTR_TITLE, "expected %u, actual %u",
          r.error.expected, r.error.actual);
    CHECK(used == sizeof swapped && !ancs_parser_is_parsing(&parser), "framed to its end: %zu", used);

    /* A Title of 17 bytes where 16 were asked: fails at its Length field. */
    static const uint8_t long_title[] = {
        0x00, 0x05, 0x00, 0x00, 0x00,
        0x00, 0x01, 0x00, 'a',
        0x01, 0x11, 0x00, 's', 'e', 'v', 'e', 'n', 't', 'e', 'e', 'n', ' ', 'b', 'y', 't', 'e', 's', '!', '!',
        0x03, 0x00, 0x00,
    };
    begin(&r, command_a, sizeof command_a);
    used = feed_pieces(&r, command_a, sizeof command_a, long_title, sizeof long_title, 1);
    CHECK(r.failures == 1 && r.completes == 0, "too long: %d failed", r.failures);
    check_error(&r.error, ANCS_DECODE_VALUE_TOO_LONG, 10, "too long");
    CHECK(r.error.attribute == ANCS_ATTR_TITLE && r.error.actual == 17 && r.error.expected == 16,
          "attribute %u, length %u, max %u", r.error.attribute, r.error.actual, r.error.expected);
    CHECK(r.attributes == 1 && value_is(&r, 0, "a", 1) && r.after_end == 0, "the AppIdentifier before it, nothing after");
    CHECK(used == sizeof long_title && !ancs_parser_is_parsing(&parser), "framed to its end: %zu", used);

    /* A wrong CommandID: the rest of that notification is dropped, the next is not taken. */
    uint8_t wrong_command[sizeof response_a];
    memcpy(wrong_command, response_a, sizeof wrong_command);
    wrong_command[0] = ANCS_COMMAND_GET_APP_ATTRIBUTES;
    begin(&r, command_a, sizeof command_a);
    CHECK(ancs_parser_feed(&parser, command_a, sizeof command_a, wrong_command, sizeof wrong_command, on_event, &r) ==
          sizeof wrong_command, "the whole notification dropped");
    check_error(&r.error, ANCS_DECODE_WRONG_COMMAND_ID, 0, "wrong CommandID");
    CHECK(r.error.expected == 0 && r.error.actual == 1 && r.failures == 1, "expected %u, actual %u", r.error.expected,
          r.error.actual);
    static const uint8_t next[] = { 0x00 };
    CHECK(ancs_parser_feed(&parser, command_a, sizeof command_a, next, 1, on_event, &r) == 0, "the next not taken");
}

static void test_zero_length(void) {
    uint8_t bytes[64];
    size_t length = app_response("com.apple.mobilemail", NULL, 0, bytes);
    recorder r;
    begin(&r, app_command, sizeof app_command);
    CHECK(ancs_parser_feed(&parser, app_command, sizeof app_command, bytes, length, on_event, &r) == length, "taken");
    CHECK(r.completes == 1 && r.failures == 0 && r.attributes == 1 && r.lengths[0] == 0 && r.value_events == 0,
          "an empty display name: %d attributes, %d pieces", r.attributes, r.value_events);
    /* An empty Title between two values, one byte at a time. */
    static const uint8_t empty_title[] = {
        0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 'a', 0x01, 0x00, 0x00, 0x03, 0x02, 0x00, 'h', 'i',
    };
    begin(&r, command_a, sizeof command_a);
    CHECK(feed_pieces(&r, command_a, sizeof command_a, empty_title, sizeof empty_title, 1) == sizeof empty_title, "taken");
    CHECK(r.completes == 1 && r.attributes == 3 && r.lengths[1] == 0 && value_is(&r, 0, "a", 1) && value_is(&r, 2, "hi", 2) &&
          r.value_events == 3 && r.bad_pieces == 0, "an empty Title: %d pieces", r.value_events);
}

static void test_trailing_bytes(void) {
    uint8_t bytes[sizeof response_a + 3];
    memcpy(bytes, response_a, sizeof response_a);
    bytes[sizeof response_a] = 0x00;
    bytes[sizeof response_a + 1] = 0x05;
    bytes[sizeof response_a + 2] = 0x00;
    recorder r;
    begin(&r, command_a, sizeof command_a);
    size_t used = ancs_parser_feed(&parser, command_a, sizeof command_a, bytes, sizeof bytes, on_event, &r);
    CHECK(used == sizeof response_a, "took %zu of %zu", used, sizeof bytes);
    check_response_a(&r, "with bytes after it");
    static const uint8_t more[] = { 0x01 };
    CHECK(ancs_parser_feed(&parser, command_a, sizeof command_a, more, 1, on_event, &r) == 0, "nothing after the end");
    CHECK(r.completes == 1 && r.after_end == 0, "no event after the end");
    /* The end in a later notification: 40 bytes, then 12 and 3 that are not the response's. */
    begin(&r, command_a, sizeof command_a);
    CHECK(ancs_parser_feed(&parser, command_a, sizeof command_a, bytes, 40, on_event, &r) == 40, "first 40");
    used = ancs_parser_feed(&parser, command_a, sizeof command_a, bytes + 40, sizeof bytes - 40, on_event, &r);
    CHECK(used == sizeof response_a - 40, "took %zu of %zu", used, sizeof bytes - 40);
    check_response_a(&r, "ending inside a notification");
}

static void test_finish_incomplete(void) {
    struct { size_t cut; uint32_t tuples; } cases[] = {
        { 0, 0 }, { 1, 0 }, { 4, 0 }, { 5, 0 }, { 6, 0 }, { 8, 0 }, { 27, 1 }, { 30, 1 }, { 35, 2 }, { 51, 2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        recorder r;
        begin(&r, command_a, sizeof command_a);
        CHECK(feed_pieces(&r, command_a, sizeof command_a, response_a, cases[i].cut, 20) == cases[i].cut, "fed");
        ancs_decode_error error;
        ancs_status status = ancs_parser_finish(&parser, command_a, sizeof command_a, &error);
        char context[32];
        snprintf(context, sizeof context, "cut at %zu", cases[i].cut);
        CHECK(status == ANCS_ERR_DECODING, "%s: %d", context, status);
        check_error(&error, ANCS_DECODE_INCOMPLETE, cases[i].cut, context);
        CHECK(error.expected == 3 && error.actual == cases[i].tuples, "%s: %u of %u tuples", context, error.actual, error.expected);
        CHECK(!ancs_parser_is_parsing(&parser) && r.completes == 0 && r.failures == 0, "%s: idle, nothing reported", context);
        CHECK(ancs_parser_finish(&parser, command_a, sizeof command_a, &error) == ANCS_OK, "%s: reported once", context);
    }
    /* An app response cut inside its AppIdentifier. */
    recorder r;
    begin(&r, app_command, sizeof app_command);
    CHECK(ancs_parser_feed(&parser, app_command, sizeof app_command, app_command, 10, on_event, &r) == 10, "fed");
    ancs_decode_error error;
    CHECK(ancs_parser_finish(&parser, app_command, sizeof app_command, &error) == ANCS_ERR_DECODING, "app: incomplete");
    check_error(&error, ANCS_DECODE_INCOMPLETE, 10, "app");
    CHECK(error.expected == 1 && error.actual == 0, "app: %u of %u", error.actual, error.expected);
    /* Reset drops a response without a report. */
    begin(&r, command_a, sizeof command_a);
    CHECK(ancs_parser_feed(&parser, command_a, sizeof command_a, response_a, 30, on_event, &r) == 30, "fed");
    CHECK(ancs_parser_reset(&parser) == ANCS_OK && !ancs_parser_is_parsing(&parser), "reset");
    CHECK(ancs_parser_finish(&parser, command_a, sizeof command_a, &error) == ANCS_OK && error.reason == ANCS_DECODE_NONE,
          "nothing to report after reset");
    CHECK(ancs_parser_feed(&parser, command_a, sizeof command_a, response_a + 30, 22, on_event, &r) == 0, "nothing taken");
}

static void test_begin_refuses(void) {
    static const uint8_t uid_cut[] = { 0x00, 0x01, 0x00, 0x00 };
    static const uint8_t no_attributes[] = { 0x00, 0x01, 0x00, 0x00, 0x00 };
    static const uint8_t max_length_cut[] = { 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x10 };
    static const uint8_t max_length_gone[] = { 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x03 };
    static const uint8_t no_nul[] = { 0x01, 0x61, 0x62 };
    static const uint8_t app_no_attributes[] = { 0x01, 0x61, 0x00 };
    static const uint8_t action[] = { 0x02, 0x01, 0x00, 0x00, 0x00, 0x00 };
    static const uint8_t unknown[] = { 0x07, 0x01 };
    struct { const char *name; const uint8_t *bytes; size_t length; ancs_decode_reason reason; size_t offset; } cases[] = {
        { "an empty command", NULL, 0, ANCS_DECODE_EMPTY_COMMAND, 0 },
        { "a NotificationUID cut", uid_cut, sizeof uid_cut, ANCS_DECODE_TRUNCATED, 4 },
        { "no attribute", no_attributes, sizeof no_attributes, ANCS_DECODE_NO_ATTRIBUTES_REQUESTED, 5 },
        { "a Title's max length cut", max_length_cut, sizeof max_length_cut, ANCS_DECODE_MISSING_MAX_LENGTH, 7 },
        { "a Message without its max length", max_length_gone, sizeof max_length_gone, ANCS_DECODE_MISSING_MAX_LENGTH, 7 },
        { "Get App Attributes without NUL", no_nul, sizeof no_nul, ANCS_DECODE_MISSING_NUL_TERMINATOR, 3 },
        { "Get App Attributes without attribute", app_no_attributes, sizeof app_no_attributes,
          ANCS_DECODE_NO_ATTRIBUTES_REQUESTED, 3 },
        { "Perform Notification Action", action, sizeof action, ANCS_DECODE_NO_ATTRIBUTES_REQUESTED, 0 },
        { "CommandID 7", unknown, sizeof unknown, ANCS_DECODE_UNKNOWN_COMMAND, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* Each while another response is being parsed: that one is dropped too. */
        recorder r;
        begin(&r, command_a, sizeof command_a);
        CHECK(ancs_parser_feed(&parser, command_a, sizeof command_a, response_a, 10, on_event, &r) == 10, "fed");
        ancs_decode_error error;
        ancs_status status = ancs_parser_begin(&parser, cases[i].bytes, cases[i].length, &error);
        CHECK(status == ANCS_ERR_DECODING, "%s: %d", cases[i].name, status);
        check_error(&error, cases[i].reason, cases[i].offset, cases[i].name);
        CHECK(!ancs_parser_is_parsing(&parser), "%s: idle", cases[i].name);
        CHECK(ancs_parser_feed(&parser, command_a, sizeof command_a, response_a + 10, 10, on_event, &r) == 0,
              "%s: nothing taken", cases[i].name);
    }
    ancs_decode_error error;
    ancs_parser_begin(&parser, max_length_cut, sizeof max_length_cut, &error);
    CHECK(error.attribute == ANCS_ATTR_TITLE, "the Title named: %u", error.attribute);
    ancs_parser_begin(&parser, max_length_gone, sizeof max_length_gone, &error);
    CHECK(error.attribute == ANCS_ATTR_MESSAGE, "the Message named: %u", error.attribute);
    ancs_parser_begin(&parser, unknown, sizeof unknown, &error);
    CHECK(error.actual == 7, "CommandID 7 named: %u", error.actual);
    CHECK(ancs_parser_begin(&parser, action, sizeof action, NULL) == ANCS_ERR_DECODING, "no error asked for");
    /* A max length present with 0: the attribute asks for nothing, an empty value fits. */
    static const uint8_t zero_max[] = { 0x00, 0x09, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00 };
    static const uint8_t zero_response[] = { 0x00, 0x09, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00 };
    recorder r;
    begin(&r, zero_max, sizeof zero_max);
    CHECK(ancs_parser_feed(&parser, zero_max, sizeof zero_max, zero_response, sizeof zero_response, on_event, &r) == 8 &&
          r.completes == 1 && r.attributes == 1 && r.lengths[0] == 0, "max length 0");
}

static void test_reentrancy(void) {
    ancs_parser other;
    CHECK(ancs_parser_init(&other) == ANCS_OK, "init");
    recorder r;
    begin(&r, command_a, sizeof command_a);
    r.self = &parser;
    r.other = &other;
    CHECK(ancs_parser_feed(&parser, command_a, sizeof command_a, response_a, sizeof response_a, on_event, &r) ==
          sizeof response_a, "taken");
    CHECK(r.probed && r.nested_begin == ANCS_ERR_BUSY && r.nested_feed == 0 && r.nested_reset == ANCS_ERR_BUSY &&
          r.nested_finish == ANCS_ERR_BUSY, "calls on the parser calling back refused: %d %zu %d %d", r.nested_begin,
          r.nested_feed, r.nested_reset, r.nested_finish);
    CHECK(r.nested_other == ANCS_OK && ancs_parser_is_parsing(&other), "another parser works from the callback");
    check_response_a(&r, "while called back into");
    CHECK(ancs_parser_begin(&parser, command_a, sizeof command_a, NULL) == ANCS_OK, "begin after the feed returned");
    ancs_parser_reset(&parser);
}

/* docs/PROTOCOL.md, "An exchange, byte by byte": MTU 23, four notifications. */
static void test_exchange(void) {
    static const ancs_attribute_request wanted[] = {
        { ANCS_ATTR_APP_IDENTIFIER, 0 }, { ANCS_ATTR_TITLE, 32 }, { ANCS_ATTR_DATE, 0 },
    };
    uint8_t command[16];
    size_t length;
    CHECK(ancs_encode_get_notification_attributes(7, wanted, 3, command, sizeof command, &length) == ANCS_OK, "encoded");
    static const uint8_t ds[4][20] = {
        { 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x15, 0x00, 0x63, 0x6F, 0x6D, 0x2E, 0x61, 0x70, 0x70, 0x6C, 0x65, 0x2E, 0x6D, 0x6F },
        { 0x62, 0x69, 0x6C, 0x65, 0x70, 0x68, 0x6F, 0x6E, 0x65, 0x01, 0x0C, 0x00, 0x41, 0x64, 0x61, 0x20, 0x4C, 0x6F, 0x76, 0x65 },
        { 0x6C, 0x61, 0x63, 0x65, 0x05, 0x0F, 0x00, 0x32, 0x30, 0x32, 0x35, 0x30, 0x33, 0x30, 0x31, 0x54, 0x30, 0x39, 0x31, 0x35 },
        { 0x30, 0x30 },
    };
    static const size_t sizes[4] = { 20, 20, 20, 2 };
    recorder r;
    begin(&r, command, length);
    for (int i = 0; i < 4; i++)
        CHECK(ancs_parser_feed(&parser, command, length, ds[i], sizes[i], on_event, &r) == sizes[i], "notification %d", i);
    CHECK(r.completes == 1 && r.failures == 0 && r.attributes == 3 && r.bad_pieces == 0, "complete");
    CHECK(value_is(&r, 0, "com.apple.mobilephone", 21) && value_is(&r, 1, "Ada Lovelace", 12) &&
          value_is(&r, 2, "20250301T091500", 15), "values");
    CHECK(r.value_events == 2 + 2 + 2, "values across notifications in two pieces each: %d", r.value_events);
}

/* The counter sees an allocation, so the checks of main() mean something. */
static void test_heap_counted(void) {
    long before = heap_allocations, frees = heap_frees;
    void *volatile block = malloc(32);
    CHECK(heap_allocations == before + 1, "malloc not counted: the --wrap is missing");
    free(block);
    CHECK(heap_frees == frees + 1, "free not counted");
    heap_allocations = before; /* this test's own */
    heap_frees = frees;
}

int main(void) {
    struct { const char *name; void (*run)(void); } tests[] = {
        { "the heap counter counts", test_heap_counted },
        { "storage, arguments, names", test_storage_and_arguments },
        { "Notification Source: decoded, a short and a long one", test_notification_source },
        { "encoding: bytes, a too-small buffer, what cannot be encoded", test_encoding },
        { "a response one byte at a time, whole, cut at every point", test_one_byte_at_a_time },
        { "a value cut inside a UTF-8 sequence", test_utf8_cut },
        { "a wrong NotificationUID", test_wrong_uid },
        { "another app's AppIdentifier", test_wrong_app_identifier },
        { "an attribute out of order, a value longer than its max length, a wrong CommandID", test_wrong_tuples },
        { "a Length of 0", test_zero_length },
        { "a response followed by unsolicited bytes", test_trailing_bytes },
        { "finish on an incomplete response, reset", test_finish_incomplete },
        { "begin refuses what has no response or is malformed", test_begin_refuses },
        { "a callback that calls back", test_reentrancy },
        { "the exchange of docs/PROTOCOL.md", test_exchange },
    };
    /* Warm up stdout (its buffer is allocated on first use) before counting. */
    printf("ancs_parser.h: storage %zu of %zu bytes\n", ancs_parser_storage_size(), sizeof(ancs_parser));
    int passed = 0, failed = 0;
    if (ancs_parser_init(&parser) != ANCS_OK) {
        printf("FAIL ancs_parser_init\n");
        return 1;
    }
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        failures_in_test = 0;
        long allocations = heap_allocations, frees = heap_frees;
        tests[i].run();
        /* Nothing above allocates but test_heap_counted, which takes its count back; a
         * failure's message (printf) may. */
        if (!failures_in_test)
            CHECK(heap_allocations == allocations && heap_frees == frees, "the library allocated: %ld allocations, %ld frees",
                  heap_allocations - allocations, heap_frees - frees);
        printf("%s %s\n", failures_in_test ? "FAIL" : "ok  ", tests[i].name);
        if (failures_in_test) failed++; else passed++;
    }
    printf("parser: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
