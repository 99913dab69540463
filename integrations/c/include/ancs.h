/*
 * ancs.h — the Apple Notification Center Service consumer (the accessory's
 * side, "NC") for C firmware.
 *
 * The consumer is a state machine that does no I/O. The firmware's BLE stack
 * tells it what happened (link up, a subscription's result, Notification
 * Source and Data Source bytes, a Control Point write's result, the time),
 * and it answers through three callbacks: subscribe to a characteristic,
 * write these Control Point bytes, and an event for the application
 * (a notification ready to show, modified, removed; a request's result; the
 * session's start and end). integrations/nimble/ drives it from NimBLE.
 *
 * The behaviour is the Swift library's `Consumer` engine, the same code:
 * "ready to show" means the configured attributes are fetched for every
 * notification the phone announces (live ones before the PreExisting
 * backlog, the backlog newest first, all after anything the application
 * asked for; not those of hidden_categories or hidden_apps, the Silent ones
 * with skip_silent, nor more of the backlog than max_pre_existing), and the app's
 * display name once per app and session (never again after the phone
 * answered 0xA2 for it), before ANCS_EVENT_READY.
 *
 * Storage. The caller owns each instance's storage (an ancs_consumer, e.g. a
 * static or a member of its own connection struct); there are no globals, and
 * any number of instances may exist. The engine's tables (notifications,
 * app names, requests, the response being reassembled) grow on the heap
 * (malloc/free/posix_memalign; integrations/c/src/ancs_posix_memalign.c
 * for a C library without posix_memalign), within the bounds the configuration sets:
 * see "Memory" below. ancs_consumer_deinit() frees them.
 *
 * Building. integrations/c/build.sh builds the library for firmware without
 * the stack protector (ESP-IDF and Zephyr define __stack_chk_guard and
 * __stack_chk_fail only when their own stack check is on, so a default
 * project would not link); ANCS_STACK_PROTECTOR=1 builds it with it, and it
 * then needs those two symbols.
 *
 * Threading. Not thread-safe: call every function of one instance from one
 * thread or task (the BLE host's, typically), or serialize the calls.
 * Different instances are independent: they share no object, so two
 * threads may each drive their own (not with ancs_heap_use()'s storage,
 * which every instance shares: "The heap" below). The serialization is required, not
 * advice: reference counts inside the library are not atomic (a count
 * updated from two threads at once corrupts the heap). Callbacks run on the calling thread,
 * inside the call that caused them, after the engine has finished its own
 * work for that input: a callback may call any function of this API on the
 * same instance (a request, or a write result a stack reports at once),
 * except ancs_consumer_deinit(). Their outputs are delivered before the
 * nested call returns, so events may then interleave with the rest of the
 * outer call's. A nested call that ends or starts a session
 * (ancs_consumer_stop() from an ADDED event, say) drops what the outer call
 * had left to deliver, computed for the session that was: no write,
 * subscription or event of it follows SESSION_ENDED, except REQUEST_DONE
 * (every request still ends exactly once). A Control Point write so dropped
 * was never made: the next session's first write waits request_timeout_ms
 * for it, unless ancs_consumer_link_up() starts that session.
 *
 * Pointers in an ancs_event (attribute values, the app name, the app
 * identifier) are valid only during the callback: copy what you keep.
 * Attribute values are UTF-8 as the phone sent them, cut to the length asked
 * (a cut may split a multi-byte character at the end), not NUL-terminated.
 *
 * Time. Every input carries the current time in milliseconds from any fixed
 * origin (a monotonic clock; 64 bits, so it does not wrap). Requests time out
 * (ANCS_ERR_TIMED_OUT) request_timeout_ms after their Control Point write;
 * call ancs_consumer_tick() at ancs_consumer_next_deadline() or periodically.
 *
 * Memory. A NULL or zero-initialised configuration is the microcontroller
 * preset (ancs_consumer_config_microcontroller), whose worst case is stated
 * below (ANCS_MICROCONTROLLER_HEAP_BOUND); ancs_consumer_config_default()
 * is for hosts. The library allocates from the C library's heap
 * (posix_memalign and free), or only from storage the caller reserves for
 * it (ancs_heap_use(), "The heap" below). An allocation that fails is not
 * recovered from: Embedded Swift traps (an undefined
 * instruction: the firmware's fault handler runs, then typically a reset),
 * so the heap or the storage must hold the configuration's bound. The heap holds the live notifications (at most max_notifications;
 * beyond it the oldest is dropped with ANCS_EVENT_REMOVED), a notification's
 * display attributes' values (each at most its max length, or
 * unlimited_value_length when asked without one) only from its fetch to its
 * READY or UPDATED, which carries them (nothing of this API reads them
 * after: MODIFIED and REMOVED of a notification shown carry no
 * attributes, and an ATTRIBUTES event's values are not kept); the app names (at most
 * max_cached_apps, oldest dropped); the requests (at most max_requests
 * application requests, ANCS_ERR_TOO_MANY_REQUESTS beyond, plus one display
 * fetch per live notification); and the one response being reassembled
 * (bounded by the same lengths). Nothing a phone sends grows it past these
 * bounds. integrations/c/test measures it: on a 64-bit host, 100 notifications
 * shown with the defaults and 5 apps hold about 4.8 KB; 16 kept of 2 000
 * announced, about 1.8 KB at the peak. An event's values reach the callback where the
 * engine holds them, copied nowhere: in a steady session, a notification
 * added, fetched, shown and removed makes no allocation (its fetch's command
 * is written over in place, its response read into the buffers of the one
 * before, which the callbacks are done with; BENCHMARKS.md section 8),
 * unless hidden_apps is set: each notification's AppIdentifier is then
 * fetched alone and kept until its display fetch, and its life makes 7
 * allocations (integrations/c/test measures it).
 */
