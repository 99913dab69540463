/*
 * ancs_nimble.h — the ANCS consumer (ancs.h) on the NimBLE host.
 *
 * The adapter does the GATT client work an accessory needs around the
 * consumer engine, on one connection to the phone:
 *   - discovers the GATT service's Service Changed characteristic and
 *     subscribes to its indications, then discovers ANCS by UUID (its three
 *     characteristics and their CCCDs), and starts the session. One
 *     discovery at a time: what asks for another while one runs (Service
 *     Changed, encryption) makes it start over once the running one ends. A
 *     discovery refused for want of security is tried again once the link
 *     is encrypted (the Service Changed subscription too); one that fails
 *     otherwise, or whose security fails, is tried again every retry
 *     interval (ancs_consumer_config; 15 s when 0 or ANCS_OFF) while the
 *     link stays up. ANCS not found is looked for again when the link
 *     becomes encrypted (some phones publish it only then) and on Service
 *     Changed;
 *   - subscribes Data Source then Notification Source as the engine asks; a
 *     subscription refused with Insufficient Authentication or Encryption on
 *     a link that is not encrypted starts security (a Security Request from
 *     the peripheral; or, with security_by_application, nothing: the
 *     application starts it) and is written again once the link is
 *     encrypted (if security fails, the engine is told the refusal and
 *     subscribes again, backing off from the retry interval); at most 2
 *     Security Requests on a link and 4 in an hour (a person who declines
 *     pairing is not asked without end): past that the refusal goes to the
 *     engine at once (ANCS_HEALTH_WAITING_FOR_PERMISSION with 0x05 or 0x0F)
 *     and the phone may pair by itself; any
 *     other refusal (0x08 while the phone's user has not allowed
 *     notifications, for instance) ends the session, and the engine
 *     subscribes again every retry interval (ancs_consumer_config) while
 *     the link stays up;
 *   - one ATT request at a time on the link: a Control Point write the
 *     engine asks for while another GATT write of the adapter is in flight
 *     (a CCCD write, or a Control Point write the engine gave up on at its
 *     request timeout that NimBLE still waits for) is held
 *     (ANCS_NIMBLE_HELD_MAX bytes) and written once that one ends;
 *   - writes the Control Point, one write at a time (a long write, Prepare
 *     then Execute Write, for a command longer than MTU − 3, such as Get App
 *     Attributes of a long bundle identifier at MTU 23), and reports each
 *     write's ATT result (0xA0–0xA3 as such) with that write's own token: a
 *     write the engine abandoned at its request timeout (10 s) and NimBLE
 *     answers later (up to 30 s) is not taken for the next; a write NimBLE
 *     refuses at once is reported from the timer, after trying again every
 *     100 ms (ten times) when NimBLE is out of buffers (BLE_HS_ENOMEM);
 *   - CCCD writes one at a time, in the engine's order, after the write in
 *     flight: ancs_consumer_stop()'s two clears, and subscribing again (both
 *     off, then Data Source and Notification Source on); one NimBLE refuses
 *     for want of buffers (BLE_HS_ENOMEM) is tried again every 100 ms (ten
 *     times) before the engine is told it failed;
 *   - feeds Notification Source and Data Source notifications (up to 514
 *     bytes, ATT MTU 517 − 3; a longer one is reported and dropped, never
 *     cut), the MTU, the link's loss, and Service Changed (ANCS removed: the
 *     session ends; ANCS back: it is discovered again and a session starts);
 *   - the link's loss: NimBLE fails the pending GATT procedures with
 *     BLE_HS_ENOTCONN before BLE_GAP_EVENT_DISCONNECT; nothing is started
 *     from those callbacks, and the requests end with the link
 *     (ANCS_ERR_SESSION_ENDED). Each procedure's callback argument names the
 *     link instance it was started on: a callback of an earlier link (on a
 *     handle a new connection may have) changes nothing;
 *   - keeps the engine's timer on a NimBLE callout, its time NimBLE's ticks
 *     counted in 64 bits (a 32-bit tick count, and FreeRTOS's 32-bit
 *     conversion to milliseconds, wrap), armed only when its deadline
 *     changes (an event of another link, or a notification inside a value,
 *     re-arms nothing).
 *
 * Pairing, bonding and advertising stay the application's (its
 * ble_hs_cfg.sm_* settings and its store). The application forwards every
 * GAP event of its connections to ancs_nimble_gap_event() and calls the
 * request functions below; all of it from the NimBLE host task (the default
 * event queue): the adapter is not thread-safe, like ancs.h.
 *
 * One ancs_nimble serves one phone: a connection on which this accessory is
 * the peripheral (BLE_GAP_ROLE_SLAVE; the phone is the central) and that no
 * other ancs_nimble has taken. A connection this accessory made as central
 * (to a heart-rate strap, say) is never taken. The adapter takes the first
 * such connection and looks for ANCS on it; a connection whose central is
 * not an iPhone (a companion device, another phone: ANCS never found on it,
 * encrypted or not) is left for another peripheral connection that is up or
 * comes up, whose central may be the phone (the adapter remembers two), and
 * looked at again when its encryption changes. Once ANCS is found on a
 * connection the adapter keeps it until it drops. On a plain connection
 * without ANCS the adapter asks for encryption (some phones publish ANCS
 * only then), unless security_by_application. For two phones at
 * once, initialise two adapters and forward every GAP event to both: the
 * first that is free takes the new phone, the other ignores it. Storage is
 * the caller's; the adapters initialised are kept in a list, so storage is
 * freed only after ancs_nimble_deinit().
 */
