/*
 * ancs_nimble.c — the ANCS consumer on NimBLE's GATT client (see ancs_nimble.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ancs_nimble.h"
#include "ancs_nimble_internal.h"

/* The event queue of a NULL eventq: Mynewt's default queue, or NimBLE's
 * porting layer's (FreeRTOS, Zephyr, Linux, ...), which Mynewt lacks. A port
 * with neither defines ANCS_NIMBLE_NO_DEFAULT_EVENTQ and always passes a
 * queue; the adapter then references no default queue at all. */
#if defined(MYNEWT)
#define default_eventq() ble_npl_eventq_dflt_get()
#elif defined(ANCS_NIMBLE_NO_DEFAULT_EVENTQ)
#define default_eventq() ((struct ble_npl_eventq *)NULL)
#else
#include "nimble/nimble_port.h"
#define default_eventq() nimble_port_get_dflt_eventq()
#endif

/* The ANCS UUIDs (ancs.h) */
static const ble_uuid128_t ancs_service_uuid = BLE_UUID128_INIT(ANCS_UUID_SERVICE_LE);
static const ble_uuid128_t notification_source_uuid = BLE_UUID128_INIT(ANCS_UUID_NOTIFICATION_SOURCE_LE);
static const ble_uuid128_t control_point_uuid = BLE_UUID128_INIT(ANCS_UUID_CONTROL_POINT_LE);
static const ble_uuid128_t data_source_uuid = BLE_UUID128_INIT(ANCS_UUID_DATA_SOURCE_LE);
#define GATT_SERVICE_UUID16 0x1801
#define SERVICE_CHANGED_UUID16 0x2A05
#define ATT_ATTRIBUTE_NOT_FOUND 0x0A

/* A Control Point write NimBLE refused for want of buffers (BLE_HS_ENOMEM) is tried again this
 * much later, this many times, before it is reported failed. */
enum { ENOMEM_RETRY_MS = 100, ENOMEM_RETRIES = 10 };
#define ANCS_NIMBLE_MAGIC 0x414E4342u   /* "ANCB": the storage holds an initialised adapter */
#define LINKS (sizeof ((ancs_nimble *)0)->links / sizeof ((ancs_nimble *)0)->links[0])

enum phase {
    PHASE_IDLE,
    PHASE_GATT_SERVICE,
    PHASE_GATT_CHARACTERISTICS,
    PHASE_GATT_DESCRIPTORS,
    PHASE_ANCS_SERVICE,
    PHASE_ANCS_CHARACTERISTICS,
    PHASE_ANCS_DESCRIPTORS,
    PHASE_READY,
    PHASE_ABSENT,        /* ANCS is not on the phone now: wait for Service Changed */
};

#if !ANCS_NIMBLE_LOG
static inline void say(ancs_nimble *a, const char *format, ...) __attribute__((format(printf, 2, 3)));
#endif
static void discover_ancs(ancs_nimble *a);
static void discover(ancs_nimble *a);
static void schedule(ancs_nimble *a);

/* The adapter's progress as text for on_event. With ANCS_NIMBLE_LOG 0 the
 * body is empty: the calls, their format strings and vsnprintf are compiled
 * out (scripts/firmware-size.sh checks that vsnprintf is not referenced). */
#if ANCS_NIMBLE_LOG
#define say ancs_nimble_say_   /* the media part's text too (ancs_nimble_internal.h) */
void
say(ancs_nimble *a, const char *format, ...)
{
    char text[160];
    va_list args;

    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    a->on_event(a->context, NULL, text);
}
#else
static inline void
say(ancs_nimble *a, const char *format, ...)
{
    (void)a;
    (void)format;
}
#endif

/* Milliseconds since init. Ticks are subtracted before any conversion: the
 * tick count wraps at 2^32, and ports convert ticks to milliseconds in 32
 * bits (FreeRTOS's ticks * 1000 / configTICK_RATE_HZ wraps after 71.6 min at
 * 1 kHz), so converted values jump. The running count is 64-bit ticks,
 * converted whole (no rounding adds up). */
static uint64_t
now(ancs_nimble *a)
{
    ble_npl_time_t t = ble_npl_time_get();

    a->ticks += (ble_npl_time_t)(t - a->last_tick);
    a->last_tick = t;
    return a->ticks * 1000 / a->ticks_per_second;
}

/* The argument of a GATT procedure started now: the current link instance's. */
static void *
link_arg(ancs_nimble *a)
{
    return &a->links[a->epoch % LINKS];
}

/* The adapter a GATT callback is for, or NULL when it must be ignored: a
 * callback of an earlier link (NimBLE may call one late, e.g. a 30 s timeout,
 * when the handle belongs to a new connection), or one failed with
 * BLE_HS_ENOTCONN. NimBLE fails the pending procedures with BLE_HS_ENOTCONN
 * when the link drops, before it removes the connection and before
 * BLE_GAP_EVENT_DISCONNECT: nothing may be started then (NimBLE would take it
 * on the dying connection and time it out 30 s later, terminating the handle
 * whoever has it then), and the requests end with the link
 * (ANCS_ERR_SESSION_ENDED), not as transport failures. */
static ancs_nimble *
current(ancs_nimble *a, bool this_link, uint16_t conn, int status)
{
    if (conn != a->conn || !this_link) return NULL;
    if (status == BLE_HS_ENOTCONN) {
        if (!a->link_lost) say(a, "link lost: GATT procedures failed, waiting for the disconnection");
        a->link_lost = true;
        return NULL;
    }
    return a;
}

static ancs_nimble *
link_of(void *arg, uint16_t conn, int status)
{
    struct ancs_nimble_link *link = arg;
    ancs_nimble *a = link->adapter;

    return current(a, link == &a->links[a->epoch % LINKS], conn, status);
}

/* An ATT result in ancs.h's number space, from a NimBLE status. */
static ancs_status
result_of(int status)
{
    if (status == 0) return ANCS_OK;
    if (status > BLE_HS_ERR_ATT_BASE && status <= BLE_HS_ERR_ATT_BASE + 0xFF) return status - BLE_HS_ERR_ATT_BASE;
    return ANCS_ERR_TRANSPORT;
}

static bool
encrypted(ancs_nimble *a)
{
    struct ble_gap_conn_desc desc;

    return ble_gap_conn_find(a->conn, &desc) == 0 && desc.sec_state.encrypted;
}

static bool
wants_security(ancs_nimble *a, int status)
{
    return (status == BLE_HS_ATT_ERR(BLE_ATT_ERR_INSUFFICIENT_AUTHEN) ||
            status == BLE_HS_ATT_ERR(BLE_ATT_ERR_INSUFFICIENT_ENC)) && !encrypted(a);
}

/* Security Requests made, per link and per hour: a person who declines
 * pairing (or a phone that fails it) is not asked without end. After the
 * bound the adapter waits for the phone: the engine is told the refusal
 * (ANCS_HEALTH_WAITING_FOR_PERMISSION with 0x05 or 0x0F) and subscribes
 * again, backing off, and the phone may pair by itself. */
enum { SECURITY_ASKS_PER_LINK = 2, SECURITY_ASKS_PER_HOUR = 4 };