#ifndef ANCS_H
#define ANCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ANCS_API_VERSION 1

/* The service and characteristic UUIDs (spec: "Service and
 * characteristics"), as the 16 bytes a BLE stack takes, little-endian (the
 * byte order on the air): the one place the C side writes them, e.g.
 * NimBLE's `BLE_UUID128_INIT(ANCS_UUID_SERVICE_LE)`.
 *   service             7905F431-B5CE-4E99-A40F-4B1E122D00D0
 *   Notification Source 9FBF120D-6301-42D9-8C58-25E699A21DBD
 *   Control Point       69D1D8F3-45E1-49A8-9821-9BBDFDAAD9D9
 *   Data Source         22EAC6E9-24D6-4BB5-BE44-B36ACE7C7BFB */
#define ANCS_UUID_SERVICE_LE \
    0xd0, 0x00, 0x2d, 0x12, 0x1e, 0x4b, 0x0f, 0xa4, 0x99, 0x4e, 0xce, 0xb5, 0x31, 0xf4, 0x05, 0x79
#define ANCS_UUID_NOTIFICATION_SOURCE_LE \
    0xbd, 0x1d, 0xa2, 0x99, 0xe6, 0x25, 0x58, 0x8c, 0xd9, 0x42, 0x01, 0x63, 0x0d, 0x12, 0xbf, 0x9f
#define ANCS_UUID_CONTROL_POINT_LE \
    0xd9, 0xd9, 0xaa, 0xfd, 0xbd, 0x9b, 0x21, 0x98, 0xa8, 0x49, 0xe1, 0x45, 0xf3, 0xd8, 0xd1, 0x69
#define ANCS_UUID_DATA_SOURCE_LE \
    0xfb, 0x7b, 0x7c, 0xce, 0x6a, 0xb3, 0x44, 0xbe, 0xb5, 0x4b, 0xd6, 0x24, 0xe9, 0xc6, 0xea, 0x22

/* ---- Status codes --------------------------------------------------------
 * One number space for results: 0 is success; 1…255 is an ATT error
 * response with that code (the phone's ANCS errors are 0xA0–0xA3; others are
 * plain ATT codes such as 0x05 Insufficient Authentication); negative values
 * are this library's own. The same space carries ATT results into the engine
 * (ancs_consumer_subscription_result, ancs_consumer_write_result), where
 * ANCS_ERR_TRANSPORT means "no ATT answer: the transport failed". */