#ifndef ANCS_NIMBLE_H
#define ANCS_NIMBLE_H

#include "ancs.h"
#include "host/ble_hs.h"
#include "nimble/nimble_npl.h"

/* ANCS_NIMBLE_LOG 0 (e.g. -DANCS_NIMBLE_LOG=0) compiles the adapter's
 * progress text out: on_event is then called for engine events only, and
 * nothing is formatted (no vsnprintf, no format strings in the firmware). */
#ifndef ANCS_NIMBLE_LOG
#define ANCS_NIMBLE_LOG 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The application's events: everything ancs.h tells (ancs_event), plus the
 * adapter's own progress as text (discovery, security, retries) for logs;
 * `text` is NULL for engine events and `event` NULL for progress. */
typedef void ancs_nimble_event_fn(void *context, const ancs_event *event, const char *text);

/* Other peripheral links an adapter remembers while it holds one (the phone may be one of them). */
#define ANCS_NIMBLE_OTHERS 2

/* The largest notification value: ATT_MTU 517 − 3. */
#define ANCS_NIMBLE_RX_MAX 514

/* The longest Control Point command the adapter holds while another GATT
 * write is in flight (ATT allows one request at a time) or NimBLE is out of
 * buffers. A longer one (Get App Attributes of an AppIdentifier over 120
 * bytes) that finds a write in flight ends as ANCS_ERR_TRANSPORT. */
#ifndef ANCS_NIMBLE_HELD_MAX
#define ANCS_NIMBLE_HELD_MAX 128
#endif

/* ANCS_NIMBLE_CHECK_TASK 1 (a debug build's choice) checks that every
 * function of the adapter but ancs_nimble_post runs on the task that called
 * ancs_nimble_init (NimBLE's host task): a call from another task calls
 * ANCS_NIMBLE_WRONG_TASK(adapter), assert(0) unless defined, before it
 * touches anything. Reference counts in the engine are not atomic: such a
 * call corrupts the heap. */
#ifndef ANCS_NIMBLE_CHECK_TASK
#define ANCS_NIMBLE_CHECK_TASK 0
#endif

/* ANCS_NIMBLE_CALLOUT_DEINIT 1 where NimBLE's porting layer has
 * ble_npl_callout_deinit (ESP-IDF, the default there; later NimBLE
 * releases): ancs_nimble_deinit() then releases the timer (FreeRTOS creates
 * one at every ble_npl_callout_init), so storage freed after it leaks
 * nothing. Without it (0, the pinned NimBLE's ports), the callout is kept
 * across deinit and init on the same storage, never made twice; storage
 * freed after deinit leaves the port's timer behind (one per adapter
 * storage ever freed): keep adapters in static storage there. */
#ifndef ANCS_NIMBLE_CALLOUT_DEINIT
#if defined(ESP_PLATFORM)
#define ANCS_NIMBLE_CALLOUT_DEINIT 1
#else
#define ANCS_NIMBLE_CALLOUT_DEINIT 0
#endif
#endif