/* The phone answered Insufficient Authentication or Encryption, or publishes
 * no ANCS on a plain link: security is asked for. False when it is not (the
 * bound above reached): what needed it is then told refused. */
static bool
start_security(ancs_nimble *a)
{
    int rc;
    uint64_t t = now(a);

    if (a->security_started) return true;
    if (a->security_by_application) {
        a->security_started = true;
        say(a, "security: an encrypted link is the application's to ask for");
        return true;
    }
    if (t - a->security_hour_start >= 3600000) {
        a->security_hour_start = t;
        a->security_hour_asks = 0;
    }
    if (a->security_link_asks >= SECURITY_ASKS_PER_LINK || a->security_hour_asks >= SECURITY_ASKS_PER_HOUR) {
        say(a, "security: asked %u times on this link, %u this hour: waiting for the phone to pair",
            a->security_link_asks, a->security_hour_asks);
        return false;
    }
    a->security_started = true;
    a->security_link_asks++;
    a->security_hour_asks++;
    rc = ble_gap_security_initiate(a->conn);
    say(a, "security: asking for an encrypted link (rc %d)", rc);
    return true;
}

/* ---- the engine's callbacks ---- */

static int on_ns_cccd_written(uint16_t conn, const struct ble_gatt_error *error, struct ble_gatt_attr *attr, void *arg);
static int on_ds_cccd_written(uint16_t conn, const struct ble_gatt_error *error, struct ble_gatt_attr *attr, void *arg);
static int on_cccd_cleared(uint16_t conn, const struct ble_gatt_error *error, struct ble_gatt_attr *attr, void *arg);

/* A GATT write of ours ended: the adapter, or NULL when the callback is to be ignored (link_of). */
static ancs_nimble *
write_ended(void *arg, uint16_t conn, int status)
{
    ancs_nimble *a = link_of(arg, conn, status);

    if (a && a->writes_in_flight) a->writes_in_flight--;
    return a;
}

static void start_cccd_write(ancs_nimble *a, ancs_characteristic which, bool enable);

/* After a write ended: the queued CCCD writes, one at a time, or discovery. */
static void try_deferred(ancs_nimble *a, uint64_t t);

static void
after_write(ancs_nimble *a)
{
    while (a->writes_in_flight == 0 && a->cccd_queued && !a->cccd_retry_due) {
        uint8_t next = a->cccd_queue[0];
        memmove(a->cccd_queue, a->cccd_queue + 1, --a->cccd_queued);
        start_cccd_write(a, (ancs_characteristic)(next >> 1), next & 1);
    }
    if (a->writes_in_flight == 0 && a->deferred && a->deferred_waits) try_deferred(a, now(a));   /* the held write goes */
    if (a->discovery_wanted && a->writes_in_flight == 0) discover(a);
    schedule(a);
}

/* A CCCD write the engine asks for. While another GATT write of the adapter
 * is in flight it waits, in the engine's order: subscribing again asks for
 * Notification Source off, Data Source off, Data Source on, and a clear
 * written after the enable would leave Data Source off (every fetch then
 * answered 0xFD, and subscribing again once more, without end). */
static void
write_cccd(ancs_nimble *a, ancs_characteristic which, bool enable)
{
    if (a->link_lost) return;   /* the link is going: its loss ends the session */
    if (a->writes_in_flight > 0 || a->cccd_queued) {
        if (a->cccd_queued < sizeof a->cccd_queue) a->cccd_queue[a->cccd_queued++] = (uint8_t)(which << 1 | enable);
        else if (enable) ancs_consumer_subscription_result(&a->consumer, which, ANCS_ERR_TRANSPORT, now(a));
        return;
    }
    start_cccd_write(a, which, enable);
}

static void
start_cccd_write(ancs_nimble *a, ancs_characteristic which, bool enable)
{
    uint8_t value[2] = { enable ? 1 : 0, 0 };
    uint16_t handle = which == ANCS_NOTIFICATION_SOURCE ? a->ns_cccd : a->ds_cccd;
    int rc;

    if (a->link_lost) return;
    if (!handle || a->conn == BLE_HS_CONN_HANDLE_NONE) {
        if (enable) ancs_consumer_subscription_result(&a->consumer, which, handle ? ANCS_ERR_TRANSPORT : ATT_ATTRIBUTE_NOT_FOUND, now(a));
        return;
    }
    rc = ble_gattc_write_flat(a->conn, handle, value, sizeof value,
                              !enable ? on_cccd_cleared
                              : which == ANCS_NOTIFICATION_SOURCE ? on_ns_cccd_written : on_ds_cccd_written, link_arg(a));
    if (rc == 0) {
        a->writes_in_flight++;
        a->cccd_tries = 0;
    } else if (rc == BLE_HS_ENOMEM && a->cccd_tries < ENOMEM_RETRIES && a->cccd_queued < sizeof a->cccd_queue) {
        /* Out of buffers: back at the queue's head, tried again ENOMEM_RETRY_MS later (the timer). */
        memmove(a->cccd_queue + 1, a->cccd_queue, a->cccd_queued++);
        a->cccd_queue[0] = (uint8_t)(which << 1 | enable);
        a->cccd_tries++;
        a->cccd_retry_due = true;
        a->cccd_retry_at = now(a) + ENOMEM_RETRY_MS;
        schedule(a);   /* the engine may have called from an application's ancs_consumer_* call */
    } else {
        a->cccd_tries = 0;
        if (enable) ancs_consumer_subscription_result(&a->consumer, which, ANCS_ERR_TRANSPORT, now(a));
    }
}

static void
engine_subscribe(void *context, ancs_characteristic which, bool enable)
{
    write_cccd(context, which, enable);
}

/* A Control Point write ended: its result goes with its own token (the
 * engine ignores the token of a write it abandoned at its request timeout). */
static int
on_cp_written(uint16_t conn, const struct ble_gatt_error *error, struct ble_gatt_attr *attr, void *arg)
{
    struct ancs_nimble_write *w = arg;
    ancs_nimble *a = w->adapter;

    (void)attr;
    w->pending = false;   /* the slot is free once NimBLE called back, whatever link it was on */
    if (!(a = current(a, w->epoch == a->epoch, conn, error->status))) return 0;
    if (a->writes_in_flight) a->writes_in_flight--;
    ancs_consumer_write_result(&a->consumer, w->token, result_of(error->status), now(a));
    after_write(a);
    return 0;
}

/* Starts a Control Point write in a free slot, taken in turn (a slot is
 * reused last, so a late callback of one link is never read as another's). */