typedef int32_t ancs_status;
enum {
    ANCS_OK = 0,
    ANCS_ATT_WRITE_NOT_PERMITTED = 0x03,   /* from the phone with "Share System Notifications" off */
    ANCS_ATT_INSUFFICIENT_AUTHENTICATION = 0x05,
    ANCS_ATT_INSUFFICIENT_AUTHORIZATION = 0x08,
    ANCS_ATT_INSUFFICIENT_ENCRYPTION = 0x0F,
    ANCS_ATT_UNKNOWN_COMMAND = 0xA0,   /* the phone does not know the command */
    ANCS_ATT_INVALID_COMMAND = 0xA1,   /* the command was badly formed */
    ANCS_ATT_INVALID_PARAMETER = 0xA2, /* e.g. no notification with that UID */
    ANCS_ATT_ACTION_FAILED = 0xA3,     /* the action could not be performed */
    ANCS_ATT_CCCD_IMPROPERLY_CONFIGURED = 0xFD, /* the phone holds no subscription: subscribed again */

    ANCS_ERR_TRANSPORT = -1,           /* the transport failed without an ATT answer */
    ANCS_ERR_INVALID_RESPONSE = -2,    /* the phone's Data Source response broke the format */
    ANCS_ERR_TIMED_OUT = -3,           /* no response within request_timeout_ms of the write */
    ANCS_ERR_CANCELLED = -4,           /* ancs_consumer_cancel() */
    ANCS_ERR_SESSION_ENDED = -5,       /* link down, unsubscribed or ANCS gone before it ended */
    ANCS_ERR_NOT_CONNECTED = -6,       /* no session: nothing was sent */
    ANCS_ERR_DATA_SOURCE_UNAVAILABLE = -7, /* the Data Source subscription failed this session */
    ANCS_ERR_ACTION_NOT_AVAILABLE = -8,    /* the notification offers no such action */
    ANCS_ERR_UNKNOWN_NOTIFICATION = -9,    /* no notification with this UID in this session */
    ANCS_ERR_ENCODING = -10,           /* the request cannot be encoded (e.g. an identifier with a NUL) */
    ANCS_ERR_TOO_MANY_REQUESTS = -11,  /* max_requests are already waiting */
    ANCS_ERR_NOTIFICATION_REMOVED = -12, /* removed on the phone before the request was written */
    ANCS_ERR_INVALID_ARGUMENT = -13,   /* a NULL pointer, a count or an enum value out of range */
    ANCS_ERR_STORAGE = -14,            /* storage not initialized, or too small for this build */
    ANCS_ERR_BUSY = -15                /* ancs_consumer_deinit() called from one of its callbacks */
};

/* A short English name of a status ("invalid parameter (ANCS 0xA2)"), static storage. */
const char *ancs_status_name(ancs_status status);

/* ---- Protocol values (docs/PROTOCOL.md) --------------------------------- */
/* ANCS_ENUM_INT: each enum type of this header has a last member
 * 0x7FFFFFFF, which is no value, so that the type is int-sized with any
 * compiler flags: the library is built with int-sized enums, and GCC for
 * arm-none-eabi makes enums as small as their values by default
 * (-fshort-enums), which would move the fields of ancs_event that follow one. */
typedef enum {
    ANCS_NOTIFICATION_SOURCE = 0,
    ANCS_CONTROL_POINT = 1,
    ANCS_DATA_SOURCE = 2,
    ANCS_CHARACTERISTIC_INT_SIZE = 0x7FFFFFFF   /* not a value: keeps the enum int-sized (ANCS_ENUM_INT) */
} ancs_characteristic;

enum { /* NotificationAttributeID */
    ANCS_ATTR_APP_IDENTIFIER = 0, ANCS_ATTR_TITLE = 1, ANCS_ATTR_SUBTITLE = 2, ANCS_ATTR_MESSAGE = 3,
    ANCS_ATTR_MESSAGE_SIZE = 4, ANCS_ATTR_DATE = 5, ANCS_ATTR_POSITIVE_ACTION_LABEL = 6,
    ANCS_ATTR_NEGATIVE_ACTION_LABEL = 7
};
enum { /* AppAttributeID */
    ANCS_APP_ATTR_DISPLAY_NAME = 0
};
enum { /* ActionID */
    ANCS_ACTION_POSITIVE = 0, ANCS_ACTION_NEGATIVE = 1
};
enum { /* EventFlags */
    ANCS_FLAG_SILENT = 1 << 0, ANCS_FLAG_IMPORTANT = 1 << 1, ANCS_FLAG_PRE_EXISTING = 1 << 2,
    ANCS_FLAG_POSITIVE_ACTION = 1 << 3, ANCS_FLAG_NEGATIVE_ACTION = 1 << 4
};

