/*
 * ancs_parser.h — the ANCS wire format for C firmware that drives the
 * protocol itself: what Nordic's bt_ancs_client offers, without ancs.h's
 * consumer engine.
 *
 * Three parts, each usable alone:
 *   - ancs_decode_notification_source(): a Notification Source event (8
 *     bytes) into a plain struct;
 *   - ancs_encode_*(): the Control Point commands (Get Notification
 *     Attributes, Get App Attributes, Perform Notification Action) into a
 *     buffer of the caller's;
 *   - ancs_parser: one Data Source response at a time, streamed. The caller
 *     begins it on the command it writes, feeds it each Data Source
 *     notification with that command's bytes, and gets each tuple's
 *     AttributeID and Length, then the value's bytes in pieces as they
 *     arrive (straight from the notification, not copied), then the end of
 *     the response, or its failure.
 *
 * The behaviour is the Swift library's `DataSourceParser`, the same code: the
 * same checks with the same errors at the same byte offsets as the library's
 * reassembler (docs/PROTOCOL.md, "Putting responses back together"). What it
 * does not do, and the consumer engine (ancs.h) does: several commands in
 * flight, a timeout, values collected, resynchronization after bytes no
 * command explains. A caller keeps one Get … Attributes command in flight and
 * a timeout of its own, started at the Control Point write: when it expires,
 * or the link drops, ancs_parser_finish() (which gives the `incomplete`
 * error) or ancs_parser_reset().
 *
 * A typical exchange:
 *
 *   uint8_t command[64]; size_t command_length;
 *   ancs_encode_get_notification_attributes(uid, wanted, count, command, sizeof command, &command_length);
 *   ancs_parser_begin(&parser, command, command_length, &error);  // before the write: the response may come at once
 *   (write `command` to the Control Point; if the write fails, ancs_parser_reset(): no response comes)
 *   on each Data Source notification (bytes, length):
 *       size_t used = ancs_parser_feed(&parser, command, command_length, bytes, length, on_event, context);
 *       // bytes[used..length) are not this response's: the phone starts every
 *       // response in a notification of its own, so they are unsolicited
 *
 * Memory. Nothing here allocates: no malloc, no posix_memalign, at any point
 * (integrations/c/test/test_parser.c checks it), and a firmware that links
 * only these functions (with --gc-sections) links no allocator at all: what
 * they reach references none (the consumer's functions, in the same library,
 * do). An ancs_parser is the caller's storage (a static, a
 * member of its own connection struct), a few integers whatever the
 * response's size; the parser keeps no copy of the
 * command (the caller passes its bytes with every notification, unchanged)
 * and no value. There are no globals: any number of parsers may exist.
 *
 * Threading. Not thread-safe: call the functions of one parser from one
 * thread or task, or serialize the calls. Different parsers share nothing.
 * The encoding and decoding functions keep no state and may run anywhere.
 * The callback runs on the calling thread, inside ancs_parser_feed(); it must
 * not call ancs_parser_* on the parser that is calling it (refused with
 * ANCS_ERR_BUSY, or 0 bytes fed): act on COMPLETE or FAILED after
 * ancs_parser_feed() returns. It may use any other parser.
 *
 * Lifetimes. A VALUE event's `value` points into the notification being fed
 * and is valid only during the callback: copy what you keep. `command` must
 * stay unchanged from ancs_parser_begin() to the response's end; the parser
 * reads it during each call only. Values are bytes as the phone sent them
 * (UTF-8 for text, cut at the max length asked, which can split a multi-byte
 * character), not NUL-terminated.
 *
 * Statuses are ancs.h's (ancs_status) with two more, below;
 * ancs_parser_status_name() names those these functions return.
 */
#ifndef ANCS_PARSER_H
#define ANCS_PARSER_H

#include "ancs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Statuses ------------------------------------------------------------
 * Besides ANCS_OK, ANCS_ERR_INVALID_ARGUMENT (a NULL pointer with a nonzero
 * length, a NULL callback), ANCS_ERR_STORAGE (an ancs_parser not initialized
 * by ancs_parser_init), ANCS_ERR_BUSY (called from the parser's own
 * callback) and ANCS_ERR_ENCODING (a command that cannot be encoded: no
 * attribute, a NUL inside the AppIdentifier, longer than 512 bytes): */