static int
write_control_point(ancs_nimble *a, const uint8_t *bytes, size_t length, uint32_t token)
{
    struct ancs_nimble_write *w = NULL;
    int rc;

    for (int i = 0; i < 4 && !w; i++) {
        struct ancs_nimble_write *s = &a->cp_writes[(a->cp_next + i) % 4];
        if (!s->pending) w = s;
    }
    if (!w) return BLE_HS_EBUSY;   /* four writes NimBLE never answered */
    w->adapter = a;
    w->token = token;
    w->epoch = a->epoch;
    if (length + 3 <= ble_att_mtu(a->conn)) {
        rc = ble_gattc_write_flat(a->conn, a->cp_value, bytes, (uint16_t)length, on_cp_written, w);
    } else {
        /* Longer than one Write Request carries (MTU - 3; e.g. Get App
         * Attributes of a long bundle identifier at MTU 23): a long write,
         * Prepare Write requests then Execute Write. */
        struct os_mbuf *om = ble_hs_mbuf_from_flat(bytes, (uint16_t)length);
        rc = om ? ble_gattc_write_long(a->conn, a->cp_value, 0, om, on_cp_written, w) : BLE_HS_ENOMEM;
    }
    if (rc == 0) {
        w->pending = true;
        a->cp_next = (uint8_t)(w - a->cp_writes + 1) % 4;
        a->writes_in_flight++;
    }
    return rc;
}

/* A write that did not start is reported from the timer, never from inside the engine's callback:
 * the engine would write the next command at once, and a stack that keeps refusing would nest a
 * failure per queued request (each one failed). BLE_HS_ENOMEM is tried again later first. */
static void
defer_write_failure(ancs_nimble *a, const uint8_t *bytes, size_t length, uint32_t token, int rc)
{
    a->deferred = true;
    a->deferred_token = token;
    a->deferred_status = a->cp_value ? ANCS_ERR_TRANSPORT : ATT_ATTRIBUTE_NOT_FOUND;
    a->deferred_at = now(a);
    a->deferred_length = 0;
    if (rc == BLE_HS_ENOMEM && length <= sizeof a->deferred_bytes) {
        if (bytes != a->deferred_bytes) {   /* a new write (not a try again) */
            memcpy(a->deferred_bytes, bytes, length);
            a->deferred_tries = 0;
        }
        a->deferred_length = (uint8_t)length;
    }
    if (a->deferred_length) {
        if (a->deferred_tries < ENOMEM_RETRIES) a->deferred_at += ENOMEM_RETRY_MS;
        else a->deferred_length = 0;   /* report it now */
    }
    schedule(a);   /* the engine may have called from an application's ancs_consumer_* call */
}

/* Another GATT write of the adapter is in flight (a CCCD write, or a
 * Control Point write the engine abandoned at its request timeout while
 * NimBLE waits up to 30 s): the command is held and written once that one
 * ends (after_write), as ATT allows one request at a time. The engine writes
 * the next command only after this one's result or its timeout, so a
 * command held before is one the engine gave up on: it is replaced. */
static void
hold_write(ancs_nimble *a, const uint8_t *bytes, size_t length, uint32_t token)
{
    if (length > sizeof a->deferred_bytes) {   /* ANCS_NIMBLE_HELD_MAX */
        defer_write_failure(a, bytes, length, token, BLE_HS_EMSGSIZE);
        return;
    }
    a->deferred = a->deferred_waits = true;
    a->deferred_token = token;
    a->deferred_status = ANCS_ERR_TRANSPORT;
    a->deferred_tries = 0;
    a->deferred_length = (uint8_t)length;
    memcpy(a->deferred_bytes, bytes, length);
}

static void
engine_write(void *context, const uint8_t *bytes, size_t length, uint32_t token)
{
    ancs_nimble *a = context;
    int rc = BLE_HS_ENOTCONN;

    if (a->link_lost) return;   /* the link is going: its loss ends the request (ANCS_ERR_SESSION_ENDED) */
    a->deferred = a->deferred_waits = false;
    if (a->cp_value && a->conn != BLE_HS_CONN_HANDLE_NONE && length <= 0xFFFF) {
        if (a->writes_in_flight > 0) { hold_write(a, bytes, length, token); return; }
        rc = write_control_point(a, bytes, length, token);
    }
    if (rc != 0) defer_write_failure(a, bytes, length, token, rc);
}

/* A deferred write, when it may go (nothing in flight): written, tried
 * again later (BLE_HS_ENOMEM), or its failure reported now. Not after the
 * session ended (ancs_consumer_stop, for instance): the engine ended its
 * request then, and the result it is told is ignored. */
static void
try_deferred(ancs_nimble *a, uint64_t t)
{
    int rc;

    a->deferred = a->deferred_waits = false;
    if (a->deferred_length && a->conn != BLE_HS_CONN_HANDLE_NONE && a->cp_value &&
        ancs_consumer_in_session(&a->consumer)) {
        a->deferred_tries++;
        rc = write_control_point(a, a->deferred_bytes, a->deferred_length, a->deferred_token);
        if (rc == 0) return;
        if (rc == BLE_HS_ENOMEM) {
            defer_write_failure(a, a->deferred_bytes, a->deferred_length, a->deferred_token, rc);
            if (a->deferred_length) return;
        }
    }
    ancs_consumer_write_result(&a->consumer, a->deferred_token, a->deferred_status, t);
}

/* From the timer: a deferred write's time has come (unless it waits for the write in flight). */
static void
deferred_write(ancs_nimble *a, uint64_t t)
{
    if (!a->deferred || a->deferred_waits || t < a->deferred_at) return;
    if (a->writes_in_flight > 0) { a->deferred_waits = true; return; }   /* after that one */
    try_deferred(a, t);
}

/* A refused subscription (0x08 until the phone's user allows notifications,
 * for instance) is the engine's to retry: it subscribes again every retry
 * interval on this link, from its own deadline (schedule). */
static void
engine_event(void *context, const ancs_event *event)
{
    ancs_nimble *a = context;

    a->on_event(a->context, event, NULL);
}

static const ancs_consumer_callbacks engine_callbacks = { engine_subscribe, engine_write, engine_event };

/* ---- subscriptions ---- */

static void
cccd_written(void *arg, uint16_t conn, ancs_characteristic which, const struct ble_gatt_error *error)
{
    ancs_nimble *a = write_ended(arg, conn, error->status);

    if (!a) return;
    if (wants_security(a, error->status) && start_security(a)) {
        a->resubscribe = (int8_t)which;   /* written again once the link is encrypted */
    } else {
        ancs_consumer_subscription_result(&a->consumer, which, result_of(error->status), now(a));
    }
    after_write(a);
}

static int
on_ns_cccd_written(uint16_t conn, const struct ble_gatt_error *error, struct ble_gatt_attr *attr, void *arg)
{
    (void)attr;
    cccd_written(arg, conn, ANCS_NOTIFICATION_SOURCE, error);
    return 0;
}

static int
on_ds_cccd_written(uint16_t conn, const struct ble_gatt_error *error, struct ble_gatt_attr *attr, void *arg)
{
    (void)attr;
    cccd_written(arg, conn, ANCS_DATA_SOURCE, error);
    return 0;
}

static int
on_cccd_cleared(uint16_t conn, const struct ble_gatt_error *error, struct ble_gatt_attr *attr, void *arg)
{
    ancs_nimble *a = write_ended(arg, conn, error->status);

    (void)attr;
    if (a) after_write(a);
    return 0;
}

/* ---- discovery ---- */

static bool
discovering(const ancs_nimble *a)
{
    return a->phase >= PHASE_GATT_SERVICE && a->phase <= PHASE_ANCS_DESCRIPTORS;
}