/* ---- Configuration ------------------------------------------------------- */
typedef struct {
    uint8_t id;          /* NotificationAttributeID */
    uint16_t max_length; /* Title, Subtitle, Message: the most bytes wanted; ignored for the others */
} ancs_attribute_request;

/* Every numeric field left 0 takes the microcontroller preset's value
 * (ancs_consumer_config_microcontroller: the same as the defaults below but
 * for the four table bounds, 16, 8, 4 and 128): a zero-initialised
 * configuration (with display_attributes set, or lazy without) works as that
 * preset does, with its stated worst case. The booleans are taken as given. */
typedef struct {
    uint32_t request_timeout_ms;   /* default 10 000 */
    uint8_t pipelining_depth;      /* commands whose response is due at once; default 1 */
    /* Ready to show: fetched for every notification, then ANCS_EVENT_READY.
     * NULL/0: lazy (no fetches; only ADDED/MODIFIED/REMOVED). Copied by init.
     * Default: AppIdentifier, Title 64, Message 256, Date. */
    const ancs_attribute_request *display_attributes;
    size_t display_attribute_count;
    bool display_app_names;        /* also the app's display name, once per app and session; default true */
    bool refresh_on_modified;      /* fetch a MODIFIED notification again, then ANCS_EVENT_UPDATED; default true */
    uint16_t max_notifications;    /* live notifications kept; default 512 */
    uint16_t max_cached_apps;      /* app names kept per session; default 128 */
    uint16_t max_requests;         /* application requests waiting at once; default 64 */
    uint16_t unlimited_value_length; /* longest value accepted for an attribute asked without a max length; default 1024 */
    /* Liveness (docs/REAL-IPHONE.md, "When notifications stop"), in seconds; 0 takes the
     * default, ANCS_OFF turns the check off. */
    uint32_t probe_interval_s;     /* a quiet session is probed after this long; default 300 */
    uint32_t silence_limit_s;      /* Notification Source silent this long: subscribe again; default 21 600 */
    uint32_t retry_interval_s;     /* what the phone refused is asked again after this long, then twice as long each time up to 16 times it; default 15 */
    /* What the display fetches (with display_attributes; zero: everything).
     * A notification not fetched is never READY; it is ADDED, MODIFIED and
     * REMOVED as any other. */
    uint32_t hidden_categories;    /* bit n set: CategoryID n is not fetched */
    bool skip_silent;              /* notifications with ANCS_FLAG_SILENT are not fetched */
    uint16_t max_pre_existing;     /* at most this many PreExisting fetched per session, the newest
                                      first; 0: all of them, ANCS_NONE_PRE_EXISTING: none */
    /* Apps whose notifications are not fetched: AppIdentifiers (NUL-terminated,
     * matched byte for byte, e.g. "com.facebook.Facebook"). Copied by init,
     * on the heap: their bytes come on top of ANCS_MICROCONTROLLER_HEAP_BOUND,
     * and so does each notification's AppIdentifier fetched alone while
     * it waits for its fetch (at most max_notifications of them).
     * The app is known only from the phone: while this list is not empty, a
     * notification whose app the session does not know yet is first asked
     * for its AppIdentifier alone, then for display_attributes if its app is
     * not hidden (two round trips instead of one). NULL/0: none hidden. */
    const char *const *hidden_apps;
    size_t hidden_app_count;
} ancs_consumer_config;

/* max_pre_existing: fetch none of the phone's backlog. */
#define ANCS_NONE_PRE_EXISTING 0xFFFFu

/* A liveness interval of ancs_consumer_config that is off. */
#define ANCS_OFF 0xFFFFFFFFu

/* Fills `config` with the defaults above (display_attributes points to static storage). */
void ancs_consumer_config_default(ancs_consumer_config *config);