struct ancs_nimble;
struct ancs_nimble_media;          /* ancs_nimble_media.h: AMS and CTS beside ANCS, when asked for */
struct ancs_nimble_media_hooks;
/* The argument of the adapter's GATT procedures: one per link instance in
 * turn, so that a callback of an earlier link is told apart (ancs_nimble.c). */
struct ancs_nimble_link {
    struct ancs_nimble *adapter;
};
/* The argument of a Control Point write: its own token and link instance, so
 * that the callback of a write the engine abandoned (its request timed out,
 * 10 s, while NimBLE waits up to 30 s) is not taken for a later write's. */
struct ancs_nimble_write {
    struct ancs_nimble *adapter;
    uint32_t token;
    uint8_t epoch;
    bool pending;
};

typedef struct ancs_nimble {
    ancs_consumer consumer;
    ancs_nimble_event_fn *on_event;
    void *context;
    struct ancs_nimble *self;      /* with magic: this storage holds an initialised adapter */
    uint32_t magic;
    uint32_t timer_magic;          /* the timer was initialised on this storage (kept across init) */
    uint16_t conn;                 /* BLE_HS_CONN_HANDLE_NONE when none */
    /* discovered handles (0: not found) */
    uint16_t ancs_start, ancs_end;
    uint16_t ns_value, cp_value, ds_value, ns_cccd, ds_cccd;
    uint16_t gatt_start, gatt_end, sc_value, sc_cccd;
    uint16_t values[8];            /* characteristic value handles of the service being discovered */
    uint8_t value_count;
    uint8_t phase;                 /* what the adapter is doing (ancs_nimble.c) */
    uint8_t epoch;                 /* the link instance: links[epoch % 4] is its procedures' argument */
    uint8_t cccd_queue[4];         /* CCCD writes waiting for the write in flight, in order: characteristic << 1 | on */
    uint8_t cccd_queued;
    bool link_given;               /* the engine was told link up */
    bool published;                /* ANCS found on the phone */
    bool discovery_wanted;         /* discover again once the write in flight ends */
    bool security_started;
    uint8_t security_link_asks;    /* Security Requests made on this link */
    uint8_t security_hour_asks;    /* ... since security_hour_start */
    uint64_t security_hour_start;
    bool link_lost;                /* NimBLE failed a procedure with BLE_HS_ENOTCONN: the link is going */
    bool ancs_seen;                /* ANCS was found on this link at least once: it is the phone's */
    /* other peripheral links up, not held by an adapter: the phone may be one of them */
    uint16_t others[ANCS_NIMBLE_OTHERS];        /* BLE_HS_CONN_HANDLE_NONE when free */
    bool others_examined[ANCS_NIMBLE_OTHERS];       /* ANCS looked for there and not found, and its encryption unchanged since */
    uint8_t writes_in_flight;      /* GATT writes issued and not answered */
    int8_t resubscribe;            /* an ancs_characteristic to write again once encrypted, or -1 */
    /* Set after ancs_nimble_init: true leaves starting security to the
     * application (the adapter never calls ble_gap_security_initiate; it
     * still writes again once the link is encrypted). Default false: the
     * adapter asks for security when the phone answers Insufficient
     * Authentication or Encryption. */
    bool security_by_application;
    uint8_t cp_next;               /* the write slot tried first for the next Control Point write */
    struct ancs_nimble_write cp_writes[4];   /* Control Point writes NimBLE has not answered */
    bool retry_due;                /* discovery is tried again at retry_at (it failed, or security failed) */
    uint64_t retry_at;
    uint32_t retry_ms;             /* the engine's retry interval */
    struct ancs_nimble *next_instance;   /* the adapters initialised, so that two never take one link */
    /* a Control Point write that did not start: held until the write in
     * flight ends (one ATT request at a time), tried again (BLE_HS_ENOMEM),
     * or reported from the timer */
    bool deferred;
    bool deferred_waits;           /* held for the write in flight, not for deferred_at */
    uint8_t deferred_tries;
    uint8_t deferred_length;       /* bytes kept to write (0: report the failure) */
    uint32_t deferred_token;
    ancs_status deferred_status;
    uint64_t deferred_at;
    uint8_t deferred_bytes[ANCS_NIMBLE_HELD_MAX];
    /* a CCCD write NimBLE refused for want of buffers: the queue's head, tried again at cccd_retry_at */
    bool cccd_retry_due;
    uint8_t cccd_tries;
    uint64_t cccd_retry_at;
    ble_npl_time_t last_tick;      /* NimBLE's tick count when last read */
    uint32_t ticks_per_second;
    uint64_t ticks;                /* ticks since init (64 bits: does not wrap) */
    struct ble_npl_eventq *eventq; /* the queue the timer's (and posted requests') events go to */
    void *task;                    /* the task that called init (ANCS_NIMBLE_CHECK_TASK) */
    struct ble_npl_callout timer;
    bool timer_armed;              /* the timer is armed, for timer_due (ms) */
    uint64_t timer_due;
    struct ancs_nimble_link links[4];
    /* the media part (ancs_nimble_media_init), NULL without: reached only through its hooks */
    struct ancs_nimble_media *media;
    const struct ancs_nimble_media_hooks *media_hooks;
    uint8_t rx[ANCS_NIMBLE_RX_MAX];
} ancs_nimble;