static void
retry_later(ancs_nimble *a)
{
    a->retry_due = true;
    a->retry_at = now(a) + a->retry_ms;
    schedule(a);
}

/* A discovery ends: if something asked for discovery while it ran (Service
 * Changed, for instance), what it found may be stale: discover again now. */
static bool
restarted(ancs_nimble *a)
{
    if (!a->discovery_wanted) return false;
    say(a, "discovery asked for again while it ran: starting over");
    a->phase = PHASE_IDLE;
    discover(a);
    return true;
}

static void
discovery_failed(ancs_nimble *a, const char *what, int status)
{
    if (wants_security(a, status) && start_security(a)) {
        say(a, "%s needs an encrypted link", what);
        a->phase = PHASE_IDLE;
        a->discovery_wanted = true;   /* again after encryption */
        return;
    }
    a->phase = PHASE_IDLE;
    if (restarted(a)) return;
    /* Not for want of security: tried again every retry interval while the link stays up. */
    say(a, "%s failed: status 0x%x; trying again in %u s", what, status, (unsigned)(a->retry_ms / 1000));
    retry_later(a);
}

/* The CCCD belongs to the characteristic with the largest value handle below it. */
static uint16_t
owner_of(ancs_nimble *a, uint16_t descriptor)
{
    uint16_t owner = 0;

    for (int i = 0; i < a->value_count; i++)
        if (a->values[i] < descriptor && a->values[i] > owner) owner = a->values[i];
    return owner;
}

static void ancs_absent(ancs_nimble *a, const char *what);

static void
ancs_found(ancs_nimble *a)
{
    a->phase = PHASE_READY;
    a->published = true;
    a->ancs_seen = true;
    say(a, "ANCS found: Notification Source 0x%04x (CCCD 0x%04x), Control Point 0x%04x, Data Source 0x%04x (CCCD 0x%04x)",
        a->ns_value, a->ns_cccd, a->cp_value, a->ds_value, a->ds_cccd);
    if (!a->link_given) {
        a->link_given = true;
        ancs_consumer_link_up(&a->consumer, ble_att_mtu(a->conn), now(a));
    } else {
        ancs_consumer_service_changed(&a->consumer, true, now(a));
    }
}

static int
on_ancs_descriptor(uint16_t conn, const struct ble_gatt_error *error, uint16_t value, const struct ble_gatt_dsc *dsc, void *arg)
{
    ancs_nimble *a = link_of(arg, conn, error->status);
    uint16_t owner;

    if (!a) return 0;

    (void)value;
    if (error->status == BLE_HS_EDONE) {
        if (restarted(a)) return 0;
        if (!a->ns_value || !a->ns_cccd) {
            ancs_absent(a, "ANCS has no Notification Source to subscribe to");
        } else {
            ancs_found(a);
        }
        schedule(a);
        return 0;
    }
    if (error->status != 0) { discovery_failed(a, "ANCS descriptor discovery", error->status); return 0; }
    if (ble_uuid_cmp(&dsc->uuid.u, BLE_UUID16_DECLARE(BLE_GATT_DSC_CLT_CFG_UUID16)) != 0) return 0;
    owner = owner_of(a, dsc->handle);
    if (owner && owner == a->ns_value) a->ns_cccd = dsc->handle;
    if (owner && owner == a->ds_value) a->ds_cccd = dsc->handle;
    return 0;
}

static int
on_ancs_characteristic(uint16_t conn, const struct ble_gatt_error *error, const struct ble_gatt_chr *chr, void *arg)
{
    ancs_nimble *a = link_of(arg, conn, error->status);

    if (!a) return 0;

    if (error->status == BLE_HS_EDONE) {
        if (restarted(a)) return 0;
        a->phase = PHASE_ANCS_DESCRIPTORS;
        if (ble_gattc_disc_all_dscs(conn, a->ancs_start, a->ancs_end, on_ancs_descriptor, link_arg(a)) != 0)
            discovery_failed(a, "ANCS descriptor discovery", BLE_HS_EUNKNOWN);
        return 0;
    }
    if (error->status != 0) { discovery_failed(a, "ANCS characteristic discovery", error->status); return 0; }
    if (ble_uuid_cmp(&chr->uuid.u, &notification_source_uuid.u) == 0) a->ns_value = chr->val_handle;
    if (ble_uuid_cmp(&chr->uuid.u, &control_point_uuid.u) == 0) a->cp_value = chr->val_handle;
    if (ble_uuid_cmp(&chr->uuid.u, &data_source_uuid.u) == 0) a->ds_value = chr->val_handle;
    if (a->value_count < sizeof a->values / sizeof a->values[0]) a->values[a->value_count++] = chr->val_handle;
    return 0;
}

static int
on_ancs_service(uint16_t conn, const struct ble_gatt_error *error, const struct ble_gatt_svc *service, void *arg)
{
    ancs_nimble *a = link_of(arg, conn, error->status);

    if (!a) return 0;

    if (error->status == 0) {
        a->ancs_start = service->start_handle;
        a->ancs_end = service->end_handle;
        return 0;
    }
    if (error->status != BLE_HS_EDONE) { discovery_failed(a, "ANCS service discovery", error->status); return 0; }
    if (restarted(a)) return 0;
    if (!a->ancs_start) {
        ancs_absent(a, "ANCS is not published on the phone");
        schedule(a);
        return 0;
    }
    a->phase = PHASE_ANCS_CHARACTERISTICS;
    a->value_count = 0;
    if (ble_gattc_disc_all_chrs(conn, a->ancs_start, a->ancs_end, on_ancs_characteristic, link_arg(a)) != 0)
        discovery_failed(a, "ANCS characteristic discovery", BLE_HS_EUNKNOWN);
    return 0;
}

static void
discover_ancs(ancs_nimble *a)
{
    a->ancs_start = a->ancs_end = a->ns_value = a->cp_value = a->ds_value = a->ns_cccd = a->ds_cccd = 0;
    if (a->link_lost) { a->phase = PHASE_IDLE; return; }
    a->discovery_wanted = false;
    a->phase = PHASE_ANCS_SERVICE;
    if (ble_gattc_disc_svc_by_uuid(a->conn, &ancs_service_uuid.u, on_ancs_service, link_arg(a)) != 0)
        discovery_failed(a, "ANCS service discovery", BLE_HS_EUNKNOWN);
}

static int
on_sc_subscribed(uint16_t conn, const struct ble_gatt_error *error, struct ble_gatt_attr *attr, void *arg)
{
    ancs_nimble *a = write_ended(arg, conn, error->status);

    (void)attr;
    if (!a) return 0;
    if (error->status != 0) say(a, "Service Changed subscription: status 0x%x", error->status);
    if (wants_security(a, error->status) && start_security(a)) {
        a->discovery_wanted = true;
        a->gatt_start = a->sc_cccd = 0;   /* the GATT service discovered and Service Changed subscribed again once encrypted */
        a->phase = PHASE_IDLE;
    } else {
        discover_ancs(a);
    }
    schedule(a);
    return 0;
}