/* Fills `config` for a microcontroller: the defaults, with every table small
 * and every value bounded (Swift: ConsumerConfiguration.microcontroller):
 * max_notifications 16, max_cached_apps 8, max_requests 4,
 * unlimited_value_length 128, the default display attributes (AppIdentifier,
 * Title 64, Message 256, Date) and app names.
 *
 * Worst-case RAM on a 32-bit target (BENCHMARKS.md section 8):
 *   heap   at most ANCS_MICROCONTROLLER_HEAP_BOUND bytes for a session, whatever
 *          the phone sends: the firmware images drive the worst case (more
 *          notifications than kept, each from another app, every value as long
 *          as accepted, the application's 4 requests waiting), through this
 *          header too (firmware/capi/worst-case.c, a NULL configuration), and
 *          fail past the bound; BENCHMARKS.md section 8 has the peaks measured
 *          on Cortex-M4 and RV32IMAC with 16-byte block headers (about 6 KB:
 *          the values of the one or two notifications the display is
 *          fetching, 8 apps' names (or apps the phone did not know), the
 *          response being reassembled, the requests). In storage given
 *          to ancs_heap_use(), the worst case needs about 6.3 KB of it, gaps
 *          between blocks included, and a random phone over 400 000 inputs
 *          about as much (measured, not proven: first fit does not bound
 *          fragmentation in theory; the margin is in BENCHMARKS.md).
 *          The application's own requests add the max lengths they ask.
 *   stack  the engine's deepest use through the C API, about 1 KB for a whole
 *          session driven from C (BENCHMARKS.md section 8); the NimBLE
 *          adapter's own frames add at most about 0.4 KB, and vsnprintf's
 *          unless built with ANCS_NIMBLE_LOG=0: the host task's stack needs
 *          these on top of NimBLE's own (ESP-IDF's 4 KB default holds them).
 *   static sizeof(ancs_consumer) per instance (768 bytes), nothing else. */
void ancs_consumer_config_microcontroller(ancs_consumer_config *config);
#define ANCS_MICROCONTROLLER_HEAP_BOUND 8192
/* The default display attributes (static storage) and their count. */
const ancs_attribute_request *ancs_default_display_attributes(size_t *count);

/* ---- Events -------------------------------------------------------------- */
typedef enum {
    ANCS_EVENT_SESSION_STARTED = 0, /* Notification Source is being subscribed: events may follow */
    ANCS_EVENT_SESSION_ENDED,       /* session_end says why; status: the failed subscription's result */
    ANCS_EVENT_ADDED,               /* notification fields; attributes: none yet */
    ANCS_EVENT_MODIFIED,
    ANCS_EVENT_REMOVED,             /* also when max_notifications drops the oldest */
    ANCS_EVENT_READY,               /* ready to show: attributes, app name if known */
    ANCS_EVENT_UPDATED,             /* shown before, fetched again after MODIFIED */
    ANCS_EVENT_DISPLAY_FAILED,      /* uid, status: the display's fetch failed */
    ANCS_EVENT_ATTRIBUTES,          /* a Get Notification Attributes response for a notification of the session: uid, attributes */
    ANCS_EVENT_APP_ATTRIBUTES,      /* a Get App Attributes response: app_identifier, attributes (AppAttributeIDs) */
    ANCS_EVENT_REQUEST_DONE,        /* request_id, status; on success of a fetch, uid/app_identifier and attributes */
    ANCS_EVENT_PROTOCOL_ERROR,      /* the phone sent bytes that break the format (they were dropped) */
    ANCS_EVENT_DATA_SOURCE_UNAVAILABLE, /* status: the Data Source subscription's result; fetches fail this session */
    ANCS_EVENT_UNKNOWN_EVENT,       /* a Notification Source EventID this library does not know: event_id */
    ANCS_EVENT_HEALTH,              /* whether notifications reach the accessory changed: health, and below */
    ANCS_EVENT_HIDDEN,              /* uid: not fetched, never READY (hidden_categories, hidden_apps,
                                       skip_silent, max_pre_existing); again after each MODIFIED */
    ANCS_EVENT_TYPE_INT_SIZE = 0x7FFFFFFF   /* not an event: keeps the enum int-sized (ANCS_ENUM_INT) */
} ancs_event_type;