/* ANCS_NIMBLE_NULL_CONFIG_DEFAULTS 1 makes a NULL config the defaults
 * (ancs_consumer_config_default: tables for a host) instead of ancs.h's
 * microcontroller preset (the ESP-IDF component's Kconfig). */
#ifndef ANCS_NIMBLE_NULL_CONFIG_DEFAULTS
#define ANCS_NIMBLE_NULL_CONFIG_DEFAULTS 0
#endif

/* Prepares the adapter (config as in ancs.h: NULL for the microcontroller
 * preset, or the defaults with ANCS_NIMBLE_NULL_CONFIG_DEFAULTS). The
 * storage may hold anything; if it holds an adapter initialised before (and
 * not deinitialised), that one is deinitialised first, as below, and its
 * on_event hears its session end; BLE_HS_EBUSY if that is refused. */
int ancs_nimble_init(ancs_nimble *adapter, const ancs_consumer_config *config,
                     ancs_nimble_event_fn *on_event, void *context);

/* As ancs_nimble_init, with the engine's timer on `eventq`: the queue of the
 * task that runs the NimBLE host (the adapter's functions are called from
 * that task). NULL is the default queue: Mynewt's (os_eventq_dflt_get), or
 * the porting layer's (nimble_port_get_dflt_eventq) elsewhere. Built with
 * ANCS_NIMBLE_NO_DEFAULT_EVENTQ (a port with neither), the adapter references
 * no default queue and NULL is refused (BLE_HS_EINVAL). ancs_nimble_init
 * passes NULL. */
int ancs_nimble_init_on_queue(ancs_nimble *adapter, const ancs_consumer_config *config,
                              ancs_nimble_event_fn *on_event, void *context, struct ble_npl_eventq *eventq);

/* Stops the adapter: the session ends (requests end with
 * ANCS_ERR_SESSION_ENDED, then ANCS_EVENT_SESSION_ENDED; the CCCDs are left
 * as they are: ancs_consumer_stop() first to unsubscribe), the timer is
 * stopped and the engine's heap freed; the storage may then be freed or
 * initialised again. Returns BLE_HS_EBUSY, and changes nothing, while a GATT
 * procedure of the adapter is pending (NimBLE's callback would reach the
 * storage): call it again once it ended, or after BLE_GAP_EVENT_DISCONNECT.
 * 0 otherwise, also on storage not initialised. From the host task. A timer
 * event NimBLE queued just before is ignored when it runs, but reads the
 * storage: free it from an event put on the adapter's queue after this call
 * (NimBLE's NPL cannot take a queued callout event back portably). */
int ancs_nimble_deinit(ancs_nimble *adapter);

/* Every GAP event of the application's connections. Returns 0, except for
 * BLE_GAP_EVENT_REPEAT_PAIRING of the adapter's link: the phone forgot the
 * bond, the adapter drops the stale one (ble_store_util_delete_peer), tells
 * the engine (ANCS_HEALTH_BOND_LOST) and returns BLE_GAP_REPEAT_PAIRING_RETRY,
 * which the application returns to NimBLE. For a repeat pairing on another
 * link it returns 0, which is neither RETRY nor IGNORE: the application
 * decides (docs/FIRMWARE.md, "Firmware (C, NimBLE)"). An encryption that fails for a missing key is handled
 * like a repeat pairing (and pairing is asked for again, unless
 * security_by_application). */
int ancs_nimble_gap_event(ancs_nimble *adapter, struct ble_gap_event *event);