static int
on_gatt_descriptor(uint16_t conn, const struct ble_gatt_error *error, uint16_t value, const struct ble_gatt_dsc *dsc, void *arg)
{
    ancs_nimble *a = link_of(arg, conn, error->status);
    static const uint8_t indicate[2] = { 2, 0 };

    if (!a) return 0;

    (void)value;
    if (error->status == BLE_HS_EDONE) {
        if (a->sc_cccd && ble_gattc_write_flat(conn, a->sc_cccd, indicate, sizeof indicate, on_sc_subscribed, link_arg(a)) == 0) {
            a->writes_in_flight++;
        } else {
            say(a, "no Service Changed to subscribe to");
            discover_ancs(a);
        }
        return 0;
    }
    if (error->status != 0) { discovery_failed(a, "GATT descriptor discovery", error->status); return 0; }
    if (ble_uuid_cmp(&dsc->uuid.u, BLE_UUID16_DECLARE(BLE_GATT_DSC_CLT_CFG_UUID16)) == 0 &&
        a->sc_value && owner_of(a, dsc->handle) == a->sc_value)
        a->sc_cccd = dsc->handle;
    return 0;
}

static int
on_gatt_characteristic(uint16_t conn, const struct ble_gatt_error *error, const struct ble_gatt_chr *chr, void *arg)
{
    ancs_nimble *a = link_of(arg, conn, error->status);

    if (!a) return 0;

    if (error->status == BLE_HS_EDONE) {
        a->phase = PHASE_GATT_DESCRIPTORS;
        if (!a->sc_value || ble_gattc_disc_all_dscs(conn, a->gatt_start, a->gatt_end, on_gatt_descriptor, link_arg(a)) != 0) {
            say(a, "the phone's GATT service has no Service Changed");
            discover_ancs(a);
        }
        return 0;
    }
    if (error->status != 0) { discovery_failed(a, "GATT characteristic discovery", error->status); return 0; }
    if (ble_uuid_cmp(&chr->uuid.u, BLE_UUID16_DECLARE(SERVICE_CHANGED_UUID16)) == 0) a->sc_value = chr->val_handle;
    if (a->value_count < sizeof a->values / sizeof a->values[0]) a->values[a->value_count++] = chr->val_handle;
    return 0;
}

static int
on_gatt_service(uint16_t conn, const struct ble_gatt_error *error, const struct ble_gatt_svc *service, void *arg)
{
    ancs_nimble *a = link_of(arg, conn, error->status);

    if (!a) return 0;

    if (error->status == 0) {
        a->gatt_start = service->start_handle;
        a->gatt_end = service->end_handle;
        return 0;
    }
    if (error->status != BLE_HS_EDONE) { discovery_failed(a, "GATT service discovery", error->status); return 0; }
    if (!a->gatt_start) {
        discover_ancs(a);
        return 0;
    }
    a->phase = PHASE_GATT_CHARACTERISTICS;
    a->value_count = 0;
    if (ble_gattc_disc_all_chrs(conn, a->gatt_start, a->gatt_end, on_gatt_characteristic, link_arg(a)) != 0)
        discover_ancs(a);
    return 0;
}

/* Discovery of what is not known yet; waits while a write is in flight (ATT: one request at a time). */
static void
discover(ancs_nimble *a)
{
    if (a->conn == BLE_HS_CONN_HANDLE_NONE || a->link_lost) return;
    /* ATT: one request at a time; and never a second discovery over the one running (they share
     * the handles found): it starts over when the running one ends (restarted). */
    if (a->writes_in_flight > 0 || discovering(a)) { a->discovery_wanted = true; return; }
    a->discovery_wanted = false;
    a->retry_due = false;
    if (!a->sc_cccd && !a->gatt_start) {
        a->phase = PHASE_GATT_SERVICE;
        if (ble_gattc_disc_svc_by_uuid(a->conn, BLE_UUID16_DECLARE(GATT_SERVICE_UUID16), on_gatt_service, link_arg(a)) != 0)
            discover_ancs(a);
    } else {
        discover_ancs(a);
    }
}

/* ---- which link is the phone's ---- */

static ancs_nimble *instances;   /* the adapters initialised, linked by next_instance */
static void forget_connection(ancs_nimble *a);

static bool
held_by_other(const ancs_nimble *a, uint16_t handle)
{
    for (const ancs_nimble *other = instances; other; other = other->next_instance)
        if (other != a && other->conn == handle) return true;
    return false;
}

/* The slot of `handle` among the other links (BLE_HS_CONN_HANDLE_NONE: a free one), or ANCS_NIMBLE_OTHERS. */
static size_t
other_slot(const ancs_nimble *a, uint16_t handle)
{
    size_t i = 0;

    while (i < ANCS_NIMBLE_OTHERS && a->others[i] != handle) i++;
    return i;
}

/* The link held is not the phone's as far as is known: ANCS looked for and
 * not found, and never found on it. */
static bool
without_ancs(const ancs_nimble *a)
{
    return a->conn != BLE_HS_CONN_HANDLE_NONE && a->phase == PHASE_ABSENT && !a->ancs_seen;
}

/* Moves to another peripheral link, not examined yet unless `any` (the link
 * held dropped), still up and not held by another adapter; the link left is
 * remembered as examined (looked at again if its encryption changes). */
static void
switch_link(ancs_nimble *a, bool any)
{
    struct ble_gap_conn_desc desc;

    for (size_t i = 0; i < ANCS_NIMBLE_OTHERS; i++) {
        uint16_t handle = a->others[i];
        if (handle == BLE_HS_CONN_HANDLE_NONE || (a->others_examined[i] && !any)) continue;
        a->others[i] = BLE_HS_CONN_HANDLE_NONE;
        if (ble_gap_conn_find(handle, &desc) != 0 || held_by_other(a, handle)) continue;
        a->others[i] = a->conn;   /* NONE if it dropped */
        a->others_examined[i] = true;
        say(a, "no ANCS on link 0x%04x: looking on link 0x%04x", a->conn, handle);
        forget_connection(a);
        a->conn = handle;
        discover(a);
        return;
    }
}

/* ANCS is not on the link held: on a plain link, encryption is asked for
 * (some phones publish ANCS only then); on a link where it never was, another
 * peripheral link not examined yet is looked at. */
static void
ancs_absent(ancs_nimble *a, const char *what)
{
    a->phase = PHASE_ABSENT;
    say(a, "%s: waiting for Service Changed", what);
    if (a->ancs_seen) return;
    if (!encrypted(a)) start_security(a);
    switch_link(a, false);
}

/* ---- time ---- */

static bool
initialised(const ancs_nimble *a)
{
    return a->self == a && a->magic == ANCS_NIMBLE_MAGIC;
}

/* ANCS_NIMBLE_CHECK_TASK: the caller is the task that initialised the adapter. */
#if ANCS_NIMBLE_CHECK_TASK
#ifndef ANCS_NIMBLE_WRONG_TASK
#include <assert.h>
#define ANCS_NIMBLE_WRONG_TASK(adapter) assert(0 && "ancs_nimble called from a task other than init's (ancs_nimble_post)")
#endif
#define ON_HOST_TASK(a) do { if ((a)->task != ble_npl_get_current_task_id()) { ANCS_NIMBLE_WRONG_TASK(a); } } while (0)
#else
#define ON_HOST_TASK(a) do { (void)(a); } while (0)
#endif