/* What the phone's answers say about whether notifications reach the
 * accessory (docs/REAL-IPHONE.md, "When notifications stop"). Told on each change. */
typedef enum {
    ANCS_HEALTH_HEALTHY = 0,            /* nothing says otherwise; after another state: recovered */
    ANCS_HEALTH_WAITING_FOR_PERMISSION, /* the phone refused `refused` with the ATT error in status: 0x05 or 0x0F, not
                                           paired (the pairing declined or not answered); 0x08, notifications not
                                           allowed yet; asked again, backing off (retry_interval_s) */
    ANCS_HEALTH_NOT_SHARED,             /* Control Point writes refused 0x03 twice in a row: on the iPhone,
                                           Settings > Bluetooth > (i) > Share System Notifications */
    ANCS_HEALTH_RESUBSCRIBING,          /* writing both subscriptions again: resubscribe_reason says why */
    ANCS_HEALTH_BOND_LOST,              /* the phone forgot this accessory's bond (ancs_consumer_bond_lost) */
    ANCS_HEALTH_INT_SIZE = 0x7FFFFFFF   /* not a state: keeps the enum int-sized (ANCS_ENUM_INT) */
} ancs_health;

typedef enum {
    ANCS_RESUBSCRIBE_PROBE_UNANSWERED = 0,     /* the liveness probe, or more requests than the pipeline holds, got no answer */
    ANCS_RESUBSCRIBE_MISSED_NOTIFICATION,      /* the phone holds a notification Notification Source never announced */
    ANCS_RESUBSCRIBE_NOTIFICATION_SOURCE_SILENT, /* nothing on Notification Source for the silence limit */
    ANCS_RESUBSCRIBE_SUBSCRIPTION_LOST,        /* a write answered 0xFD: the phone holds no subscription */
    ANCS_RESUBSCRIBE_SHARING_RESTORED,         /* a write answered after "not shared" */
    ANCS_RESUBSCRIBE_INT_SIZE = 0x7FFFFFFF     /* not a reason: keeps the enum int-sized (ANCS_ENUM_INT) */
} ancs_resubscribe_reason;

typedef enum {
    ANCS_SESSION_LINK_DOWN = 0,
    ANCS_SESSION_UNSUBSCRIBED,
    ANCS_SESSION_SERVICE_UNPUBLISHED,
    ANCS_SESSION_SUBSCRIPTION_FAILED,
    ANCS_SESSION_RESUBSCRIBING,     /* subscribing again (off, then on): a new session follows */
    ANCS_SESSION_END_INT_SIZE = 0x7FFFFFFF   /* not a reason: keeps the enum int-sized (ANCS_ENUM_INT) */
} ancs_session_end;

typedef struct {
    uint8_t id;           /* NotificationAttributeID, or AppAttributeID in APP_ATTRIBUTES */
    uint16_t length;
    const uint8_t *value; /* `length` bytes, valid during the callback (NULL when length is 0) */
} ancs_attribute;

typedef struct {
    ancs_event_type type;
    ancs_status status;
    uint32_t request_id;
    ancs_session_end session_end;
    /* Notification fields (ADDED, MODIFIED, REMOVED, READY, UPDATED, ATTRIBUTES, DISPLAY_FAILED, UNKNOWN_EVENT) */
    uint32_t uid;
    uint8_t event_id;
    uint8_t event_flags;     /* ANCS_FLAG_* */
    uint8_t category_id;
    uint8_t category_count;
    bool pre_existing;
    const ancs_attribute *attributes;
    size_t attribute_count;
    /* READY, UPDATED: the app's display name (has_app_name false if none is known) */
    bool has_app_name;
    const uint8_t *app_name;
    size_t app_name_length;
    /* APP_ATTRIBUTES, REQUEST_DONE of an app fetch: the AppIdentifier (no NUL) */
    const uint8_t *app_identifier;
    size_t app_identifier_length;
    /* HEALTH: the state; WAITING_FOR_PERMISSION: the characteristic refused
     * (and status, the ATT error); RESUBSCRIBING: why. */
    ancs_health health;
    ancs_characteristic refused;
    ancs_resubscribe_reason resubscribe_reason;
} ancs_event;