enum {
    ANCS_ERR_DECODING = -64,         /* the bytes do not decode: the ancs_decode_error says why and where */
    ANCS_ERR_BUFFER_TOO_SMALL = -65  /* the command does not fit the buffer: *length is the length it needs */
};

/* Names the statuses of this header's functions ("the bytes do not decode"),
 * static storage; ancs_status_name() names the consumer's. */
const char *ancs_parser_status_name(ancs_status status);

/* ---- Protocol values (docs/PROTOCOL.md); the AttributeIDs, ActionIDs and
 * EventFlags are ancs.h's ------------------------------------------------- */
enum { /* CommandID */
    ANCS_COMMAND_GET_NOTIFICATION_ATTRIBUTES = 0, ANCS_COMMAND_GET_APP_ATTRIBUTES = 1,
    ANCS_COMMAND_PERFORM_NOTIFICATION_ACTION = 2
};
enum { /* EventID */
    ANCS_EVENT_ID_ADDED = 0, ANCS_EVENT_ID_MODIFIED = 1, ANCS_EVENT_ID_REMOVED = 2
};
enum { /* CategoryID */
    ANCS_CATEGORY_OTHER = 0, ANCS_CATEGORY_INCOMING_CALL = 1, ANCS_CATEGORY_MISSED_CALL = 2,
    ANCS_CATEGORY_VOICEMAIL = 3, ANCS_CATEGORY_SOCIAL = 4, ANCS_CATEGORY_SCHEDULE = 5, ANCS_CATEGORY_EMAIL = 6,
    ANCS_CATEGORY_NEWS = 7, ANCS_CATEGORY_HEALTH_AND_FITNESS = 8, ANCS_CATEGORY_BUSINESS_AND_FINANCE = 9,
    ANCS_CATEGORY_LOCATION = 10, ANCS_CATEGORY_ENTERTAINMENT = 11
};

/* ---- Decoding errors -----------------------------------------------------
 * Why bytes do not decode, and where: `offset` is the byte offset, from the
 * start of the PDU (for a Data Source response, from the response's first
 * byte), of the first byte that is wrong or missing. `expected`, `actual`
 * and `attribute` hold what the reason names (0 otherwise). The enum is
 * int-sized (ANCS_ENUM_INT, ancs.h). */
typedef enum {
    ANCS_DECODE_NONE = 0,                   /* no error */
    /* Notification Source */
    ANCS_DECODE_NOTIFICATION_SOURCE_LENGTH, /* an event is exactly 8 bytes: actual = the length */
    /* Control Point: a command given to ancs_parser_begin() */
    ANCS_DECODE_EMPTY_COMMAND,              /* no bytes */
    ANCS_DECODE_UNKNOWN_COMMAND,            /* actual = the CommandID (not 0, 1 or 2) */
    ANCS_DECODE_TRUNCATED,                  /* Get Notification Attributes shorter than 5 bytes: its NotificationUID is cut short */
    ANCS_DECODE_MISSING_MAX_LENGTH,         /* attribute = the Title, Subtitle or Message without both max length bytes */
    ANCS_DECODE_MISSING_NUL_TERMINATOR,     /* Get App Attributes with no NUL after the AppIdentifier */
    ANCS_DECODE_NO_ATTRIBUTES_REQUESTED,    /* asks for no attribute; also a Perform Notification
                                               Action (offset 0): no response follows it */
    /* Data Source: a response, checked against its command */
    ANCS_DECODE_WRONG_COMMAND_ID,           /* expected, actual = CommandIDs; offset 0 */
    ANCS_DECODE_WRONG_NOTIFICATION_UID,     /* expected, actual = NotificationUIDs; offset 1 */
    ANCS_DECODE_WRONG_APP_IDENTIFIER,       /* another app's: offset = the first byte that differs (the command holds the expected one) */
    ANCS_DECODE_UNEXPECTED_ATTRIBUTE,       /* expected, actual = AttributeIDs: not the next one asked; offset = the AttributeID */
    ANCS_DECODE_VALUE_TOO_LONG,             /* attribute; actual = its Length, expected = the max length asked;
                                               offset = the Length field */
    ANCS_DECODE_INCOMPLETE,                 /* ancs_parser_finish() on a live response: expected = the tuples
                                               asked, actual = the tuples complete; offset = where the bytes stopped */
    ANCS_DECODE_REASON_INT_SIZE = 0x7FFFFFFF /* not a reason: keeps the enum int-sized (ANCS_ENUM_INT) */
} ancs_decode_reason;