static void
on_timer(struct ble_npl_event *event)
{
    ancs_nimble *a = ble_npl_event_get_arg(event);
    uint64_t t;

    if (!initialised(a)) return;   /* queued before ancs_nimble_deinit() stopped the timer */
    a->timer_armed = false;        /* it fired */
    t = now(a);
    deferred_write(a, t);
    if (a->cccd_retry_due && t >= a->cccd_retry_at) {
        a->cccd_retry_due = false;
        after_write(a);   /* the queue's head, written again */
    }
    if (a->retry_due && t >= a->retry_at) {
        a->retry_due = false;
        discover(a);
    }
    ancs_consumer_tick(&a->consumer, t);
    schedule(a);
}

/* `at` is the deadline if it is earlier than the one found so far (`due`, `next`). */
static void __attribute__((noinline))
earlier(uint64_t *next, bool *due, bool candidate, uint64_t at)
{
    if (candidate && (!*due || at < *next)) { *next = at; *due = true; }
}

static void
schedule(ancs_nimble *a)
{
    uint64_t next = 0, deadline, t;
    bool due;

    /* The media part follows the link (its loss, ANCS found, encryption),
     * starts its next operation once the adapter's own work is on the air or
     * done (ATT: one request at a time; ANCS goes first), acts on its
     * deadlines passed, and tells the next. */
    bool media_due = a->media && a->media_hooks->settle(a->media, &deadline);
    t = now(a);
    due = ancs_consumer_next_deadline(&a->consumer, &next);
    earlier(&next, &due, media_due, deadline);
    earlier(&next, &due, a->deferred && !a->deferred_waits, a->deferred_at);
    earlier(&next, &due, a->cccd_retry_due, a->cccd_retry_at);
    earlier(&next, &due, a->retry_due, a->retry_at);
    /* Armed only when the deadline changes: a re-arm is three timer commands
     * that block on FreeRTOS, and most events (a notification inside a value,
     * any event of another link) change none. */
    if (due == a->timer_armed && (!due || next == a->timer_due)) return;
    a->timer_armed = due;
    a->timer_due = next;
    if (!due) { ble_npl_callout_stop(&a->timer); return; }
    uint64_t wait = next > t ? next - t : 0;
    if (wait > 3600000) wait = 3600000;
    /* In ticks here, in 64 bits: a port's 32-bit conversion (FreeRTOS's
     * ms * configTICK_RATE_HZ / 1000) wraps for an hour above 1 193 Hz. */
    ble_npl_callout_reset(&a->timer, (ble_npl_time_t)(wait * a->ticks_per_second / 1000) + 1);
}

/* ---- public ---- */

static void
forget_connection(ancs_nimble *a)
{
    a->conn = BLE_HS_CONN_HANDLE_NONE;
    a->ancs_start = a->ancs_end = a->ns_value = a->cp_value = a->ds_value = a->ns_cccd = a->ds_cccd = 0;
    a->gatt_start = a->gatt_end = a->sc_value = a->sc_cccd = 0;
    a->value_count = 0;
    a->phase = PHASE_IDLE;
    a->link_given = a->published = a->discovery_wanted = a->security_started = a->link_lost = a->ancs_seen = false;
    a->security_link_asks = 0;
    a->writes_in_flight = 0;
    a->cccd_queued = 0;
    a->deferred = a->deferred_waits = a->retry_due = a->cccd_retry_due = false;   /* the link's loss ends its request */
    a->cccd_tries = 0;
    a->epoch++;   /* callbacks of the link forgotten are ignored from now on */
    a->resubscribe = -1;
}

/* A GATT procedure of the adapter is pending: NimBLE holds a pointer into the storage. */
static bool
busy(const ancs_nimble *a)
{
    return a->conn != BLE_HS_CONN_HANDLE_NONE && !a->link_lost &&
           (a->writes_in_flight > 0 || (a->phase >= PHASE_GATT_SERVICE && a->phase <= PHASE_ANCS_DESCRIPTORS));
}

int
ancs_nimble_deinit(ancs_nimble *a)
{
    if (!a) return BLE_HS_EINVAL;
    if (!initialised(a)) return 0;
    ON_HOST_TASK(a);
    if (busy(a)) return BLE_HS_EBUSY;
    for (ancs_nimble **p = &instances; *p; p = &(*p)->next_instance)
        if (*p == a) { *p = a->next_instance; break; }
    ble_npl_callout_stop(&a->timer);
    if (a->link_given) ancs_consumer_link_down(&a->consumer, now(a));   /* requests end, then the session */
    forget_connection(a);
    if (a->media) a->media_hooks->detach(a->media);   /* its sessions end; it is left unattached */
    ancs_consumer_deinit(&a->consumer);
    ble_npl_callout_stop(&a->timer);
    a->timer_armed = false;
#if ANCS_NIMBLE_CALLOUT_DEINIT
    ble_npl_callout_deinit(&a->timer);   /* the port's timer released: the storage may be freed */
    a->timer_magic = 0;
#endif
    a->magic = 0;
    return 0;
}

int
ancs_nimble_init(ancs_nimble *a, const ancs_consumer_config *config, ancs_nimble_event_fn *on_event, void *context)
{
    return ancs_nimble_init_on_queue(a, config, on_event, context, NULL);
}

int
ancs_nimble_init_on_queue(ancs_nimble *a, const ancs_consumer_config *config, ancs_nimble_event_fn *on_event,
                          void *context, struct ble_npl_eventq *eventq)
{
    ancs_status status;
    uint8_t epoch = 0;
    struct ble_npl_callout timer;
    bool timer_kept;

    if (!eventq) eventq = default_eventq();
    if (!a || !on_event || !eventq) return BLE_HS_EINVAL;
    if (initialised(a)) {   /* its timer may be armed, its engine holds heap: stop them first */
        int rc = ancs_nimble_deinit(a);
        if (rc != 0) return rc;
        epoch = a->epoch;
    }
    /* A callout initialised on this storage before (and stopped) is kept when it is on the
     * same queue: NimBLE's NPL has no callout deinit, and FreeRTOS's creates a timer at each
     * ble_npl_callout_init. */
    timer_kept = a->self == a && a->timer_magic == ANCS_NIMBLE_MAGIC && a->eventq == eventq;
    if (timer_kept) timer = a->timer;
    memset(a, 0, sizeof *a);
    a->on_event = on_event;
    a->context = context;
    a->epoch = epoch;
    for (size_t i = 0; i < LINKS; i++) a->links[i].adapter = a;
    for (size_t i = 0; i < ANCS_NIMBLE_OTHERS; i++) a->others[i] = BLE_HS_CONN_HANDLE_NONE;
    forget_connection(a);
    a->last_tick = ble_npl_time_get();
    a->ticks_per_second = ble_npl_time_ms_to_ticks32(1000);
    if (a->ticks_per_second == 0) a->ticks_per_second = 1000;
    a->eventq = eventq;
    if (timer_kept) a->timer = timer;
    else ble_npl_callout_init(&a->timer, eventq, on_timer, a);
    a->self = a;
    a->timer_magic = ANCS_NIMBLE_MAGIC;
#if ANCS_NIMBLE_CHECK_TASK
    a->task = ble_npl_get_current_task_id();
#endif
#if ANCS_NIMBLE_NULL_CONFIG_DEFAULTS
    ancs_consumer_config defaults;
    if (!config) {   /* the ESP-IDF component's Kconfig choice: NULL is the defaults, not the preset */
        ancs_consumer_config_default(&defaults);
        config = &defaults;
    }
#endif
    status = ancs_consumer_init(&a->consumer, config, &engine_callbacks, a);
    if (status != ANCS_OK) return BLE_HS_EINVAL;
    a->retry_ms = config && config->retry_interval_s && config->retry_interval_s <= 3600 ? config->retry_interval_s * 1000 : 15000;
    a->magic = ANCS_NIMBLE_MAGIC;
    a->next_instance = instances;
    instances = a;
    return 0;
}