typedef struct {
    /* Write (enable) or clear the characteristic's CCCD, then report with
     * ancs_consumer_subscription_result(). Data Source comes first. */
    void (*subscribe)(void *context, ancs_characteristic characteristic, bool enable);
    /* Write these bytes to the Control Point (a write with response), then
     * report with ancs_consumer_write_result(token). One at a time. */
    void (*write_control_point)(void *context, const uint8_t *bytes, size_t length, uint32_t token);
    /* Something for the application. */
    void (*event)(void *context, const ancs_event *event);
} ancs_consumer_callbacks;

/* ---- The heap ------------------------------------------------------------ */
/* Storage of the caller's for every allocation of this library: after
 * ancs_heap_use(storage, size), the engines' tables (ancs.h "Memory") are
 * made there, first fit, and never with the C library's malloc: the memory
 * is reserved when the firmware starts (a static array), nothing else in
 * the firmware can take it, and the library cannot take more. Call it
 * before ancs_consumer_init(), e.g.
 *   static uint8_t ancs_storage[ANCS_MICROCONTROLLER_HEAP_BOUND];
 *   ancs_heap_use(ancs_storage, sizeof ancs_storage);
 * for one instance of the microcontroller preset: its worst case, gaps
 * between blocks included, fits (BENCHMARKS.md section 8; N instances: N
 * times the bound). Storage too small for what an instance holds fails an
 * allocation, which traps (see "Memory"). Blocks have a header of two words
 * and are aligned to two. The storage is shared by every instance and not
 * locked: with it, every instance is driven from one task, or their calls
 * are serialized.
 * ANCS_ERR_BUSY while blocks are in use in the storage given before (deinit
 * every instance first); ANCS_ERR_INVALID_ARGUMENT for storage smaller than
 * four blocks' headers. NULL (and 0): back to the C library's heap. */
ancs_status ancs_heap_use(void *storage, size_t size);
/* The bytes of the storage in use now, headers included (0 once every
 * instance is deinitialized: nothing is kept). */
size_t ancs_heap_in_use(void);
/* The storage this library has needed since ancs_heap_use(): the end of the
 * highest block ever handed out, from the storage's start, so headers and
 * the gaps between blocks are counted. Storage of this size would have
 * served the same calls the same way: the figure to size it by. */
size_t ancs_heap_peak(void);

/* ---- The instance -------------------------------------------------------- */
/* Opaque, caller-provided. Large enough for this library on 32- and 64-bit
 * targets; ancs_consumer_init() checks it (ANCS_ERR_STORAGE otherwise). */
#define ANCS_CONSUMER_STORAGE_WORDS 96
typedef struct {
    uint64_t words[ANCS_CONSUMER_STORAGE_WORDS];
} ancs_consumer;

/* The bytes of ancs_consumer this build uses (at most sizeof(ancs_consumer)). */
size_t ancs_consumer_storage_size(void);

/* config may be NULL: the microcontroller preset
 * (ancs_consumer_config_microcontroller), whose heap has a stated worst case;
 * ancs_consumer_config_default() for the larger tables of a host. callbacks
 * and its three functions are
 * required; context is passed to them. The storage's previous contents are
 * ignored: deinit an instance before initializing its storage again. */
ancs_status ancs_consumer_init(ancs_consumer *consumer, const ancs_consumer_config *config,
                               const ancs_consumer_callbacks *callbacks, void *context);
/* Frees the engine's heap; the storage may then be reused or initialized again. */
ancs_status ancs_consumer_deinit(ancs_consumer *consumer);

/* ---- Inputs from the BLE stack ------------------------------------------- */
/* The link is up and encrypted, ANCS discovered (characteristics and CCCDs
 * known), with this ATT MTU: the session starts by subscribing Data Source. */
ancs_status ancs_consumer_link_up(ancs_consumer *consumer, uint16_t mtu, uint64_t now_ms);
ancs_status ancs_consumer_mtu_changed(ancs_consumer *consumer, uint16_t mtu, uint64_t now_ms);
/* A CCCD write asked by `subscribe` ended: 0, an ATT error code, or ANCS_ERR_TRANSPORT. */
ancs_status ancs_consumer_subscription_result(ancs_consumer *consumer, ancs_characteristic characteristic,
                                              ancs_status result, uint64_t now_ms);