typedef struct {
    ancs_decode_reason reason;
    size_t offset;
    uint32_t expected;
    uint32_t actual;
    uint8_t attribute;
} ancs_decode_error;

/* A short English name of the reason ("response is for another
 * NotificationUID than the command's"), static storage. */
const char *ancs_decode_reason_name(ancs_decode_reason reason);

/* ---- Notification Source -------------------------------------------------- */
typedef struct {
    uint8_t event_id;       /* ANCS_EVENT_ID_*; 3–255 reserved, kept as sent */
    uint8_t event_flags;    /* ANCS_FLAG_* (ancs.h); reserved bits kept */
    uint8_t category_id;    /* ANCS_CATEGORY_*; 12–255 reserved, kept */
    uint8_t category_count; /* active notifications in that category, this one included */
    uint32_t uid;           /* NotificationUID */
} ancs_notification_source_event;

/* Decodes a Notification Source notification's value into *event. Any other
 * length than 8: ANCS_ERR_DECODING, NOTIFICATION_SOURCE_LENGTH (offset: the
 * length, at most 8), *event zeroed. error may be NULL. */
ancs_status ancs_decode_notification_source(const uint8_t *bytes, size_t length,
                                            ancs_notification_source_event *event, ancs_decode_error *error);

/* ---- Control Point commands ----------------------------------------------
 * Each writes the command into buffer[0..capacity) and its length into
 * *length, and returns ANCS_OK. ANCS_ERR_BUFFER_TOO_SMALL: nothing written,
 * *length is the length needed. ANCS_ERR_ENCODING: the command cannot be
 * encoded (no attribute, a NUL inside the AppIdentifier, more than 512 bytes,
 * the most an ATT write carries); *length 0. A command is at most 512 bytes. */

/* Get Notification Attributes: the attributes in the order wanted in the
 * response. Title, Subtitle and Message carry their max_length (0xFFFF for
 * all of the value); any other AttributeID (reserved ones too) none, its
 * max_length ignored. */
ancs_status ancs_encode_get_notification_attributes(uint32_t uid, const ancs_attribute_request *attributes,
                                                    size_t count, uint8_t *buffer, size_t capacity,
                                                    size_t *length);
/* Get App Attributes: app_identifier is its bytes without a NUL (as the
 * AppIdentifier attribute gave them); attributes are AppAttributeIDs
 * (ANCS_APP_ATTR_DISPLAY_NAME). */
ancs_status ancs_encode_get_app_attributes(const uint8_t *app_identifier, size_t app_identifier_length,
                                           const uint8_t *attributes, size_t count, uint8_t *buffer,
                                           size_t capacity, size_t *length);
/* Perform Notification Action: ANCS_ACTION_POSITIVE or ANCS_ACTION_NEGATIVE
 * (2–255 are reserved: encoded, and refused by the phone with 0xA2). Always
 * 6 bytes; the write response is its only answer. */
ancs_status ancs_encode_perform_notification_action(uint32_t uid, uint8_t action, uint8_t *buffer,
                                                    size_t capacity, size_t *length);

/* ---- The Data Source parser ----------------------------------------------- */
typedef enum {
    ANCS_PARSER_ATTRIBUTE = 0, /* a tuple's header: attribute_id, length (its value's); VALUE events
                                  follow with its bytes, none when length is 0 */
    ANCS_PARSER_VALUE,         /* the next bytes of the current value: value, length (of this piece, > 0),
                                  value_offset (bytes of the value before it), attribute_id */
    ANCS_PARSER_COMPLETE,      /* every tuple asked for has arrived: the response is over */
    ANCS_PARSER_FAILED,        /* error: the response breaks the format. Reported once; the response ends
                                  here for the caller, though its remaining bytes are still consumed up to its
                                  end (after WRONG_COMMAND_ID, the rest of that notification only) */
    ANCS_PARSER_EVENT_INT_SIZE = 0x7FFFFFFF /* not an event: keeps the enum int-sized (ANCS_ENUM_INT) */
} ancs_parser_event_type;