/* A peripheral link is up (BLE_GAP_EVENT_CONNECT, or ancs_nimble_attach):
 * taken when the adapter holds none, else remembered (it may be the
 * phone's if the one held is not). 0, or why it is not the adapter's. */
static int
take_connection(ancs_nimble *a, uint16_t handle)
{
    struct ble_gap_conn_desc desc;
    size_t slot;

    /* The phone is the central: a link this accessory made as central is
     * not a phone's, and a link another adapter took is not this one's. */
    if (ble_gap_conn_find(handle, &desc) != 0) return BLE_HS_ENOTCONN;
    if (desc.role != BLE_GAP_ROLE_SLAVE) return BLE_HS_EINVAL;
    if (held_by_other(a, handle) || a->conn == handle) return BLE_HS_EALREADY;
    if (a->conn != BLE_HS_CONN_HANDLE_NONE) {
        /* Held: the new link may be the phone's if the one held is not (two remembered). */
        slot = other_slot(a, BLE_HS_CONN_HANDLE_NONE);
        if (slot < ANCS_NIMBLE_OTHERS) {
            a->others[slot] = handle;
            a->others_examined[slot] = false;
        }
        if (without_ancs(a)) switch_link(a, false);
        return 0;
    }
    forget_connection(a);
    a->conn = handle;
    discover(a);
    return 0;
}

int
ancs_nimble_attach(ancs_nimble *a, uint16_t conn_handle)
{
    int rc;

    if (!a || !initialised(a)) return BLE_HS_EINVAL;
    ON_HOST_TASK(a);
    rc = take_connection(a, conn_handle);
    schedule(a);
    return rc;
}

int
ancs_nimble_stop(ancs_nimble *a)
{
    if (!a || !initialised(a)) return BLE_HS_EINVAL;
    ON_HOST_TASK(a);
    ancs_consumer_stop(&a->consumer, now(a));
    schedule(a);
    return 0;
}

int
ancs_nimble_start(ancs_nimble *a)
{
    if (!a || !initialised(a)) return BLE_HS_EINVAL;
    ON_HOST_TASK(a);
    if (a->conn == BLE_HS_CONN_HANDLE_NONE) return BLE_HS_ENOTCONN;
    /* ANCS found and no session (stopped): a new one, as on a link that came up. */
    if (a->link_given && a->phase == PHASE_READY && !ancs_consumer_in_session(&a->consumer))
        ancs_consumer_link_up(&a->consumer, ble_att_mtu(a->conn), now(a));
    schedule(a);
    return 0;
}

uint64_t
ancs_nimble_now_ms(ancs_nimble *a)
{
    return now(a);
}

int
ancs_nimble_gap_event(ancs_nimble *a, struct ble_gap_event *event)
{
    struct os_mbuf *om;
    struct ble_gap_conn_desc desc;
    uint16_t length = 0, handle;
    size_t slot;

    ON_HOST_TASK(a);

    switch (event->type) {
    case BLE_GAP_EVENT_REPEAT_PAIRING:
        /* The phone forgot the bond ("Forget This Device") and pairs anew:
         * drop the stale bond, tell the engine (ANCS_HEALTH_BOND_LOST until
         * the phone answers again) and let the pairing go on. */
        if (event->repeat_pairing.conn_handle != a->conn) break;
        if (ble_gap_conn_find(event->repeat_pairing.conn_handle, &desc) == 0) ble_store_util_delete_peer(&desc.peer_id_addr);
        say(a, "bond lost (the phone pairs again): dropped ours");
        ancs_consumer_bond_lost(&a->consumer, now(a));
        return BLE_GAP_REPEAT_PAIRING_RETRY;
    case BLE_GAP_EVENT_CONNECT:
        /* The phone is the central: a link this accessory made as central is
         * not a phone's, and a link another adapter took is not this one's. */
        if (event->connect.status == 0) take_connection(a, event->connect.conn_handle);
        break;
    case BLE_GAP_EVENT_DISCONNECT:
        handle = event->disconnect.conn.conn_handle;
        slot = other_slot(a, handle);
        if (slot < ANCS_NIMBLE_OTHERS) a->others[slot] = BLE_HS_CONN_HANDLE_NONE;
        if (handle != a->conn) break;
        if (a->link_given) ancs_consumer_link_down(&a->consumer, now(a));
        forget_connection(a);
        switch_link(a, true);   /* another peripheral link up may be the phone's */
        break;
    case BLE_GAP_EVENT_ENC_CHANGE:
        if (event->enc_change.conn_handle != a->conn) {
            /* Another link encrypted: the phone may publish ANCS on it now. */
            slot = other_slot(a, event->enc_change.conn_handle);
            if (slot < ANCS_NIMBLE_OTHERS && event->enc_change.status == 0) a->others_examined[slot] = false;
            if (without_ancs(a)) switch_link(a, false);
            break;
        }
        a->security_started = false;
        if (event->enc_change.status == BLE_HS_HCI_ERR(BLE_ERR_PINKEY_MISSING) &&
            ble_gap_conn_find(a->conn, &desc) == 0) {
            /* Re-encryption with the bond failed, the phone's key is gone:
             * drop ours and ask the phone to pair anew. */
            ble_store_util_delete_peer(&desc.peer_id_addr);
            say(a, "bond lost (key missing): dropped ours, asking to pair again");
            ancs_consumer_bond_lost(&a->consumer, now(a));
            if (!a->security_by_application) ble_gap_security_initiate(a->conn);
            break;
        }
        if (event->enc_change.status != 0) {
            say(a, "security failed: status %d", event->enc_change.status);
            if (a->resubscribe >= 0) {
                ancs_characteristic which = (ancs_characteristic)a->resubscribe;
                a->resubscribe = -1;
                ancs_consumer_subscription_result(&a->consumer, which, ANCS_ATT_INSUFFICIENT_AUTHENTICATION, now(a));
            }
            if (a->discovery_wanted || a->phase == PHASE_IDLE) retry_later(a);   /* discovery waited for it */
            if (without_ancs(a)) switch_link(a, false);   /* no ANCS here, encrypted or not: another link */
            break;
        }
        if (a->resubscribe >= 0) {
            ancs_characteristic which = (ancs_characteristic)a->resubscribe;
            a->resubscribe = -1;
            write_cccd(a, which, true);
        }
        /* Discovery waiting for encryption, or ANCS not found before it
         * (some phones publish ANCS only on an encrypted link). */
        if (a->discovery_wanted || a->phase == PHASE_IDLE || a->phase == PHASE_ABSENT) discover(a);
        break;
    case BLE_GAP_EVENT_MTU:
        if (event->mtu.conn_handle != a->conn) break;
        if (a->link_given) ancs_consumer_mtu_changed(&a->consumer, event->mtu.value, now(a));
        break;
    case BLE_GAP_EVENT_NOTIFY_RX:
        if (event->notify_rx.conn_handle != a->conn) break;
        om = event->notify_rx.om;
        handle = event->notify_rx.attr_handle;
        if (OS_MBUF_PKTLEN(om) > sizeof a->rx) {   /* never cut: no ATT MTU allows it */
            say(a, "a %u-byte notification on 0x%04x, over the largest ATT MTU (%u): dropped",
                (unsigned)OS_MBUF_PKTLEN(om), handle, (unsigned)sizeof a->rx);
            break;
        }
        if (ble_hs_mbuf_to_flat(om, a->rx, sizeof a->rx, &length) != 0) break;
        /* The media part's characteristics, and Service Changed (for it too). */
        if (a->media && a->media_hooks->notified(a->media, handle, a->rx, length)) break;
        if (handle == a->ns_value && a->ns_value) {
            ancs_consumer_notification_source(&a->consumer, a->rx, length, now(a));
        } else if (handle == a->ds_value && a->ds_value) {
            ancs_consumer_data_source(&a->consumer, a->rx, length, now(a));
        } else if (handle == a->sc_value && a->sc_value && length >= 4) {
            uint16_t start = a->rx[0] | a->rx[1] << 8, end = a->rx[2] | a->rx[3] << 8;
            bool touches_ancs = !a->ancs_start || (start <= a->ancs_end && end >= a->ancs_start);
            say(a, "Service Changed: handles 0x%04x-0x%04x%s", start, end, touches_ancs ? " (ANCS)" : "");
            if (!touches_ancs) break;
            if (a->published && a->link_given) ancs_consumer_service_changed(&a->consumer, false, now(a));
            a->published = false;
            a->ancs_start = a->ancs_end = a->ns_value = a->cp_value = a->ds_value = a->ns_cccd = a->ds_cccd = 0;
            discover(a);   /* after the write in flight, or once the discovery running ends */
        }
        break;
    default:
        break;
    }
    schedule(a);
    return 0;
}