/* A GATT notification's value from Notification Source / Data Source. */
ancs_status ancs_consumer_notification_source(ancs_consumer *consumer, const uint8_t *bytes, size_t length,
                                              uint64_t now_ms);
ancs_status ancs_consumer_data_source(ancs_consumer *consumer, const uint8_t *bytes, size_t length,
                                      uint64_t now_ms);
/* A Control Point write asked by `write_control_point` ended: 0, an ATT error
 * code (0xA0–0xA3 are the phone's answer to the command), or ANCS_ERR_TRANSPORT. */
ancs_status ancs_consumer_write_result(ancs_consumer *consumer, uint32_t token, ancs_status result,
                                       uint64_t now_ms);
ancs_status ancs_consumer_tick(ancs_consumer *consumer, uint64_t now_ms);
/* The link dropped: the session ends, requests end with ANCS_ERR_SESSION_ENDED. */
ancs_status ancs_consumer_link_down(ancs_consumer *consumer, uint64_t now_ms);
/* The bonded phone could not re-encrypt the link (its key is gone: "Forget
 * This Device"): told as ANCS_EVENT_HEALTH (BOND_LOST) until it answers again,
 * after pairing anew. Drop the stale bond and accept the phone's pairing. */
ancs_status ancs_consumer_bond_lost(ancs_consumer *consumer, uint64_t now_ms);
/* Service Changed: ANCS was removed (published = false: the session ends) or
 * published again (rediscover it first; then the session starts anew). */
ancs_status ancs_consumer_service_changed(ancs_consumer *consumer, bool published, uint64_t now_ms);
/* The application stops the session without dropping the link (unsubscribes). */
ancs_status ancs_consumer_stop(ancs_consumer *consumer, uint64_t now_ms);

/* When ancs_consumer_tick() next has something to do; false if nothing waits. */
bool ancs_consumer_next_deadline(const ancs_consumer *consumer, uint64_t *deadline_ms);
/* Whether a session is running (Notification Source subscribed or being subscribed). */
bool ancs_consumer_in_session(const ancs_consumer *consumer);

/* ---- Requests -------------------------------------------------------------
 * Each returns ANCS_OK and sets *request_id (which may be NULL) when the
 * request was taken; it then ends exactly once with ANCS_EVENT_REQUEST_DONE.
 * A request refused at once (not connected, unknown notification, too many)
 * also ends with that event, before the call returns, and the call returns
 * the same status. */
ancs_status ancs_consumer_fetch_attributes(ancs_consumer *consumer, uint32_t uid,
                                           const ancs_attribute_request *attributes, size_t count,
                                           uint64_t now_ms, uint32_t *request_id);
/* app_identifier: its bytes without a NUL; attributes: AppAttributeIDs (NULL/0: the display name). */
ancs_status ancs_consumer_fetch_app_attributes(ancs_consumer *consumer, const uint8_t *app_identifier,
                                               size_t length, const uint8_t *attributes, size_t count,
                                               uint64_t now_ms, uint32_t *request_id);
/* ANCS_ACTION_POSITIVE or ANCS_ACTION_NEGATIVE, on a notification of this session that offers it. */
ancs_status ancs_consumer_perform_action(ancs_consumer *consumer, uint32_t uid, uint8_t action,
                                         uint64_t now_ms, uint32_t *request_id);
/* An app's display name the firmware kept from an earlier session (as
 * ANCS_EVENT_APP_ATTRIBUTES told it: store those, e.g. in flash): cached as
 * if fetched, so the phone is not asked for it again. Give the names at
 * ANCS_EVENT_SESSION_STARTED (or between sessions): a session's end forgets
 * them with what it fetched; the cache keeps max_cached_apps, the oldest
 * dropped. app_identifier and name: bytes without a NUL. No event. */
ancs_status ancs_consumer_add_app_name(ancs_consumer *consumer, const uint8_t *app_identifier, size_t length,
                                       const uint8_t *name, size_t name_length);

/* Ends the request with ANCS_ERR_CANCELLED (a response that still comes is consumed). */
ancs_status ancs_consumer_cancel(ancs_consumer *consumer, uint32_t request_id, uint64_t now_ms);

#ifdef __cplusplus
}
#endif
#endif /* ANCS_H */