typedef struct {
    ancs_parser_event_type type;
    uint8_t attribute_id;    /* ATTRIBUTE, VALUE: NotificationAttributeID or AppAttributeID */
    uint16_t length;         /* ATTRIBUTE: the value's length; VALUE: this piece's */
    uint16_t value_offset;   /* VALUE */
    const uint8_t *value;    /* VALUE: `length` bytes, valid during the callback only */
    ancs_decode_error error; /* FAILED */
} ancs_parser_event;

typedef void (*ancs_parser_callback)(void *context, const ancs_parser_event *event);

/* Opaque, caller-provided. Large enough for this library on 32- and 64-bit
 * targets; ancs_parser_init() checks it (ANCS_ERR_STORAGE otherwise). */
#define ANCS_PARSER_STORAGE_WORDS 16
typedef struct {
    uint64_t words[ANCS_PARSER_STORAGE_WORDS];
} ancs_parser;

/* The bytes of ancs_parser this build uses (at most sizeof(ancs_parser)). */
size_t ancs_parser_storage_size(void);

/* Makes the storage an idle parser (its previous contents are ignored). The
 * other ancs_parser_* functions refuse storage not initialized so
 * (ANCS_ERR_STORAGE; ancs_parser_feed() feeds 0 bytes). Holds nothing to
 * free. */
ancs_status ancs_parser_init(ancs_parser *parser);

/* Starts on the response to `command`: the Get Notification Attributes or
 * Get App Attributes bytes written (or about to be written) to the Control
 * Point. Whatever was being parsed is dropped. ANCS_ERR_DECODING, with the
 * reason in *error (may be NULL), when an NP would refuse the command
 * (EMPTY_COMMAND, UNKNOWN_COMMAND, TRUNCATED, MISSING_MAX_LENGTH,
 * MISSING_NUL_TERMINATOR, NO_ATTRIBUTES_REQUESTED) or it is a Perform
 * Notification Action (NO_ATTRIBUTES_REQUESTED at offset 0: no response
 * follows it); the parser is then idle. */
ancs_status ancs_parser_begin(ancs_parser *parser, const uint8_t *command, size_t length,
                              ancs_decode_error *error);

/* Feeds one Data Source notification's value (`fragment`, `length` bytes)
 * of the response to `command` (the bytes given to ancs_parser_begin,
 * unchanged), calling `callback` with each event, in order, before it
 * returns. Returns how many of the fragment's bytes belong to the response:
 * all of them, or fewer when the response ends inside the fragment (the rest
 * are not its). 0 when nothing is being parsed (not begun, or the response
 * is over), and when the call is refused: a NULL callback, storage not
 * initialized, called from the parser's own callback, or a command of
 * another length than the one begun. */
size_t ancs_parser_feed(ancs_parser *parser, const uint8_t *command, size_t command_length,
                        const uint8_t *fragment, size_t length, ancs_parser_callback callback, void *context);

/* Ends the response being parsed (the timeout, link loss, the caller giving
 * up): the parser is idle after it. ANCS_ERR_DECODING with INCOMPLETE in
 * *error (may be NULL) when the response was still live (begun, neither
 * complete nor failed); ANCS_OK when there was nothing to report.
 * `command` is the one begun (ANCS_ERR_INVALID_ARGUMENT, the parser left as
 * it is, when its length differs). */
ancs_status ancs_parser_finish(ancs_parser *parser, const uint8_t *command, size_t command_length,
                               ancs_decode_error *error);

/* Drops the response being parsed without a report (e.g. the command's
 * write failed: no response comes). */
ancs_status ancs_parser_reset(ancs_parser *parser);

/* Whether a response is being parsed: begun and not yet over (complete, or
 * failed and consumed to its end). */
bool ancs_parser_is_parsing(const ancs_parser *parser);

#ifdef __cplusplus
}
#endif
#endif /* ANCS_PARSER_H */