ancs_consumer *
ancs_nimble_consumer(ancs_nimble *a)
{
    return &a->consumer;
}

ancs_status
ancs_nimble_fetch_attributes(ancs_nimble *a, uint32_t uid, const ancs_attribute_request *attributes, size_t count,
                             uint32_t *request_id)
{
    ancs_status status;

    ON_HOST_TASK(a);
    status = ancs_consumer_fetch_attributes(&a->consumer, uid, attributes, count, now(a), request_id);
    schedule(a);
    return status;
}

ancs_status
ancs_nimble_fetch_app_attributes(ancs_nimble *a, const char *app_identifier, uint32_t *request_id)
{
    ancs_status status;

    ON_HOST_TASK(a);
    status = ancs_consumer_fetch_app_attributes(&a->consumer, (const uint8_t *)app_identifier,
                                                            app_identifier ? strlen(app_identifier) : 0, NULL, 0,
                                                            now(a), request_id);
    schedule(a);
    return status;
}

ancs_status
ancs_nimble_perform_action(ancs_nimble *a, uint32_t uid, uint8_t action, uint32_t *request_id)
{
    ancs_status status;

    ON_HOST_TASK(a);
    status = ancs_consumer_perform_action(&a->consumer, uid, action, now(a), request_id);
    schedule(a);
    return status;
}

/* A posted request, on the host task. */
static void
on_request(struct ble_npl_event *event)
{
    ancs_nimble_request *r = ble_npl_event_get_arg(event);
    ancs_nimble *a = r->adapter;

    if (!initialised(a)) {
        r->status = ANCS_ERR_STORAGE;   /* deinitialised while the request was queued */
    } else {
        switch (r->kind) {
        case ANCS_NIMBLE_FETCH_ATTRIBUTES:
            r->status = ancs_nimble_fetch_attributes(a, r->uid, r->attributes, r->attribute_count, &r->request_id);
            break;
        case ANCS_NIMBLE_FETCH_APP_ATTRIBUTES:
            r->status = ancs_nimble_fetch_app_attributes(a, r->app_identifier, &r->request_id);
            break;
        case ANCS_NIMBLE_PERFORM_ACTION:
            r->status = ancs_nimble_perform_action(a, r->uid, r->action, &r->request_id);
            break;
        case ANCS_NIMBLE_CANCEL:
            r->status = ancs_consumer_cancel(&a->consumer, r->request_id, now(a));
            schedule(a);
            break;
        case ANCS_NIMBLE_STOP:
            r->status = ancs_nimble_stop(a) == 0 ? ANCS_OK : ANCS_ERR_STORAGE;
            break;
        case ANCS_NIMBLE_START:
            r->status = ancs_nimble_start(a) == 0 ? ANCS_OK : ANCS_ERR_NOT_CONNECTED;
            break;
        default:
            r->status = ANCS_ERR_INVALID_ARGUMENT;
            break;
        }
    }
    if (r->done) r->done(r);
}

int
ancs_nimble_post(ancs_nimble *a, ancs_nimble_request *r)
{
    /* Reads only what init wrote once (the queue): safe from any task. */
    if (!a || !r || !a->eventq) return BLE_HS_EINVAL;
    r->adapter = a;
    ble_npl_event_init(&r->event, on_request, r);
    ble_npl_eventq_put(a->eventq, &r->event);
    return 0;
}

/* ---- for the media part (ancs_nimble_internal.h) ---- */

void *
ancs_nimble_link_arg_(ancs_nimble *a)
{
    return link_arg(a);
}

ancs_nimble *
ancs_nimble_link_of_(void *arg, uint16_t conn, int status)
{
    return link_of(arg, conn, status);
}

ancs_status
ancs_nimble_result_of_(int status)
{
    return result_of(status);
}

bool
ancs_nimble_encrypted_(ancs_nimble *a)
{
    return encrypted(a);
}

/* Nothing of the adapter's on the air (a write, a discovery) nor waiting for
 * the bearer (CCCD writes queued, a Control Point write held). */
bool
ancs_nimble_bearer_free_(const ancs_nimble *a)
{
    return a->conn != BLE_HS_CONN_HANDLE_NONE && !a->link_lost && a->writes_in_flight == 0 && !discovering(a) &&
           !a->cccd_queued && !(a->deferred && a->deferred_waits);
}

void
ancs_nimble_operation_ended_(ancs_nimble *a)
{
    if (a->writes_in_flight) a->writes_in_flight--;
    after_write(a);
}

void
ancs_nimble_schedule_(ancs_nimble *a)
{
    schedule(a);
}