/* Takes a peripheral link that is already up, as BLE_GAP_EVENT_CONNECT
 * would have: after ancs_nimble_init() with the phone still connected (a
 * "notifications off, then on" switch that deinitialises the adapter, for
 * instance), the application passes the phone's handle. 0; BLE_HS_ENOTCONN
 * if no such link is up, BLE_HS_EINVAL if this accessory is its central,
 * BLE_HS_EALREADY if this or another adapter holds it. A link taken while
 * the adapter holds another is remembered, as for a new connection. */
int ancs_nimble_attach(ancs_nimble *adapter, uint16_t conn_handle);

/* The session stopped without dropping the link (ancs_consumer_stop: both
 * CCCDs cleared), and started again on the link held (both subscribed anew;
 * nothing if a session runs, or ANCS was not found on the link yet: the
 * session then starts once it is). 0; BLE_HS_ENOTCONN from
 * ancs_nimble_start without a link. */
int ancs_nimble_stop(ancs_nimble *adapter);
int ancs_nimble_start(ancs_nimble *adapter);

/* A request from another task (a UI task's button press, say): filled by
 * the caller, handed to ancs_nimble_post, run on the adapter's queue (the
 * host task's, ancs_nimble_init_on_queue) as the function of the same name
 * would run there. The storage is the caller's until `done` is called (on
 * the host task, after the request ran; NULL: not told): keep it, unchanged,
 * until then. ancs_nimble_post is the one function of the adapter safe to
 * call from any task: it only puts the request's event on the queue. A
 * request still queued when the adapter is deinitialised ends with
 * ANCS_ERR_STORAGE. */
typedef enum {
    ANCS_NIMBLE_FETCH_ATTRIBUTES,      /* uid, attributes, attribute_count -> request_id */
    ANCS_NIMBLE_FETCH_APP_ATTRIBUTES,  /* app_identifier -> request_id */
    ANCS_NIMBLE_PERFORM_ACTION,        /* uid, action -> request_id */
    ANCS_NIMBLE_CANCEL,                /* request_id */
    ANCS_NIMBLE_STOP,
    ANCS_NIMBLE_START,
    ANCS_NIMBLE_AMS_PERFORM,           /* action: the RemoteCommandID (ams.h) -> request_id; with
                                          ancs_nimble_media_post (ancs_nimble_media.h) */
} ancs_nimble_request_kind;

typedef struct ancs_nimble_request {
    struct ble_npl_event event;        /* the adapter's */
    ancs_nimble *adapter;              /* set by ancs_nimble_post */
    ancs_nimble_request_kind kind;
    uint32_t uid;
    uint8_t action;
    const ancs_attribute_request *attributes;
    size_t attribute_count;
    const char *app_identifier;
    uint32_t request_id;               /* out (ANCS_NIMBLE_CANCEL: in) */
    ancs_status status;                /* out: as the function returns it (ANCS_NIMBLE_STOP/START: ANCS_OK, or ANCS_ERR_NOT_CONNECTED) */
    void (*done)(struct ancs_nimble_request *request);
    void *context;                     /* the caller's */
} ancs_nimble_request;

/* 0; BLE_HS_EINVAL without an adapter, a request or its queue. */
int ancs_nimble_post(ancs_nimble *adapter, ancs_nimble_request *request);

/* The adapter's clock, in milliseconds since init: the now_ms of the
 * ancs_consumer_* functions an application calls itself
 * (ancs_nimble_consumer). */
uint64_t ancs_nimble_now_ms(ancs_nimble *adapter);

/* Requests, as in ancs.h (the time is the adapter's). */
ancs_status ancs_nimble_fetch_attributes(ancs_nimble *adapter, uint32_t uid, const ancs_attribute_request *attributes,
                                         size_t count, uint32_t *request_id);
ancs_status ancs_nimble_fetch_app_attributes(ancs_nimble *adapter, const char *app_identifier, uint32_t *request_id);
ancs_status ancs_nimble_perform_action(ancs_nimble *adapter, uint32_t uid, uint8_t action, uint32_t *request_id);

/* The engine, for what the functions above do not cover (ancs_consumer_in_session, …). */
ancs_consumer *ancs_nimble_consumer(ancs_nimble *adapter);

#ifdef __cplusplus
}
#endif
#endif /* ANCS_NIMBLE_H */
