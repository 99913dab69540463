/*
 * test_adapter.c — unit tests of the NimBLE adapter (../ancs_nimble.c) on a
 * fake NimBLE host.
 *
 * The adapter is compiled against NimBLE's real headers (the "dummy" NPL
 * port for the OS types) and linked with the real C API (libancs.a); every
 * NimBLE function it calls is a stub below. The stubs record each GATT
 * procedure the adapter starts and leave it pending: the test chooses when
 * and how it ends, and in what order callbacks and GAP events come (e.g. a
 * procedure failed with BLE_HS_ENOTCONN before BLE_GAP_EVENT_DISCONNECT, as
 * ble_gattc_connection_broken() does). The clock is a tick counter the test
 * moves, converted to milliseconds as NimBLE's FreeRTOS port does (in 32
 * bits). Callouts fire as the clock passes them.
 *
 * Prints "adapter: N passed, N failed"; exits 1 on a failure.
 * integrations/nimble/test/run.sh builds and runs it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ancs_nimble.h"
#include "ancs_nimble_media.h"

/* Weak: against an adapter without it the deinit tests fail instead of the build. */
int ancs_nimble_deinit(ancs_nimble *adapter) __attribute__((weak));

static int passed, failed;
static bool verbose;
static const char *current_test;

#define CHECK(cond, ...) check_((cond), #cond, __LINE__, __VA_ARGS__)
static void
check_(bool ok, const char *expr, int line, const char *format, ...)
{
    va_list args;

    if (ok) { passed++; return; }
    failed++;
    printf("  FAIL %s (line %d: %s): ", current_test, line, expr);
    va_start(args, format);
    vprintf(format, args);
    va_end(args);
    putchar('\n');
}

/* ======================================================================
 * The fake host
 * ====================================================================== */

/* ---- clock: ticks, milliseconds as FreeRTOS converts them (32-bit product) ---- */
static ble_npl_time_t fake_ticks;
static uint32_t fake_hz = 1000;

ble_npl_time_t ble_npl_time_get(void) { return fake_ticks; }
uint32_t ble_npl_time_ticks_to_ms32(ble_npl_time_t ticks) { return (uint32_t)(ticks * 1000u) / fake_hz; }
ble_npl_time_t ble_npl_time_ms_to_ticks32(uint32_t ms) { return (uint32_t)(ms * fake_hz) / 1000u; }
ble_npl_error_t ble_npl_time_ticks_to_ms(ble_npl_time_t ticks, uint32_t *out) { *out = ble_npl_time_ticks_to_ms32(ticks); return 0; }
ble_npl_error_t ble_npl_time_ms_to_ticks(uint32_t ms, ble_npl_time_t *out) { *out = ble_npl_time_ms_to_ticks32(ms); return 0; }

/* ---- callouts ---- */
struct fake_callout {
    struct ble_npl_callout *co;
    ble_npl_event_fn *fn;
    void *arg;
    bool armed;
    int inits;                 /* ble_npl_callout_init calls (FreeRTOS creates a timer at each) */
    int deinits;               /* ble_npl_callout_deinit calls (FreeRTOS deletes it) */
    struct ble_npl_eventq *evq;   /* the queue its events go to */
    ble_npl_time_t due;
    struct ble_npl_event event;
};
static struct fake_callout callouts[64];
static int callout_reinit_while_armed;   /* ble_npl_callout_init() on an armed callout */
static int callout_count;
static struct ble_npl_eventq default_queue;
static int callout_fires;   /* timer events run */
static int callout_resets;  /* ble_npl_callout_reset calls (on FreeRTOS, timer commands that block) */

static struct fake_callout *
callout_of(struct ble_npl_callout *co)
{
    for (int i = 0; i < callout_count; i++)
        if (callouts[i].co == co) return &callouts[i];
    return NULL;
}

struct ble_npl_eventq *nimble_port_get_dflt_eventq(void) { return &default_queue; }

void
ble_npl_callout_init(struct ble_npl_callout *co, struct ble_npl_eventq *evq, ble_npl_event_fn *fn, void *arg)
{
    struct fake_callout *c = callout_of(co);

    if (!c) {
        if (callout_count == (int)(sizeof callouts / sizeof callouts[0])) { printf("  fake: too many callouts\n"); abort(); }
        c = &callouts[callout_count++];
        c->co = co;
    }
    else if (c->armed) callout_reinit_while_armed++;
    c->inits++;
    c->evq = evq;
    c->fn = fn; c->arg = arg; c->armed = false;
}

ble_npl_error_t
ble_npl_callout_reset(struct ble_npl_callout *co, ble_npl_time_t ticks)
{
    struct fake_callout *c = callout_of(co);

    if (!c) { printf("  fake: reset of a callout never initialised\n"); abort(); }
    c->armed = true;
    c->due = fake_ticks + ticks;
    callout_resets++;
    return 0;
}

#ifndef ANCS_TEST_CALLOUT_KEPT
void
ble_npl_callout_deinit(struct ble_npl_callout *co)
{
    struct fake_callout *c = callout_of(co);

    if (!c) { printf("  fake: deinit of a callout never initialised\n"); abort(); }
    if (c->armed) { printf("  fake: deinit of an armed callout\n"); abort(); }
    c->deinits++;
}
#endif

/* The port's timers made on `co` and not released. */
static int
callout_live(struct ble_npl_callout *co)
{
    struct fake_callout *c = callout_of(co);
    return c ? c->inits - c->deinits : 0;
}

void ble_npl_callout_stop(struct ble_npl_callout *co) { struct fake_callout *c = callout_of(co); if (c) c->armed = false; }
bool ble_npl_callout_is_active(struct ble_npl_callout *co) { struct fake_callout *c = callout_of(co); return c && c->armed; }

/* ---- events put on a queue (ancs_nimble_post): run by run_queue(), in order ---- */
struct fake_event { struct ble_npl_event *ev; ble_npl_event_fn *fn; void *arg; struct ble_npl_eventq *evq; bool queued; };
static struct fake_event posted[16];
static int posted_count;

void
ble_npl_event_init(struct ble_npl_event *ev, ble_npl_event_fn *fn, void *arg)
{
    for (int i = 0; i < posted_count; i++)
        if (posted[i].ev == ev) { posted[i].fn = fn; posted[i].arg = arg; return; }
    if (posted_count == (int)(sizeof posted / sizeof posted[0])) { printf("  fake: too many events\n"); abort(); }
    posted[posted_count++] = (struct fake_event){ ev, fn, arg, NULL, false };
}

void
ble_npl_eventq_put(struct ble_npl_eventq *evq, struct ble_npl_event *ev)
{
    for (int i = 0; i < posted_count; i++)
        if (posted[i].ev == ev) { posted[i].evq = evq; posted[i].queued = true; return; }
    printf("  fake: put of an event never initialised\n");
    abort();
}

/* The host task runs the events put on its queues. */
static void
run_queue(void)
{
    for (int i = 0; i < posted_count; i++)
        if (posted[i].queued) { posted[i].queued = false; posted[i].fn(posted[i].ev); }
}

/* The task calling: the host task unless a test says otherwise. */
static int host_task, ui_task;
static void *fake_task = &host_task;
static int wrong_task_calls;
void *ble_npl_get_current_task_id(void) { return fake_task; }
void fake_wrong_task(void *adapter) { (void)adapter; wrong_task_calls++; }

void *
ble_npl_event_get_arg(struct ble_npl_event *ev)
{
    for (int i = 0; i < posted_count; i++)
        if (posted[i].ev == ev) return posted[i].arg;
    for (int i = 0; i < callout_count; i++)
        if (&callouts[i].event == ev) return callouts[i].arg;
    printf("  fake: event of no callout\n");
    abort();
}

/* Whether an armed callout lies inside [start, start + size) (memory about to be freed). */
static bool
callout_armed_inside(const void *start, size_t size)
{
    for (int i = 0; i < callout_count; i++)
        if (callouts[i].armed && (const char *)callouts[i].co >= (const char *)start &&
            (const char *)callouts[i].co < (const char *)start + size)
            return true;
    return false;
}

/* Moves the clock `ticks` on, firing the callouts it passes, in order. */
static void
advance(uint32_t ticks)
{
    uint32_t left = ticks;

    for (;;) {
        struct fake_callout *next = NULL;
        uint32_t best = 0;
        for (int i = 0; i < callout_count; i++) {
            uint32_t d = callouts[i].due - fake_ticks;
            if (callouts[i].armed && d <= left && (!next || d < best)) { next = &callouts[i]; best = d; }
        }
        if (!next) break;
        fake_ticks += best;
        left -= best;
        next->armed = false;
        callout_fires++;
        next->fn(&next->event);
    }
    fake_ticks += left;
}

/* ---- mbufs: real layout (os_mbuf + packet header), malloc'd ---- */
static struct os_mbuf *
mbuf_new(const uint8_t *bytes, uint16_t length, bool header)
{
    size_t hdr = header ? sizeof(struct os_mbuf_pkthdr) : 0;
    struct os_mbuf *om = calloc(1, sizeof *om + hdr + length + 1);

    om->om_pkthdr_len = (uint8_t)hdr;
    om->om_data = om->om_databuf + hdr;
    om->om_len = length;
    memcpy(om->om_data, bytes, length);
    if (header) OS_MBUF_PKTHDR(om)->omp_len = length;
    return om;
}

/* A packet of `length` bytes in mbufs of at most `segment` bytes. */
static struct os_mbuf *
chain_of(const uint8_t *bytes, uint16_t length, uint16_t segment)
{
    uint16_t first = length < segment ? length : segment;
    struct os_mbuf *head = mbuf_new(bytes, first, true), *tail = head;

    for (uint16_t at = first; at < length; at += segment) {
        uint16_t n = length - at < segment ? length - at : segment;
        struct os_mbuf *om = mbuf_new(bytes + at, n, false);
        SLIST_NEXT(tail, om_next) = om;
        tail = om;
    }
    OS_MBUF_PKTHDR(head)->omp_len = length;
    return head;
}

int
os_mbuf_copydata(const struct os_mbuf *om, int off, int len, void *dst)
{
    uint8_t *out = dst;

    for (; om && len > 0; om = SLIST_NEXT(om, om_next)) {
        if (off >= om->om_len) { off -= om->om_len; continue; }
        int n = om->om_len - off < len ? om->om_len - off : len;
        memcpy(out, om->om_data + off, n);
        out += n; len -= n; off = 0;
    }
    return len > 0 ? -1 : 0;
}

int
os_mbuf_free_chain(struct os_mbuf *om)
{
    while (om) { struct os_mbuf *next = SLIST_NEXT(om, om_next); free(om); om = next; }
    return 0;
}

struct os_mbuf *
ble_hs_mbuf_from_flat(const void *buf, uint16_t len)
{
    return chain_of(buf, len, 200);
}

/* As NimBLE's (ble_hs_mbuf.c): copies at most max_len bytes and returns 0 even when it cut. */
int
ble_hs_mbuf_to_flat(const struct os_mbuf *om, void *flat, uint16_t max_len, uint16_t *out_copy_len)
{
    uint16_t copy_len = OS_MBUF_PKTLEN(om) <= max_len ? OS_MBUF_PKTLEN(om) : max_len;

    if (os_mbuf_copydata(om, 0, copy_len, flat) != 0) return BLE_HS_EUNKNOWN;
    if (out_copy_len) *out_copy_len = copy_len;
    return 0;
}

/* ---- UUIDs ---- */
int
ble_uuid_cmp(const ble_uuid_t *a, const ble_uuid_t *b)
{
    if (a->type != b->type) return a->type - b->type;
    switch (a->type) {
    case BLE_UUID_TYPE_16: return (int)BLE_UUID16(a)->value - (int)BLE_UUID16(b)->value;
    case BLE_UUID_TYPE_32: return BLE_UUID32(a)->value == BLE_UUID32(b)->value ? 0 : 1;
    default: return memcmp(BLE_UUID128(a)->value, BLE_UUID128(b)->value, 16);
    }
}

static void
uuid_copy(ble_uuid_any_t *dst, const ble_uuid_t *src)
{
    memset(dst, 0, sizeof *dst);
    if (src->type == BLE_UUID_TYPE_16) dst->u16 = *BLE_UUID16(src);
    else if (src->type == BLE_UUID_TYPE_32) dst->u32 = *BLE_UUID32(src);
    else dst->u128 = *BLE_UUID128(src);
}

/* ---- connections ---- */
struct fake_conn { uint16_t handle; uint16_t mtu; bool up; uint8_t role; bool plain; bool no_ancs; };
static struct fake_conn conns[4];

static struct fake_conn *
conn_of(uint16_t handle)
{
    for (int i = 0; i < 4; i++) if (conns[i].up && conns[i].handle == handle) return &conns[i];
    return NULL;
}

int
ble_gap_conn_find(uint16_t handle, struct ble_gap_conn_desc *desc)
{
    if (!conn_of(handle)) return BLE_HS_ENOTCONN;
    memset(desc, 0, sizeof *desc);
    desc->conn_handle = handle;
    desc->role = conn_of(handle)->role;
    desc->sec_state.encrypted = !conn_of(handle)->plain;
    desc->sec_state.authenticated = !conn_of(handle)->plain;
    desc->sec_state.bonded = !conn_of(handle)->plain;
    return 0;
}

static int security_initiated, peers_deleted;
int ble_gap_security_initiate(uint16_t handle) { security_initiated++; return conn_of(handle) ? 0 : BLE_HS_ENOTCONN; }
int ble_store_util_delete_peer(const ble_addr_t *peer) { (void)peer; peers_deleted++; return 0; }
uint16_t ble_att_mtu(uint16_t handle) { struct fake_conn *c = conn_of(handle); return c ? c->mtu : 0; }

/* ---- GATT procedures: recorded, pending until the test ends them ---- */
enum op_kind { OP_DISC_SVC, OP_DISC_CHRS, OP_DISC_DSCS, OP_WRITE, OP_WRITE_LONG, OP_READ, OP_READ_LONG };
struct op {
    enum op_kind kind;
    uint16_t conn, handle, start, end;
    ble_uuid_any_t uuid;
    uint8_t value[600];
    uint16_t length;
    void *cb, *arg;
    bool done;
};
static struct op ops[4096];
static int op_count;
static int gattc_calls;            /* every ble_gattc_* call, taken or refused */
static int fail_rc, fail_count;    /* the next fail_count ble_gattc_* calls are refused with fail_rc */
static int overlaps;               /* procedures started while another was pending on the same link (ATT allows one request) */

static struct op *
new_op(enum op_kind kind, uint16_t conn, int *rc)
{
    gattc_calls++;
    if (fail_count > 0) { fail_count--; *rc = fail_rc; return NULL; }
    if (!conn_of(conn)) { *rc = BLE_HS_ENOTCONN; return NULL; }
    if (op_count == (int)(sizeof ops / sizeof ops[0])) { printf("  fake: too many procedures\n"); abort(); }
    for (int i = 0; i < op_count; i++)
        if (!ops[i].done && ops[i].conn == conn) {
            overlaps++;
            if (verbose) printf("    fake: a procedure on 0x%x while another is pending\n", conn);
            break;
        }
    struct op *o = &ops[op_count++];
    memset(o, 0, sizeof *o);
    o->kind = kind; o->conn = conn;
    *rc = 0;
    return o;
}

int
ble_gattc_disc_svc_by_uuid(uint16_t conn, const ble_uuid_t *uuid, ble_gatt_disc_svc_fn *cb, void *arg)
{
    int rc;
    struct op *o = new_op(OP_DISC_SVC, conn, &rc);
    if (o) { uuid_copy(&o->uuid, uuid); o->cb = cb; o->arg = arg; }
    return rc;
}

int
ble_gattc_disc_all_chrs(uint16_t conn, uint16_t start, uint16_t end, ble_gatt_chr_fn *cb, void *arg)
{
    int rc;
    struct op *o = new_op(OP_DISC_CHRS, conn, &rc);
    if (o) { o->start = start; o->end = end; o->cb = cb; o->arg = arg; }
    return rc;
}

int
ble_gattc_disc_all_dscs(uint16_t conn, uint16_t start, uint16_t end, ble_gatt_dsc_fn *cb, void *arg)
{
    int rc;
    struct op *o = new_op(OP_DISC_DSCS, conn, &rc);
    if (o) { o->start = start; o->end = end; o->cb = cb; o->arg = arg; }
    return rc;
}

int
ble_gattc_write_flat(uint16_t conn, uint16_t handle, const void *data, uint16_t length, ble_gatt_attr_fn *cb, void *arg)
{
    int rc;
    struct op *o = new_op(OP_WRITE, conn, &rc);
    if (o) {
        o->handle = handle; o->cb = cb; o->arg = arg;
        o->length = length < sizeof o->value ? length : sizeof o->value;
        memcpy(o->value, data, o->length);
    }
    return rc;
}

int
ble_gattc_write_long(uint16_t conn, uint16_t handle, uint16_t offset, struct os_mbuf *om, ble_gatt_attr_fn *cb, void *arg)
{
    int rc;
    struct op *o = new_op(OP_WRITE_LONG, conn, &rc);
    (void)offset;
    if (o) {
        o->handle = handle; o->cb = cb; o->arg = arg;
        o->length = OS_MBUF_PKTLEN(om) < sizeof o->value ? OS_MBUF_PKTLEN(om) : sizeof o->value;
        os_mbuf_copydata(om, 0, o->length, o->value);
    }
    os_mbuf_free_chain(om);   /* NimBLE takes the chain, in success and failure */
    return rc;
}

int
ble_gattc_read(uint16_t conn, uint16_t handle, ble_gatt_attr_fn *cb, void *arg)
{
    int rc;
    struct op *o = new_op(OP_READ, conn, &rc);
    if (o) { o->handle = handle; o->cb = cb; o->arg = arg; }
    return rc;
}

int
ble_gattc_read_long(uint16_t conn, uint16_t handle, uint16_t offset, ble_gatt_attr_fn *cb, void *arg)
{
    int rc;
    struct op *o = new_op(OP_READ_LONG, conn, &rc);
    if (o) { o->handle = handle; o->start = offset; o->cb = cb; o->arg = arg; }
    return rc;
}

/* ---- the phone's GATT database ---- */
static const ble_uuid128_t ancs_uuid = BLE_UUID128_INIT(ANCS_UUID_SERVICE_LE);
static const ble_uuid128_t ns_uuid = BLE_UUID128_INIT(ANCS_UUID_NOTIFICATION_SOURCE_LE);
static const ble_uuid128_t cp_uuid = BLE_UUID128_INIT(ANCS_UUID_CONTROL_POINT_LE);
static const ble_uuid128_t ds_uuid = BLE_UUID128_INIT(ANCS_UUID_DATA_SOURCE_LE);
static const ble_uuid128_t ams_uuid = BLE_UUID128_INIT(ANCS_AMS_UUID_SERVICE_LE);
static const ble_uuid128_t rc_uuid = BLE_UUID128_INIT(ANCS_AMS_UUID_REMOTE_COMMAND_LE);
static const ble_uuid128_t eu_uuid = BLE_UUID128_INIT(ANCS_AMS_UUID_ENTITY_UPDATE_LE);
static const ble_uuid128_t ea_uuid = BLE_UUID128_INIT(ANCS_AMS_UUID_ENTITY_ATTRIBUTE_LE);
enum { SC_VALUE = 0x03, SC_CCCD = 0x04, NS_VALUE = 0x22, NS_CCCD = 0x23, CP_VALUE = 0x25, DS_VALUE = 0x27, DS_CCCD = 0x28 };
/* AMS at 0x30-0x38 and CTS at 0x40-0x45 (the media part's tests) */
enum { AMS_START = 0x30, RC_VALUE = 0x32, RC_CCCD = 0x33, EU_VALUE = 0x35, EU_CCCD = 0x36, EA_VALUE = 0x38, AMS_END = 0x38,
       CTS_START = 0x40, CT_VALUE = 0x42, CT_CCCD = 0x43, LTI_VALUE = 0x45, CTS_END = 0x45 };
static const struct { uint16_t def, val; const ble_uuid_t *uuid; } phone_chrs[] = {
    { 0x02, SC_VALUE, BLE_UUID16_DECLARE(0x2A05) },
    { 0x21, NS_VALUE, &ns_uuid.u }, { 0x24, CP_VALUE, &cp_uuid.u }, { 0x26, DS_VALUE, &ds_uuid.u },
    { 0x31, RC_VALUE, &rc_uuid.u }, { 0x34, EU_VALUE, &eu_uuid.u }, { 0x37, EA_VALUE, &ea_uuid.u },
    { 0x41, CT_VALUE, BLE_UUID16_DECLARE(0x2A2B) }, { 0x44, LTI_VALUE, BLE_UUID16_DECLARE(0x2A0F) },
};
static const uint16_t phone_cccds[] = { SC_CCCD, NS_CCCD, DS_CCCD, RC_CCCD, EU_CCCD, CT_CCCD };
static bool ams_hidden, cts_hidden;   /* the phone does not publish AMS, CTS */
/* What the phone's reads answer: Entity Attribute's value (set by a test), Current Time, Local Time Information. */
static uint8_t ea_read_value[600];
static uint16_t ea_read_length;
static int read_requests;             /* ATT Read and Read Blob requests answered */
static const uint8_t current_time_value[10] = { 0xEA, 0x07, 11, 28, 14, 53, 7, 6, 0, 0 };   /* 2026-11-28 14:53:07, Saturday */
static const uint8_t local_time_value[2] = { 4, 0 };                                        /* UTC+1:00, standard time */

static bool ancs_hidden;   /* the phone does not publish ANCS (some do only once the link is encrypted) */

static bool
pending(const struct op *o)
{
    return o >= ops && o < ops + op_count && !o->done;
}

static int
pending_count(void)
{
    int n = 0;
    for (int i = 0; i < op_count; i++) n += !ops[i].done;
    return n;
}

static int
pending_writes_to(uint16_t handle)
{
    int n = 0;
    for (int i = 0; i < op_count; i++) n += !ops[i].done && (ops[i].kind == OP_WRITE || ops[i].kind == OP_WRITE_LONG) && ops[i].handle == handle;
    return n;
}

static struct op *
first_pending_write_to(uint16_t handle)
{
    for (int i = 0; i < op_count; i++)
        if (!ops[i].done && (ops[i].kind == OP_WRITE || ops[i].kind == OP_WRITE_LONG) && ops[i].handle == handle) return &ops[i];
    return NULL;
}

/* Ends a procedure: a write with `status`; a discovery with the phone's database, then BLE_HS_EDONE
 * (or `status` alone when it is not 0). */
static void
finish(struct op *o, int status)
{
    struct ble_gatt_error error = { (uint16_t)status, o->handle };
    struct ble_gatt_error done = { BLE_HS_EDONE, 0 };

    o->done = true;
    switch (o->kind) {
    case OP_WRITE: case OP_WRITE_LONG: {
        struct ble_gatt_attr attr = { .handle = o->handle };
        ((ble_gatt_attr_fn *)o->cb)(o->conn, &error, &attr, o->arg);
        break;
    }
    case OP_READ: case OP_READ_LONG: {
        /* As NimBLE: a Read, then (a long read) Read Blobs while a response is full (MTU - 1), then EDONE. */
        const uint8_t *value = o->handle == CT_VALUE ? current_time_value : o->handle == LTI_VALUE ? local_time_value : ea_read_value;
        uint16_t length = o->handle == CT_VALUE ? sizeof current_time_value : o->handle == LTI_VALUE ? sizeof local_time_value : ea_read_length;
        uint16_t mtu = conn_of(o->conn) ? conn_of(o->conn)->mtu : 23;
        if (status) { ((ble_gatt_attr_fn *)o->cb)(o->conn, &error, NULL, o->arg); break; }
        for (uint16_t offset = o->start;; ) {
            uint16_t n = length - offset < mtu - 1 ? length - offset : mtu - 1;
            struct ble_gatt_attr attr = { .handle = o->handle, .offset = offset, .om = mbuf_new(value + offset, n, true) };
            read_requests++;
            int rc = ((ble_gatt_attr_fn *)o->cb)(o->conn, &error, &attr, o->arg);
            os_mbuf_free_chain(attr.om);
            if (rc != 0 || o->kind == OP_READ) break;
            offset += n;
            if (n < mtu - 1) { ((ble_gatt_attr_fn *)o->cb)(o->conn, &done, NULL, o->arg); break; }
        }
        break;
    }
    case OP_DISC_SVC: {
        struct ble_gatt_svc svc = { 0 };
        if (status) { ((ble_gatt_disc_svc_fn *)o->cb)(o->conn, &error, NULL, o->arg); break; }
        if (ble_uuid_cmp(&o->uuid.u, BLE_UUID16_DECLARE(0x1801)) == 0) { svc.start_handle = 0x01; svc.end_handle = 0x05; }
        if (ble_uuid_cmp(&o->uuid.u, &ancs_uuid.u) == 0 && !ancs_hidden && conn_of(o->conn) && !conn_of(o->conn)->no_ancs) {
            svc.start_handle = 0x20;
            svc.end_handle = 0x2F;
        }
        if (ble_uuid_cmp(&o->uuid.u, &ams_uuid.u) == 0 && !ams_hidden) { svc.start_handle = AMS_START; svc.end_handle = AMS_END; }
        if (ble_uuid_cmp(&o->uuid.u, BLE_UUID16_DECLARE(0x1805)) == 0 && !cts_hidden) { svc.start_handle = CTS_START; svc.end_handle = CTS_END; }
        uuid_copy(&svc.uuid, &o->uuid.u);
        if (svc.start_handle) ((ble_gatt_disc_svc_fn *)o->cb)(o->conn, &error, &svc, o->arg);
        ((ble_gatt_disc_svc_fn *)o->cb)(o->conn, &done, NULL, o->arg);
        break;
    }
    case OP_DISC_CHRS:
        if (status) { ((ble_gatt_chr_fn *)o->cb)(o->conn, &error, NULL, o->arg); break; }
        for (size_t i = 0; i < sizeof phone_chrs / sizeof phone_chrs[0]; i++) {
            struct ble_gatt_chr chr = { .def_handle = phone_chrs[i].def, .val_handle = phone_chrs[i].val, .properties = 0x1A };
            if (chr.def_handle < o->start || chr.val_handle > o->end) continue;
            uuid_copy(&chr.uuid, phone_chrs[i].uuid);
            ((ble_gatt_chr_fn *)o->cb)(o->conn, &error, &chr, o->arg);
        }
        ((ble_gatt_chr_fn *)o->cb)(o->conn, &done, NULL, o->arg);
        break;
    case OP_DISC_DSCS:
        if (status) { ((ble_gatt_dsc_fn *)o->cb)(o->conn, &error, 0, NULL, o->arg); break; }
        for (size_t i = 0; i < sizeof phone_cccds / sizeof phone_cccds[0]; i++) {
            struct ble_gatt_dsc dsc = { .handle = phone_cccds[i] };
            if (dsc.handle < o->start || dsc.handle > o->end) continue;
            uuid_copy(&dsc.uuid, BLE_UUID16_DECLARE(BLE_GATT_DSC_CLT_CFG_UUID16));
            ((ble_gatt_dsc_fn *)o->cb)(o->conn, &error, 0, &dsc, o->arg);
        }
        ((ble_gatt_dsc_fn *)o->cb)(o->conn, &done, 0, NULL, o->arg);
        break;
    }
}

/* Answers discovery and CCCD writes (status 0) until only Control Point writes (or nothing) wait. */
static void
pump(void)
{
    for (bool again = true; again;) {
        again = false;
        for (int i = 0; i < op_count; i++) {
            if (ops[i].done || ops[i].handle == CP_VALUE) continue;
            finish(&ops[i], 0);
            again = true;
            break;
        }
    }
}

/* ---- the adapter's events ---- */
struct recorded {
    ancs_event_type type;
    ancs_status status;
    uint32_t request_id, uid;
    ancs_session_end session_end;
    ancs_health health;
    size_t attribute_count;
    uint16_t length0;
    uint8_t value0[600];
};
static struct recorded events[256];
static int event_count;
static char texts[64][160];
static int text_count;

static ancs_nimble *stop_on_added;   /* ancs_consumer_stop() from inside the next ADDED event of this adapter */

static void
on_event(void *context, const ancs_event *e, const char *text)
{
    (void)context;
    if (text) {
        if (verbose) printf("    adapter: %s\n", text);
        if (text_count < 64) snprintf(texts[text_count++], sizeof texts[0], "%s", text);
        return;
    }
    if (event_count == 256) return;
    struct recorded *r = &events[event_count++];
    memset(r, 0, sizeof *r);
    r->type = e->type; r->status = e->status; r->request_id = e->request_id; r->uid = e->uid;
    r->session_end = e->session_end; r->attribute_count = e->attribute_count;
    r->health = e->health;
    if (e->attribute_count) {
        r->length0 = e->attributes[0].length;
        memcpy(r->value0, e->attributes[0].value, r->length0 < sizeof r->value0 ? r->length0 : sizeof r->value0);
    }
    if (verbose) printf("    event %d status %d request %u\n", (int)e->type, (int)e->status, (unsigned)e->request_id);
    if (e->type == ANCS_EVENT_ADDED && stop_on_added) {
        ancs_nimble *a = stop_on_added;
        stop_on_added = NULL;
        ancs_consumer_stop(ancs_nimble_consumer(a), 0);
    }
}

static const struct recorded *
done_of(uint32_t request_id)
{
    for (int i = 0; i < event_count; i++)
        if (events[i].type == ANCS_EVENT_REQUEST_DONE && events[i].request_id == request_id) return &events[i];
    return NULL;
}

static int
count_events(ancs_event_type type)
{
    int n = 0;
    for (int i = 0; i < event_count; i++) n += events[i].type == type;
    return n;
}

static bool
said(const char *words)
{
    for (int i = 0; i < text_count; i++) if (strstr(texts[i], words)) return true;
    return false;
}

/* ---- GAP events into the adapter ---- */
/* A connection comes up (the accessory as peripheral unless `role` says
 * otherwise; encrypted unless `plain`), told to `a` (and `b` if not NULL). */
static void
connect_as(ancs_nimble *a, ancs_nimble *b, uint16_t handle, uint16_t mtu, uint8_t role, bool plain)
{
    struct ble_gap_event e = { .type = BLE_GAP_EVENT_CONNECT };

    for (int i = 0; i < 4; i++) if (!conns[i].up) { conns[i] = (struct fake_conn){ handle, mtu, true, role, plain, false }; break; }
    e.connect.status = 0;
    e.connect.conn_handle = handle;
    ancs_nimble_gap_event(a, &e);
    if (b) ancs_nimble_gap_event(b, &e);
}

static void
connect_link(ancs_nimble *a, uint16_t handle, uint16_t mtu)
{
    connect_as(a, NULL, handle, mtu, BLE_GAP_ROLE_SLAVE, false);
}

/* The link is encrypted now (BLE_GAP_EVENT_ENC_CHANGE with `status`). */
static void
encryption_changed(ancs_nimble *a, uint16_t handle, int status)
{
    struct ble_gap_event e = { .type = BLE_GAP_EVENT_ENC_CHANGE };

    if (status == 0) conn_of(handle)->plain = false;
    e.enc_change.conn_handle = handle;
    e.enc_change.status = status;
    ancs_nimble_gap_event(a, &e);
}

/* The link drops as NimBLE tells it (ble_gattc_connection_broken, then ble_gap_conn_broken): the
 * procedures pending then end with BLE_HS_ENOTCONN (ones started from those callbacks stay: NimBLE
 * times them out 30 s later), the connection is removed, then BLE_GAP_EVENT_DISCONNECT. Returns
 * how many ble_gattc_* calls the adapter made from the moment the link broke. */
static int
drop_link(ancs_nimble *a, uint16_t handle)
{
    int calls = gattc_calls, n = op_count;
    struct ble_gap_event e = { .type = BLE_GAP_EVENT_DISCONNECT };

    for (int i = 0; i < n; i++)
        if (!ops[i].done && ops[i].conn == handle) finish(&ops[i], BLE_HS_ENOTCONN);
    conn_of(handle)->up = false;
    e.disconnect.reason = BLE_HS_HCI_ERR(BLE_ERR_CONN_SPVN_TMO);
    e.disconnect.conn.conn_handle = handle;
    ancs_nimble_gap_event(a, &e);
    return gattc_calls - calls;
}

static void
notify(ancs_nimble *a, uint16_t handle, uint16_t attr, const uint8_t *bytes, uint16_t length)
{
    struct ble_gap_event e = { .type = BLE_GAP_EVENT_NOTIFY_RX };

    e.notify_rx.conn_handle = handle;
    e.notify_rx.attr_handle = attr;
    e.notify_rx.om = chain_of(bytes, length, 100);   /* several mbufs, as L2CAP reassembles them */
    ancs_nimble_gap_event(a, &e);
    os_mbuf_free_chain(e.notify_rx.om);              /* NimBLE frees it after the callback */
}

static void
notification_added(ancs_nimble *a, uint16_t handle, uint32_t uid)
{
    uint8_t ns[8] = { 0 /* Added */, ANCS_FLAG_POSITIVE_ACTION | ANCS_FLAG_NEGATIVE_ACTION, 4, 1,
                      uid & 0xFF, (uid >> 8) & 0xFF, (uid >> 16) & 0xFF, uid >> 24 };
    notify(a, handle, NS_VALUE, ns, sizeof ns);
}

/* The end of a test: the adapter's link dropped and the adapter
 * deinitialised, so that no later test finds its handle taken. */
static void
release(ancs_nimble *a)
{
    CHECK(overlaps == 0, "%d GATT procedures started while another was pending on the link", overlaps);
    overlaps = 0;
    if (a->conn != BLE_HS_CONN_HANDLE_NONE && conn_of(a->conn)) drop_link(a, a->conn);
    CHECK(ancs_nimble_deinit(a) == 0, "deinit at the end of the test");
}

/* ---- per test ---- */
static ancs_consumer_config lazy;   /* no display fetches: only the test's requests write */

static void
reset_fake(const char *name, ble_npl_time_t ticks)
{
    current_test = name;
    fake_ticks = ticks;
    fake_hz = 1000;
    memset(conns, 0, sizeof conns);
    op_count = gattc_calls = fail_rc = fail_count = overlaps = 0;
    ancs_hidden = ams_hidden = cts_hidden = false;
    ea_read_length = 0;
    read_requests = 0;
    event_count = text_count = 0;
    callout_reinit_while_armed = 0;
    ancs_consumer_config_default(&lazy);
    lazy.display_attributes = NULL;
    lazy.display_attribute_count = 0;
    lazy.display_app_names = false;
    /* These tests count the adapter's writes and ticks: no liveness probe
     * among them (the engine's liveness is tested on the engine and the C API). */
    lazy.probe_interval_s = ANCS_OFF;
    lazy.silence_limit_s = ANCS_OFF;
}

/* Connected, discovered, subscribed: a session. */
static void
session(ancs_nimble *a, uint16_t handle, uint16_t mtu)
{
    int started = count_events(ANCS_EVENT_SESSION_STARTED);

    connect_link(a, handle, mtu);
    pump();
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == started + 1, "no session started on 0x%x", handle);
}

static const ancs_attribute_request message_600[] = { { ANCS_ATTR_MESSAGE, 600 } };

static uint32_t
fetch_message(ancs_nimble *a, uint32_t uid)
{
    uint32_t id = 0;
    ancs_status s = ancs_nimble_fetch_attributes(a, uid, message_600, 1, &id);
    CHECK(s == ANCS_OK, "fetch refused: %d", (int)s);
    return id;
}

/* A Get Notification Attributes response: uid, Message of `length` bytes (i * 7 + 3). */
static uint16_t
message_response(uint8_t *out, uint32_t uid, uint16_t length)
{
    uint16_t n = 0;
    out[n++] = 0;
    out[n++] = uid & 0xFF; out[n++] = (uid >> 8) & 0xFF; out[n++] = (uid >> 16) & 0xFF; out[n++] = uid >> 24;
    out[n++] = ANCS_ATTR_MESSAGE; out[n++] = length & 0xFF; out[n++] = length >> 8;
    for (uint16_t i = 0; i < length; i++) out[n++] = (uint8_t)(i * 7 + 3);
    return n;
}

/* ======================================================================
 * Tests
 * ====================================================================== */

/* The link drops with a Control Point write pending and another request queued. */
static void
test_disconnect_with_write_pending(void)
{
    static ancs_nimble a;
    uint8_t response[64];

    reset_fake("disconnect with a write pending", 1000);
    CHECK(ancs_nimble_init(&a, &lazy, on_event, NULL) == 0, "init");
    session(&a, 1, 185);
    notification_added(&a, 1, 7);
    uint32_t first = fetch_message(&a, 7);
    uint32_t second = 0;
    ancs_nimble_perform_action(&a, 7, ANCS_ACTION_POSITIVE, &second);
    CHECK(pending_writes_to(CP_VALUE) == 1, "%d Control Point writes at once", pending_writes_to(CP_VALUE));
    struct op *old_write = first_pending_write_to(CP_VALUE);

    int calls = drop_link(&a, 1);
    CHECK(calls == 0, "%d GATT procedure(s) started after the link broke (NimBLE would time them out 30 s later "
          "and terminate the handle)", calls);
    CHECK(pending_count() == 0, "%d procedure(s) left pending on the dead link", pending_count());
    CHECK(done_of(first) && done_of(first)->status == ANCS_ERR_SESSION_ENDED, "the written request ended with %d, not session-ended",
          done_of(first) ? (int)done_of(first)->status : 999);
    CHECK(done_of(second) && done_of(second)->status == ANCS_ERR_SESSION_ENDED, "the queued request ended with %d, not session-ended",
          done_of(second) ? (int)done_of(second)->status : 999);

    /* The phone comes back on the same handle. */
    session(&a, 1, 185);
    notification_added(&a, 1, 9);
    uint32_t third = fetch_message(&a, 9);
    struct op *new_write = first_pending_write_to(CP_VALUE);
    CHECK(new_write != NULL, "the new link's request was not written");
    /* A callback of the old link arrives late (e.g. NimBLE's 30 s timeout of a write left on it). */
    old_write->done = false;
    finish(old_write, BLE_HS_ETIMEOUT);
    CHECK(!done_of(third), "the old link's late callback ended the new link's request (status %d)",
          done_of(third) ? (int)done_of(third)->status : 0);
    CHECK(pending_count() == (new_write ? 1 : 0), "%d procedures pending after the late callback", pending_count());
    if (new_write && pending(new_write)) finish(new_write, 0);
    uint16_t n = message_response(response, 9, 20);
    notify(&a, 1, DS_VALUE, response, n);
    CHECK(done_of(third) && done_of(third)->status == ANCS_OK, "the new link's request ended with %d",
          done_of(third) ? (int)done_of(third)->status : 999);
    release(&a);
}

/* A Data Source notification of MTU 517 − 3 = 514 bytes reaches the engine whole. */
static void
test_long_notification(void)
{
    static ancs_nimble a;
    uint8_t response[600];

    reset_fake("514-byte Data Source notification", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 2, 517);
    notification_added(&a, 2, 5);
    uint32_t id = fetch_message(&a, 5);
    struct op *w = first_pending_write_to(CP_VALUE);
    CHECK(w != NULL, "not written");
    if (w) finish(w, 0);
    uint16_t n = message_response(response, 5, 506);
    CHECK(n == 514, "the response is %u bytes", n);
    notify(&a, 2, DS_VALUE, response, n);
    const struct recorded *r = done_of(id);
    CHECK(r && r->status == ANCS_OK, "the fetch did not end OK (%d)", r ? (int)r->status : 999);
    CHECK(r && r->attribute_count == 1 && r->length0 == 506 && memcmp(r->value0, response + 8, 506) == 0,
          "the Message is not the 506 bytes sent (%u)", r ? r->length0 : 0);

    /* Longer than any ATT MTU allows: reported, not cut. */
    notification_added(&a, 2, 6);
    id = fetch_message(&a, 6);
    if ((w = first_pending_write_to(CP_VALUE))) finish(w, 0);
    n = message_response(response, 6, 515 - 8);
    int texts_before = text_count;
    notify(&a, 2, DS_VALUE, response, n);
    CHECK(!done_of(id) || done_of(id)->status != ANCS_OK, "a 515-byte notification was taken (cut?)");
    CHECK(text_count > texts_before && said("515"), "a 515-byte notification dropped without a word");
    release(&a);
}

/* The clock: NimBLE's FreeRTOS port converts ticks to ms in 32 bits (at 1 kHz, the ms wrap after
 * 4 294 967 ticks, 71.6 min), and ticks wrap at 2^32. Neither may fire timeouts. */
static void
clock_wrap_at(const char *name, ble_npl_time_t start, uint32_t hz)
{
    static ancs_nimble a;

    reset_fake(name, start);
    fake_hz = hz;
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 3, 185);
    notification_added(&a, 3, 11);
    uint32_t id = fetch_message(&a, 11);
    struct op *w = first_pending_write_to(CP_VALUE);
    if (w) finish(w, 0);
    /* 10 s timeout from the write, with the wrap 3 s in; at 5 s the phone announces another
     * notification (the adapter reads the clock) */
    for (int i = 0; i < 50; i++) advance(hz / 10);
    notification_added(&a, 3, 12);
    for (int i = 0; i < 40; i++) advance(hz / 10);   /* 9 s */
    CHECK(!done_of(id), "the request ended after 9 s of a 10 s timeout (status %d): the clock jumped at the wrap",
          done_of(id) ? (int)done_of(id)->status : 0);
    for (int i = 0; i < 20; i++) advance(hz / 10);   /* 11 s */
    CHECK(done_of(id) && done_of(id)->status == ANCS_ERR_TIMED_OUT, "no timeout 11 s after the write");
    release(&a);
}

static void
test_clock_wraps(void)
{
    clock_wrap_at("ms wrap of the FreeRTOS conversion (1 kHz)", 4294967u - 3000, 1000);
    clock_wrap_at("tick counter wrap (1 kHz)", 0xFFFFFFFFu - 3000, 1000);
    clock_wrap_at("tick counter wrap (128 Hz)", 0xFFFFFFFFu - 384, 128);
}

/* ancs_consumer_stop: the two unsubscriptions are written one at a time. */
static void
test_stop_serializes(void)
{
    static ancs_nimble a;

    reset_fake("stop: one CCCD write at a time", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 4, 185);
    ancs_consumer_stop(ancs_nimble_consumer(&a), 2000);
    CHECK(pending_count() == 1, "%d GATT writes at once", pending_count());
    int cleared = 0, most = 0;
    for (int i = 0; i < 4; i++) {
        struct op *o = NULL;
        for (int k = 0; k < op_count; k++) if (!ops[k].done) { o = &ops[k]; break; }
        if (!o) break;
        if (pending_count() > most) most = pending_count();
        if (o->kind == OP_WRITE && (o->handle == NS_CCCD || o->handle == DS_CCCD) && o->length == 2 && !o->value[0]) cleared++;
        finish(o, 0);
    }
    CHECK(most == 1, "%d writes at once", most);
    CHECK(cleared == 2, "%d CCCDs cleared", cleared);
    CHECK(count_events(ANCS_EVENT_SESSION_ENDED) == 1, "session not ended");
    release(&a);
}

/* The first pending procedure, or NULL. */
static struct op *
first_pending(void)
{
    for (int k = 0; k < op_count; k++) if (!ops[k].done) return &ops[k];
    return NULL;
}

/* Subscribing again (a fetch answered 0xFD: the phone holds no subscription,
 * as after it forgot them in silence): both CCCDs off, then Data Source and
 * Notification Source on, one write at a time and in that order. A clear
 * written after the enable left Data Source off, and the consumer subscribed
 * again without end. */
static void
test_resubscribe_order(void)
{
    static ancs_nimble a;
    uint16_t handles[8], values[8];
    int n = 0, most = 0;

    reset_fake("subscribing again: off, then on, in order", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 7, 185);
    notification_added(&a, 7, 3);
    uint32_t id = fetch_message(&a, 3);
    struct op *w = first_pending_write_to(CP_VALUE);
    CHECK(w != NULL, "not written");
    if (w) finish(w, BLE_HS_ATT_ERR(0xFD));
    CHECK(done_of(id) && done_of(id)->status == 0xFD, "the fetch did not end with 0xFD");
    for (struct op *o; (o = first_pending()) && n < 8;) {
        if (pending_count() > most) most = pending_count();
        if (o->kind == OP_WRITE && (o->handle == NS_CCCD || o->handle == DS_CCCD)) { handles[n] = o->handle; values[n] = o->value[0]; n++; }
        finish(o, 0);
    }
    CHECK(most == 1, "%d GATT writes at once", most);
    CHECK(n == 4 && handles[0] == NS_CCCD && !values[0] && handles[1] == DS_CCCD && !values[1] &&
          handles[2] == DS_CCCD && values[2] == 1 && handles[3] == NS_CCCD && values[3] == 1,
          "CCCD writes not NS off, DS off, DS on, NS on (%d writes; last DS value %d)", n, n >= 3 ? values[2] : -1);
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 2, "%d sessions, not a new one", count_events(ANCS_EVENT_SESSION_STARTED));
    release(&a);
}

/* Subscriptions refused (0x08 until the phone's user allows notifications):
 * the engine subscribes again once its retry interval has passed, on the
 * same link; the adapter adds no retry of its own. */
static void
test_refused_retried_by_engine(void)
{
    static ancs_nimble a;
    int enables = 0;

    reset_fake("refused subscriptions: the engine retries", 1000);
    lazy.retry_interval_s = 5;
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    connect_link(&a, 8, 185);
    for (struct op *o; (o = first_pending());) {
        bool enable = o->kind == OP_WRITE && (o->handle == NS_CCCD || o->handle == DS_CCCD) && o->value[0];
        enables += enable;
        finish(o, enable ? BLE_HS_ATT_ERR(BLE_ATT_ERR_INSUFFICIENT_AUTHOR) : 0);
    }
    CHECK(enables == 2, "%d subscriptions asked, not Data Source and Notification Source", enables);
    bool waiting = false;
    for (int i = 0; i < event_count; i++)
        waiting |= events[i].type == ANCS_EVENT_HEALTH && events[i].health == ANCS_HEALTH_WAITING_FOR_PERMISSION;
    CHECK(waiting, "not waiting for permission");
    advance(4500);
    CHECK(pending_count() == 0, "%d GATT writes before the retry interval", pending_count());
    advance(1000);
    struct op *o = first_pending();
    CHECK(o && o->kind == OP_WRITE && o->handle == DS_CCCD && o->value[0] == 1 && pending_count() == 1,
          "not one Data Source subscription after the retry interval (%d pending)", pending_count());
    pump();
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 2 && events[event_count - 1].type == ANCS_EVENT_HEALTH &&
          events[event_count - 1].health == ANCS_HEALTH_HEALTHY, "no session, or not healthy, once allowed");
    ancs_nimble_deinit(&a);
}

/* Deinit stops the timer and ends the session: the storage can then be freed. */
static void
test_deinit(void)
{
    reset_fake("deinit", 1000);
    CHECK(ancs_nimble_deinit != NULL, "no ancs_nimble_deinit");
    if (!ancs_nimble_deinit) return;
    ancs_nimble *a = malloc(sizeof *a);
    memset(a, 0x5A, sizeof *a);   /* storage that held anything before */
    CHECK(ancs_nimble_init(a, &lazy, on_event, NULL) == 0, "init on dirty storage");
    session(a, 5, 185);
    notification_added(a, 5, 21);
    uint32_t id = fetch_message(a, 21);
    struct op *w = first_pending_write_to(CP_VALUE);
    CHECK(ancs_nimble_deinit(a) == BLE_HS_EBUSY, "deinit with a GATT procedure pending (its callback has the storage) did not refuse");
    CHECK(!done_of(id), "deinit refused but ended the request");
    if (w) finish(w, 0);
    CHECK(callout_armed_inside(a, sizeof *a), "the request's timeout is not armed");
    CHECK(ancs_nimble_deinit(a) == 0, "deinit");
    CHECK(done_of(id) && done_of(id)->status == ANCS_ERR_SESSION_ENDED, "the request did not end session-ended");
    CHECK(count_events(ANCS_EVENT_SESSION_ENDED) == 1, "no session-ended event");
    CHECK(!callout_armed_inside(a, sizeof *a), "the timer is still armed on the storage");
    CHECK(ancs_nimble_deinit(a) == 0, "a second deinit");
    free(a);
    advance(20000);   /* the fake aborts if an armed callout still points into freed storage */
    CHECK(pending_count() == 0, "procedures after deinit");
}

/* Adapters in heap storage, freed after deinit, three times: with
 * ble_npl_callout_deinit, no port timer is left behind (before, one leaked
 * per init: a FreeRTOS timer and its memory). */
static void
test_heap_adapters(void)
{
    reset_fake("adapters in heap storage: no timer left behind", 1000);
#ifdef ANCS_TEST_CALLOUT_KEPT
    return;   /* no ble_npl_callout_deinit in this port: ancs_nimble.h says to keep adapters static */
#else
    int live = 0;
    for (int i = 0; i < 3; i++) {
        ancs_nimble *a = malloc(sizeof *a);
        memset(a, 0x5A, sizeof *a);
        CHECK(ancs_nimble_init(a, &lazy, on_event, NULL) == 0, "init");
        session(a, 40, 185);
        drop_link(a, 40);
        CHECK(ancs_nimble_deinit(a) == 0, "deinit");
        live += callout_live(&a->timer);
        free(a);
    }
    CHECK(live == 0, "%d port timers left behind by three adapters freed", live);
#endif
}

/* Init again on a running adapter: its timer is stopped first, not wiped while armed. */
static void
test_init_again(void)
{
    static ancs_nimble a;

    reset_fake("init again", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 6, 185);
    notification_added(&a, 6, 31);
    uint32_t id = fetch_message(&a, 31);
    struct op *w = first_pending_write_to(CP_VALUE);
    if (w) finish(w, 0);
    CHECK(callout_armed_inside(&a, sizeof a), "the request's timeout is not armed");
    CHECK(ancs_nimble_init(&a, &lazy, on_event, NULL) == 0, "init again");
    CHECK(callout_reinit_while_armed == 0, "the timer was initialised again while armed");
    CHECK(done_of(id) && done_of(id)->status == ANCS_ERR_SESSION_ENDED, "the old session's request did not end (leaked)");
    CHECK(callout_live(&a.timer) == 1, "%d timers made and not released (a FreeRTOS timer leaked each time)", callout_live(&a.timer));
    /* and it works: a new connection, a session */
    session(&a, 7, 185);
    /* deinit, then init on the same storage: the timer is still the first one */
    if (ancs_nimble_deinit) {
        drop_link(&a, 7);
        CHECK(ancs_nimble_deinit(&a) == 0, "deinit");
        CHECK(ancs_nimble_init(&a, &lazy, on_event, NULL) == 0, "init after deinit");
        event_count = 0;   /* request ids start again */
        CHECK(callout_live(&a.timer) == 1, "%d timers made and not released after deinit and init", callout_live(&a.timer));
        session(&a, 8, 185);
        notification_added(&a, 8, 41);
        uint32_t r = fetch_message(&a, 41);
        struct op *o = first_pending_write_to(CP_VALUE);
        if (o) finish(o, 0);
        advance(11000);
        CHECK(done_of(r) && done_of(r)->status == ANCS_ERR_TIMED_OUT, "the kept timer did not time the request out");
    }
    release(&a);
}

/* A Control Point write NimBLE refuses at once: reported later (from the timer), not from inside
 * the engine's callback, which writes the next command at once (a failure nested per queued
 * request, each one failed); BLE_HS_ENOMEM is tried again. */
static void
test_write_refused(void)
{
    static ancs_nimble a;
    uint8_t response[64];
    uint16_t n;

    reset_fake("write refused at once", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 8, 185);
    for (uint32_t uid = 1; uid <= 4; uid++) notification_added(&a, 8, uid);
    uint32_t r1 = fetch_message(&a, 1), r2 = fetch_message(&a, 2), r3 = fetch_message(&a, 3);
    struct op *w = first_pending_write_to(CP_VALUE);
    if (w) finish(w, 0);
    fail_rc = BLE_HS_ENOMEM;   /* out of buffers for the next three tries */
    fail_count = 3;
    int calls = gattc_calls;
    n = message_response(response, 1, 10);
    notify(&a, 8, DS_VALUE, response, n);
    CHECK(done_of(r1) && done_of(r1)->status == ANCS_OK, "the first request");
    CHECK(gattc_calls - calls == 1, "%d writes tried inside one notification's call (nested)", gattc_calls - calls);
    CHECK(!done_of(r2) && !done_of(r3), "queued requests failed at once (%d, %d)",
          done_of(r2) ? (int)done_of(r2)->status : 0, done_of(r3) ? (int)done_of(r3)->status : 0);
    advance(1000);
    CHECK(fail_count == 0, "BLE_HS_ENOMEM not tried again (%d refusals left)", fail_count);
    for (uint32_t uid = 2; uid <= 3; uid++) {
        w = first_pending_write_to(CP_VALUE);
        CHECK(w != NULL, "request for %u not written once buffers were free", (unsigned)uid);
        if (!w) break;
        finish(w, 0);
        n = message_response(response, uid, 10);
        notify(&a, 8, DS_VALUE, response, n);
    }
    CHECK(done_of(r2) && done_of(r2)->status == ANCS_OK, "the second request ended %d", done_of(r2) ? (int)done_of(r2)->status : 999);
    CHECK(done_of(r3) && done_of(r3)->status == ANCS_OK, "the third request ended %d", done_of(r3) ? (int)done_of(r3)->status : 999);

    /* Another refusal: a transport failure, reported after the call returned. */
    fail_rc = BLE_HS_EUNKNOWN;
    fail_count = 1;
    uint32_t r4 = fetch_message(&a, 4);
    CHECK(!done_of(r4), "the refusal was reported from inside the call");
    advance(10);
    CHECK(done_of(r4) && done_of(r4)->status == ANCS_ERR_TRANSPORT, "the refusal was not reported (%d)",
          done_of(r4) ? (int)done_of(r4)->status : 999);

    /* Out of buffers, then the application stops the session: the command is not written later. */
    fail_rc = BLE_HS_ENOMEM;
    fail_count = 1;
    uint32_t r5 = fetch_message(&a, 4);
    ancs_consumer_stop(ancs_nimble_consumer(&a), 100000);
    CHECK(done_of(r5) && done_of(r5)->status != ANCS_OK, "stop did not end the request");
    pump();
    advance(1000);
    pump();
    CHECK(!first_pending_write_to(CP_VALUE), "a Control Point write after the session was stopped");
    release(&a);
}

/* The phone forgot the bond: a repeat pairing, or a re-encryption that
 * fails for a missing key. The adapter drops the stale bond and tells the
 * engine (ANCS_HEALTH_BOND_LOST), by itself. */
static void
test_bond_lost(void)
{
    static ancs_nimble a;
    struct ble_gap_event event;

    reset_fake("bond lost: repeat pairing, key missing", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 5, 185);
    peers_deleted = 0;
    memset(&event, 0, sizeof event);
    event.type = BLE_GAP_EVENT_REPEAT_PAIRING;
    event.repeat_pairing.conn_handle = 5;
    CHECK(ancs_nimble_gap_event(&a, &event) == BLE_GAP_REPEAT_PAIRING_RETRY, "repeat pairing not retried");
    CHECK(peers_deleted == 1, "%d stale bonds dropped", peers_deleted);
    int health = -1;
    for (int i = 0; i < event_count; i++) if (events[i].type == ANCS_EVENT_HEALTH) health = (int)events[i].health;
    CHECK(health == ANCS_HEALTH_BOND_LOST, "health %d, not bond lost", health);

    /* A re-encryption that fails for a missing key: the same, and pairing is asked for. */
    ancs_nimble_deinit(&a);
    reset_fake("bond lost: key missing", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 6, 185);
    peers_deleted = security_initiated = 0;
    memset(&event, 0, sizeof event);
    event.type = BLE_GAP_EVENT_ENC_CHANGE;
    event.enc_change.conn_handle = 6;
    event.enc_change.status = BLE_HS_HCI_ERR(BLE_ERR_PINKEY_MISSING);
    ancs_nimble_gap_event(&a, &event);
    CHECK(peers_deleted == 1 && security_initiated == 1, "dropped %d, pairing asked %d", peers_deleted, security_initiated);
    health = -1;
    for (int i = 0; i < event_count; i++) if (events[i].type == ANCS_EVENT_HEALTH) health = (int)events[i].health;
    CHECK(health == ANCS_HEALTH_BOND_LOST, "health %d, not bond lost", health);
    release(&a);
}


/* Answers the pending procedures in order, with status 0, until `stop` is
 * the first pending one (or none is). */
static struct op *
pump_until(bool (*stop)(const struct op *))
{
    for (struct op *o; (o = first_pending());) {
        if (stop(o)) return o;
        finish(o, 0);
    }
    return NULL;
}

static bool is_ancs_chrs(const struct op *o) { return o->kind == OP_DISC_CHRS && o->start == 0x20; }
static bool is_sc_subscription(const struct op *o) { return o->kind == OP_WRITE && o->handle == SC_CCCD; }
static bool is_ds_subscription(const struct op *o) { return o->kind == OP_WRITE && o->handle == DS_CCCD && o->value[0]; }

/* Answers every pending procedure; returns the most that were pending at once. */
static int
pump_counting(void)
{
    int most = 0;
    for (struct op *o; (o = first_pending());) {
        if (pending_count() > most) most = pending_count();
        finish(o, 0);
    }
    return most;
}

/* Service Changed arrives while ANCS is being discovered: the discovery
 * running is not doubled (the two would share the handles found); it starts
 * over once it ends, and one session starts. */
static void
test_service_changed_during_discovery(void)
{
    static ancs_nimble a;
    static const uint8_t changed[4] = { 0x20, 0x00, 0x2F, 0x00 };

    reset_fake("Service Changed during discovery", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    connect_link(&a, 9, 185);
    CHECK(pump_until(is_ancs_chrs) != NULL, "no ANCS characteristic discovery");
    notify(&a, 9, SC_VALUE, changed, sizeof changed);
    CHECK(pending_count() == 1, "%d procedures pending: a second discovery started over the running one", pending_count());
    int before = op_count;
    int most = pump_counting();
    CHECK(most == 1, "%d procedures at once", most);
    bool again = false;
    for (int i = before; i < op_count; i++) again |= ops[i].kind == OP_DISC_SVC && ble_uuid_cmp(&ops[i].uuid.u, &ancs_uuid.u) == 0;
    CHECK(again, "ANCS not discovered again after the discovery that Service Changed made stale");
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 1, "%d sessions", count_events(ANCS_EVENT_SESSION_STARTED));
    CHECK(a.ns_value == NS_VALUE && a.ns_cccd == NS_CCCD && a.ds_cccd == DS_CCCD, "handles 0x%x 0x%x 0x%x", a.ns_value, a.ns_cccd, a.ds_cccd);
    release(&a);
}

/* Discovery fails on an encrypted link (not for want of security): it is
 * tried again every retry interval. Security that fails while discovery
 * waits for it: the same. */
static void
test_discovery_failed_retried(void)
{
    static ancs_nimble a;

    reset_fake("discovery failed: tried again", 1000);
    lazy.retry_interval_s = 5;
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    connect_link(&a, 10, 185);
    struct op *o = first_pending();
    CHECK(o && o->kind == OP_DISC_SVC, "no discovery");
    if (o) finish(o, BLE_HS_ETIMEOUT);
    CHECK(pending_count() == 0, "%d procedures at once after the failure", pending_count());
    advance(4500);
    CHECK(pending_count() == 0, "discovery again before the retry interval");
    advance(1000);
    CHECK(pending_count() == 1, "discovery not tried again after the retry interval (%d pending)", pending_count());
    pump();
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 1, "no session after discovery was tried again");
    release(&a);

    reset_fake("security failed while discovery waits: tried again", 1000);
    lazy.retry_interval_s = 5;
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    security_initiated = 0;
    connect_as(&a, NULL, 10, 185, BLE_GAP_ROLE_SLAVE, true);
    if ((o = first_pending())) finish(o, BLE_HS_ATT_ERR(BLE_ATT_ERR_INSUFFICIENT_AUTHEN));
    CHECK(security_initiated == 1, "security asked %d times", security_initiated);
    encryption_changed(&a, 10, BLE_HS_HCI_ERR(BLE_ERR_AUTH_FAIL));
    advance(5500);
    CHECK(pending_count() == 1, "discovery not tried again after security failed (%d pending)", pending_count());
    release(&a);
}

/* ANCS hidden until the link is encrypted: discovered again then. */
static void
test_ancs_after_encryption(void)
{
    static ancs_nimble a;

    reset_fake("ANCS published once encrypted", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    ancs_hidden = true;
    connect_as(&a, NULL, 11, 185, BLE_GAP_ROLE_SLAVE, true);
    pump();
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 0, "a session without ANCS");
    ancs_hidden = false;
    encryption_changed(&a, 11, 0);
    CHECK(pending_count() == 1, "ANCS not looked for again once the link is encrypted (%d pending)", pending_count());
    pump();
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 1, "no session once ANCS shows");
    release(&a);
}

/* The Service Changed subscription refused for want of authentication: written again once encrypted. */
static void
test_service_changed_subscribed_after_encryption(void)
{
    static ancs_nimble a;
    static const uint8_t changed[4] = { 0x20, 0x00, 0x2F, 0x00 };

    reset_fake("Service Changed subscribed again once encrypted", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    security_initiated = 0;
    connect_as(&a, NULL, 12, 185, BLE_GAP_ROLE_SLAVE, true);
    struct op *o = pump_until(is_sc_subscription);
    CHECK(o != NULL, "Service Changed not subscribed");
    if (o) finish(o, BLE_HS_ATT_ERR(BLE_ATT_ERR_INSUFFICIENT_AUTHEN));
    CHECK(security_initiated == 1, "security asked %d times", security_initiated);
    encryption_changed(&a, 12, 0);
    o = pump_until(is_sc_subscription);
    CHECK(o && o->value[0] == 2, "Service Changed not subscribed again once encrypted");
    pump();
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 1, "no session");
    int before = op_count;
    notify(&a, 12, SC_VALUE, changed, sizeof changed);
    CHECK(op_count > before, "Service Changed not heard");
    release(&a);
}

/* Data Source refused for want of authentication, and security fails: the
 * engine is told (health) and subscribes again at its retry interval. */
static void
test_data_source_refused_retried(void)
{
    static ancs_nimble a;

    reset_fake("Data Source refused, security failed: retried", 1000);
    lazy.retry_interval_s = 5;
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    security_initiated = 0;
    connect_as(&a, NULL, 13, 185, BLE_GAP_ROLE_SLAVE, true);
    struct op *o = pump_until(is_ds_subscription);
    CHECK(o != NULL, "Data Source not subscribed");
    if (o) finish(o, BLE_HS_ATT_ERR(BLE_ATT_ERR_INSUFFICIENT_AUTHEN));
    CHECK(security_initiated == 1, "security asked %d times", security_initiated);
    encryption_changed(&a, 13, BLE_HS_HCI_ERR(BLE_ERR_AUTH_FAIL));
    bool told = false;
    for (int i = 0; i < event_count; i++)
        told |= events[i].type == ANCS_EVENT_HEALTH && events[i].health == ANCS_HEALTH_WAITING_FOR_PERMISSION;
    CHECK(told, "the application was not told");
    pump();
    CHECK(pending_count() == 0, "%d procedures pending before the retry interval", pending_count());
    advance(5500);
    /* the engine subscribes again: both off, then Data Source and Notification Source on */
    CHECK(pump_until(is_ds_subscription) != NULL, "Data Source not subscribed again after the retry interval");
    release(&a);
}

/* A link on which this accessory is the central (a heart-rate strap) is not
 * taken; the phone that connects next is. Two adapters serve two phones. */
static void
test_phone_links_only(void)
{
    static ancs_nimble a, b;

    reset_fake("only the phone's link, one adapter per phone", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    connect_as(&a, NULL, 14, 185, BLE_GAP_ROLE_MASTER, false);
    CHECK(pending_count() == 0, "the adapter took a link it made as central (%d procedures)", pending_count());
    session(&a, 15, 185);
    ancs_nimble_init(&b, &lazy, on_event, NULL);
    connect_as(&a, &b, 16, 185, BLE_GAP_ROLE_SLAVE, false);   /* a second phone; both adapters hear it */
    CHECK(a.conn == 15 && b.conn == 16, "links: first adapter 0x%x, second 0x%x", a.conn, b.conn);
    pump();
    CHECK(ancs_consumer_in_session(ancs_nimble_consumer(&a)) && ancs_consumer_in_session(ancs_nimble_consumer(&b)),
          "not a session on each phone");
    release(&b);
    CHECK(ancs_consumer_in_session(ancs_nimble_consumer(&a)), "the second phone's end ended the first's session");
    release(&a);

    /* One phone heard by both: one adapter takes it, the other does not. */
    reset_fake("one phone, two adapters", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    ancs_nimble_init(&b, &lazy, on_event, NULL);
    connect_as(&a, &b, 17, 185, BLE_GAP_ROLE_SLAVE, false);
    CHECK(a.conn == 17 && b.conn == BLE_HS_CONN_HANDLE_NONE, "both adapters took the link");
    CHECK(pending_count() == 1, "%d discoveries at once", pending_count());
    release(&a);
    release(&b);
}

/* A central that is not an iPhone (a companion device: no ANCS on its link) connects first. */
static void
connect_companion(ancs_nimble *a, uint16_t handle, bool plain)
{
    connect_as(a, NULL, handle, 185, BLE_GAP_ROLE_SLAVE, plain);
    conn_of(handle)->no_ancs = true;   /* before its discovery is answered */
}

/* The phone's link is the one where ANCS is: a companion device that
 * connected first (encrypted or not, its discovery done or still running)
 * does not keep the adapter from the iPhone; a link where ANCS once was is
 * kept; two links without ANCS are each looked at once, not in a loop. */
static void
test_companion_first(void)
{
    static ancs_nimble a;

    reset_fake("a companion device connects first, encrypted", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    connect_companion(&a, 20, false);
    pump();
    CHECK(a.conn == 20 && count_events(ANCS_EVENT_SESSION_STARTED) == 0, "held 0x%x", a.conn);
    connect_link(&a, 21, 185);
    CHECK(a.conn == 21, "the iPhone's link not taken: held 0x%x", a.conn);
    pump();
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 1, "no session on the iPhone's link");
    encryption_changed(&a, 20, 0);   /* the companion's link changes: the phone's is kept */
    pump();
    CHECK(a.conn == 21 && ancs_consumer_in_session(ancs_nimble_consumer(&a)), "the phone's link left: held 0x%x", a.conn);
    drop_link(&a, 20);
    release(&a);

    reset_fake("the iPhone connects while the companion's discovery runs", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    connect_companion(&a, 30, false);
    connect_link(&a, 31, 185);
    CHECK(a.conn == 30, "the discovery running was left: held 0x%x", a.conn);
    pump();
    CHECK(a.conn == 31 && count_events(ANCS_EVENT_SESSION_STARTED) == 1, "held 0x%x, %d sessions", a.conn,
          count_events(ANCS_EVENT_SESSION_STARTED));
    drop_link(&a, 30);
    release(&a);

    reset_fake("a plain companion link: encryption asked for, then the iPhone", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    security_initiated = 0;
    connect_companion(&a, 40, true);
    pump();
    CHECK(security_initiated == 1, "encryption asked %d times for a plain link without ANCS", security_initiated);
    connect_link(&a, 41, 185);
    pump();
    CHECK(a.conn == 41 && count_events(ANCS_EVENT_SESSION_STARTED) == 1, "held 0x%x", a.conn);
    drop_link(&a, 40);
    release(&a);

    reset_fake("the phone's link without ANCS for a while is kept", 1000);
    static const uint8_t changed[4] = { 0x20, 0x00, 0x2F, 0x00 };
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 50, 185);
    ancs_hidden = true;
    notify(&a, 50, SC_VALUE, changed, sizeof changed);   /* ANCS removed by Service Changed */
    pump();
    connect_link(&a, 51, 185);
    pump();
    CHECK(a.conn == 50, "the phone's link left while ANCS was away: held 0x%x", a.conn);
    ancs_hidden = false;
    drop_link(&a, 51);
    release(&a);

    reset_fake("the phone's link drops: a link up is looked at, the phone taken back when it returns", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 60, 185);
    connect_companion(&a, 61, false);
    CHECK(a.conn == 60, "held 0x%x", a.conn);
    drop_link(&a, 60);
    CHECK(a.conn == 61, "the link up not looked at: held 0x%x", a.conn);
    pump();
    connect_link(&a, 62, 185);   /* the phone again */
    pump();
    CHECK(a.conn == 62 && ancs_consumer_in_session(ancs_nimble_consumer(&a)), "held 0x%x", a.conn);
    drop_link(&a, 61);
    release(&a);

    reset_fake("two links without ANCS: each looked at once", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    connect_companion(&a, 70, false);
    pump();
    int calls = gattc_calls;
    connect_companion(&a, 71, false);
    pump();
    CHECK(a.conn == 71 && pending_count() == 0, "held 0x%x, %d pending", a.conn, pending_count());
    CHECK(gattc_calls - calls < 10, "%d GATT procedures for one new link", gattc_calls - calls);
    drop_link(&a, 70);
    release(&a);
}

/* A Control Point write the engine abandoned at its request timeout: its
 * late callback is not taken for the next write's. */
static void
test_abandoned_write(void)
{
    static ancs_nimble a;
    uint8_t response[64];

    reset_fake("an abandoned write's late callback", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 18, 185);
    notification_added(&a, 18, 1);
    notification_added(&a, 18, 2);
    uint32_t r1 = fetch_message(&a, 1), r2 = fetch_message(&a, 2);
    struct op *w1 = first_pending_write_to(CP_VALUE);
    advance(10500);
    CHECK(done_of(r1) && done_of(r1)->status == ANCS_ERR_TIMED_OUT, "the first request did not time out");
    /* The engine writes the next command; NimBLE still waits for the first
     * write's answer (up to 30 s): the command is held, one ATT request at a time. */
    CHECK(pending_count() == 1, "%d GATT procedures pending while the first write waits for its answer", pending_count());
    if (w1) finish(w1, BLE_HS_ATT_ERR(0xA1));   /* NimBLE answers the first write late */
    CHECK(!done_of(r2), "the abandoned write's result ended the next request (status 0x%x)", done_of(r2) ? (unsigned)done_of(r2)->status : 0);
    struct op *w2 = first_pending_write_to(CP_VALUE);
    CHECK(w2 != NULL && w2 != w1, "the second request was not written after the first write's answer");
    if (w2) finish(w2, 0);
    uint16_t n = message_response(response, 2, 10);
    notify(&a, 18, DS_VALUE, response, n);
    CHECK(done_of(r2) && done_of(r2)->status == ANCS_OK, "the second request ended %d", done_of(r2) ? (int)done_of(r2)->status : 999);
    release(&a);
}

/* The application stops the session from inside an ADDED event, whose
 * display fetch the engine had asked for in the same input: no Control Point
 * write goes out (before, it did, after SESSION_ENDED and beside the CCCD
 * clears: two ATT requests at once). Then a CCCD write NimBLE refuses for
 * want of buffers is tried again, not failed. */
static void
test_stop_inside_added(void)
{
    static ancs_nimble a;
    ancs_consumer_config eager;

    reset_fake("stop from an ADDED event; a CCCD write out of buffers", 1000);
    ancs_consumer_config_default(&eager);
    eager.probe_interval_s = ANCS_OFF;
    ancs_nimble_init(&a, &eager, on_event, NULL);
    session(&a, 21, 185);
    stop_on_added = &a;
    notification_added(&a, 21, 5);
    CHECK(stop_on_added == NULL, "no ADDED event");
    CHECK(count_events(ANCS_EVENT_SESSION_ENDED) == 1, "the session did not end");
    int cleared = 0;
    for (struct op *o; (o = first_pending());) {
        CHECK(o->handle != CP_VALUE, "a Control Point write after the session was stopped");
        cleared += o->kind == OP_WRITE && (o->handle == NS_CCCD || o->handle == DS_CCCD) && !o->value[0];
        finish(o, 0);
    }
    CHECK(cleared == 2, "%d CCCDs cleared", cleared);
    bool after = false;
    for (int i = 0; i < event_count; i++) {
        if (events[i].type == ANCS_EVENT_SESSION_ENDED) after = true;
        else CHECK(!after || events[i].type == ANCS_EVENT_REQUEST_DONE, "event %d after SESSION_ENDED", (int)events[i].type);
    }

    fail_rc = BLE_HS_ENOMEM;
    fail_count = 2;
    CHECK(ancs_consumer_link_up(ancs_nimble_consumer(&a), 185, 3000) == ANCS_OK, "started again");
    CHECK(pending_count() == 0, "refused: %d pending", pending_count());
    advance(250);   /* tried again every 100 ms */
    CHECK(fail_count == 0, "not tried again (%d refusals left)", fail_count);
    pump();
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 2, "no session once NimBLE's buffers came back (%d)", count_events(ANCS_EVENT_SESSION_STARTED));
    CHECK(count_events(ANCS_EVENT_DATA_SOURCE_UNAVAILABLE) == 0 && count_events(ANCS_EVENT_SESSION_ENDED) == 1,
          "a subscription failed for want of buffers (Data Source unavailable %d times, %d sessions ended)",
          count_events(ANCS_EVENT_DATA_SOURCE_UNAVAILABLE), count_events(ANCS_EVENT_SESSION_ENDED));
    CHECK(ancs_consumer_in_session(ancs_nimble_consumer(&a)), "not in session");
    release(&a);
}

/* A link already up when the adapter is initialised (deinit and init with
 * the phone connected: a "notifications off, then on" switch) is taken with
 * ancs_nimble_attach; before, nothing happened until the phone reconnected.
 * A session stopped is started again on the same link. */
static void
test_attach_and_restart(void)
{
    static ancs_nimble a;
    uint8_t response[64];

    reset_fake("a link already up; stop and start again", 1000);
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 30, 185);
    CHECK(ancs_nimble_deinit(&a) == 0, "deinit with the link up");
    CHECK(ancs_nimble_init(&a, &lazy, on_event, NULL) == 0, "init again");
    CHECK(pending_count() == 0, "procedures before the link was given");
    connect_as(&a, NULL, 31, 185, BLE_GAP_ROLE_MASTER, false);   /* the accessory's own link to a sensor */
    CHECK(ancs_nimble_attach(&a, 32) == BLE_HS_ENOTCONN, "a handle not up taken");
    CHECK(ancs_nimble_attach(&a, 31) == BLE_HS_EINVAL, "a link this accessory is the central of taken");
    CHECK(ancs_nimble_attach(&a, 30) == 0, "the phone's link, already up, not taken");
    CHECK(ancs_nimble_attach(&a, 30) == BLE_HS_EALREADY, "the link held taken again");
    pump();
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 2, "no session on the link already up");

    CHECK(ancs_nimble_stop(&a) == 0, "stop");
    pump();
    CHECK(count_events(ANCS_EVENT_SESSION_ENDED) == 2 && !ancs_consumer_in_session(ancs_nimble_consumer(&a)), "not stopped");
    CHECK(ancs_nimble_start(&a) == 0, "start");
    pump();
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 3 && ancs_consumer_in_session(ancs_nimble_consumer(&a)), "not started again");
    CHECK(ancs_nimble_start(&a) == 0 && pending_count() == 0, "start during a session wrote something");
    notification_added(&a, 30, 9);
    uint32_t id = fetch_message(&a, 9);
    struct op *w = first_pending_write_to(CP_VALUE);
    CHECK(w != NULL, "no Control Point write after starting again");
    if (w) finish(w, 0);
    uint16_t n = message_response(response, 9, 10);
    notify(&a, 30, DS_VALUE, response, n);
    CHECK(done_of(id) && done_of(id)->status == ANCS_OK, "the request ended %d", done_of(id) ? (int)done_of(id)->status : 999);
    uint64_t before = ancs_nimble_now_ms(&a);
    advance(5000);
    CHECK(ancs_nimble_now_ms(&a) - before == 5000, "the adapter's clock moved %llu ms in 5 s",
          (unsigned long long)(ancs_nimble_now_ms(&a) - before));
    release(&a);
    CHECK(ancs_nimble_start(&a) == BLE_HS_EINVAL, "start on storage deinitialised");
}

/* A deadline close to an hour away on a fast tick (4 096 Hz): the timer
 * fires once, at the deadline. FreeRTOS's conversion of an hour to ticks
 * (ms * configTICK_RATE_HZ / 1000, in 32 bits) wraps above 1 193 Hz; the
 * adapter fired early, and again, before the deadline. */
static void
test_fast_tick(void)
{
    static ancs_nimble a;

    reset_fake("a deadline 50 minutes away at 4 096 Hz", 1000);
    fake_hz = 4096;
    lazy.retry_interval_s = 3000;
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    connect_link(&a, 33, 185);
    for (struct op *o; (o = first_pending());) {
        bool enable = o->kind == OP_WRITE && (o->handle == NS_CCCD || o->handle == DS_CCCD) && o->value[0];
        finish(o, enable ? BLE_HS_ATT_ERR(BLE_ATT_ERR_INSUFFICIENT_AUTHOR) : 0);
    }
    int fires = callout_fires;
    advance(2999u * 4096);
    CHECK(pending_count() == 0, "subscribed again before the retry interval");
    CHECK(callout_fires == fires, "the timer fired %d times before the deadline", callout_fires - fires);
    advance(2u * 4096);
    CHECK(callout_fires - fires == 1, "the timer fired %d times for one deadline", callout_fires - fires);
    struct op *o = first_pending();
    CHECK(o && o->handle == DS_CCCD && o->value[0] == 1, "not subscribed again at the deadline");
    release(&a);
}

/* A button press on a UI task: the request is posted to the host task's
 * queue and runs there, never on the UI task; the debug check of the calling
 * task (ANCS_NIMBLE_CHECK_TASK) catches a direct call from the UI task. */
static void
on_posted_done(ancs_nimble_request *r)
{
    *(int *)r->context += 1;
    CHECK(fake_task == &host_task, "a posted request's done ran off the host task");
}

static void
test_post_from_another_task(void)
{
    static ancs_nimble a;
    static ancs_nimble_request fetch, action, stop;
    uint8_t response[64];
    int done = 0;

    reset_fake("requests posted from another task", 1000);
    wrong_task_calls = 0;
    fake_task = &host_task;
    ancs_nimble_init(&a, &lazy, on_event, NULL);
    session(&a, 34, 185);
    notification_added(&a, 34, 11);

    fake_task = &ui_task;   /* the UI task */
    fetch = (ancs_nimble_request){ .kind = ANCS_NIMBLE_FETCH_ATTRIBUTES, .uid = 11, .attributes = message_600,
                                   .attribute_count = 1, .done = on_posted_done, .context = &done };
    action = (ancs_nimble_request){ .kind = ANCS_NIMBLE_PERFORM_ACTION, .uid = 11, .action = ANCS_ACTION_NEGATIVE,
                                    .done = on_posted_done, .context = &done };
    CHECK(ancs_nimble_post(&a, &fetch) == 0 && ancs_nimble_post(&a, &action) == 0, "posted");
    CHECK(ancs_nimble_post(&a, NULL) == BLE_HS_EINVAL, "a NULL request posted");
    CHECK(pending_count() == 0 && done == 0, "the request ran on the task that posted it");
    CHECK(wrong_task_calls == 0, "posting was taken for a call from the wrong task");
    fake_task = &host_task;
    run_queue();
    CHECK(done == 2, "%d requests ran on the host task", done);
    CHECK(fetch.status == ANCS_OK && action.status == ANCS_OK && fetch.request_id != action.request_id,
          "statuses %d %d", (int)fetch.status, (int)action.status);
    struct op *w = first_pending_write_to(CP_VALUE);
    if (w) finish(w, 0);
    uint16_t n = message_response(response, 11, 10);
    notify(&a, 34, DS_VALUE, response, n);
    CHECK(done_of(fetch.request_id) && done_of(fetch.request_id)->status == ANCS_OK, "the posted fetch did not end");
    w = first_pending_write_to(CP_VALUE);
    if (w) finish(w, 0);
    CHECK(done_of(action.request_id) && done_of(action.request_id)->status == ANCS_OK, "the posted action did not end");

    /* A direct call from the UI task: the debug check tells, before anything is touched. */
    fake_task = &ui_task;
    uint32_t id;
    ancs_nimble_fetch_attributes(&a, 11, message_600, 1, &id);
    fake_task = &host_task;
    CHECK(wrong_task_calls == 1, "a call from the UI task not caught (%d)", wrong_task_calls);
    pump();
    w = first_pending_write_to(CP_VALUE);
    if (w) finish(w, 0);
    notify(&a, 34, DS_VALUE, response, n);

    /* Stop, posted; a request still queued when the adapter is deinitialised ends with ANCS_ERR_STORAGE. */
    stop = (ancs_nimble_request){ .kind = ANCS_NIMBLE_STOP, .done = on_posted_done, .context = &done };
    ancs_nimble_post(&a, &stop);
    run_queue();
    pump();
    CHECK(stop.status == ANCS_OK && !ancs_consumer_in_session(ancs_nimble_consumer(&a)), "the posted stop did not stop");
    ancs_nimble_post(&a, &fetch);
    release(&a);
    run_queue();
    CHECK(fetch.status == ANCS_ERR_STORAGE && done == 4, "a request run after deinit: status %d", (int)fetch.status);
}

/* ---- power: what an hour costs the radio and the CPU ---- */
struct power { int wakeups, cccd_writes, cp_writes, security_requests, rearms; };

/* The phone for `seconds`, one second at a time: CCCD writes taken (or
 * refused with `refusal`, or with Insufficient Authentication while the
 * link is plain), Control Point writes answered 0xA2 (a working phone's
 * answer to the probe), every Security Request declined when `decline`.
 * Returns what the adapter did meanwhile. */
static struct power
run_phone(ancs_nimble *a, uint16_t handle, uint32_t seconds, int refusal, bool decline)
{
    struct power p = { 0 };
    int fires = callout_fires, resets = callout_resets, asked = security_initiated, first = op_count;
    int requested = security_initiated;

    for (uint32_t second = 0; second < seconds; second++) {
        for (struct op *o; (o = first_pending());) {
            bool cccd_on = o->kind == OP_WRITE && (o->handle == NS_CCCD || o->handle == DS_CCCD) && o->value[0];
            if (o->handle == CP_VALUE) finish(o, BLE_HS_ATT_ERR(0xA2));
            else if (cccd_on && conn_of(handle) && conn_of(handle)->plain) finish(o, BLE_HS_ATT_ERR(BLE_ATT_ERR_INSUFFICIENT_AUTHEN));
            else if (cccd_on && refusal) finish(o, BLE_HS_ATT_ERR(refusal));
            else finish(o, 0);
        }
        if (decline && security_initiated > asked) {
            asked = security_initiated;
            encryption_changed(a, handle, BLE_HS_SM_US_ERR(BLE_SM_ERR_PASSKEY));   /* the person taps Cancel */
        }
        advance(1000);
    }
    for (int i = first; i < op_count; i++) {
        if (ops[i].handle == NS_CCCD || ops[i].handle == DS_CCCD) p.cccd_writes++;
        if (ops[i].handle == CP_VALUE) p.cp_writes++;
    }
    p.wakeups = callout_fires - fires;
    p.rearms = callout_resets - resets;
    p.security_requests = security_initiated - requested;
    return p;
}

static void
print_power(const char *what, struct power p)
{
    printf("  power: %-44s %4d wake-ups %4d CCCD writes %4d Control Point writes %3d Security Requests %5d timer re-arms\n",
           what, p.wakeups, p.cccd_writes, p.cp_writes, p.security_requests, p.rearms);
}

/* What an hour costs, in four cases (BENCHMARKS.md, "The NimBLE adapter's
 * hour"): healthy and idle; subscriptions refused for a day (the person
 * never allows notifications); pairing declined at every request; another
 * central busy beside the phone. Before: 239 wake-ups and 480 CCCD writes an
 * hour refused; 40 Security Requests in 5 minutes declined; a timer re-armed
 * per GAP event of any link (100 notifications on another link: 100). */
static void
test_power(void)
{
    static ancs_nimble a;
    ancs_consumer_config config;
    struct power p;

    reset_fake("power: an hour, four ways", 1000);
    ancs_consumer_config_default(&config);
    config.display_attributes = NULL;
    config.display_attribute_count = 0;
    config.display_app_names = false;
    ancs_nimble_init(&a, &config, on_event, NULL);
    session(&a, 50, 185);
    run_phone(&a, 50, 3600, 0, false);   /* the first hour: the session's first probe */
    p = run_phone(&a, 50, 3600, 0, false);
    print_power("healthy, idle (probe every 5 min)", p);
    CHECK(p.cp_writes == 12 && p.cccd_writes == 24, "%d probes, %d CCCD writes in a healthy idle hour", p.cp_writes, p.cccd_writes);
    CHECK(p.wakeups <= 13, "%d wake-ups in a healthy idle hour", p.wakeups);
    release(&a);

    reset_fake("power: subscriptions refused for a day", 1000);
    ancs_nimble_init(&a, &config, on_event, NULL);
    connect_link(&a, 51, 185);
    run_phone(&a, 51, 23 * 3600, BLE_ATT_ERR_INSUFFICIENT_AUTHOR, false);
    p = run_phone(&a, 51, 3600, BLE_ATT_ERR_INSUFFICIENT_AUTHOR, false);
    print_power("subscriptions refused (0x08), the 24th hour", p);
    CHECK(p.cccd_writes <= 45 && p.wakeups <= 16, "%d CCCD writes, %d wake-ups an hour refused", p.cccd_writes, p.wakeups);
    release(&a);

    reset_fake("power: pairing declined at every request", 1000);
    security_initiated = 0;
    ancs_nimble_init(&a, &config, on_event, NULL);
    connect_as(&a, NULL, 52, 185, BLE_GAP_ROLE_SLAVE, true);
    p = run_phone(&a, 52, 300, 0, true);
    CHECK(p.security_requests <= 2, "%d Security Requests in 5 minutes of declined pairing", p.security_requests);
    struct power rest = run_phone(&a, 52, 3300, 0, true);
    p.wakeups += rest.wakeups; p.cccd_writes += rest.cccd_writes; p.cp_writes += rest.cp_writes;
    p.security_requests += rest.security_requests; p.rearms += rest.rearms;
    print_power("pairing declined, the first hour", p);
    CHECK(p.security_requests <= 2, "%d Security Requests in an hour on one link", p.security_requests);
    /* The next hour the phone reconnects three times, declining again: two on a link, four in the hour. */
    int before = security_initiated;
    drop_link(&a, 52);
    for (uint16_t link = 60; link < 63; link++) {
        connect_as(&a, NULL, link, 185, BLE_GAP_ROLE_SLAVE, true);
        p = run_phone(&a, link, 60, 0, true);
        drop_link(&a, link);
    }
    CHECK(security_initiated - before == 4, "%d Security Requests within an hour over three links", security_initiated - before);
    connect_as(&a, NULL, 52, 185, BLE_GAP_ROLE_SLAVE, true);
    bool told = false;
    for (int i = 0; i < event_count; i++)
        told |= events[i].type == ANCS_EVENT_HEALTH && events[i].health == ANCS_HEALTH_WAITING_FOR_PERMISSION &&
                events[i].status == BLE_ATT_ERR_INSUFFICIENT_AUTHEN;
    CHECK(told, "not told waiting for permission (0x05) once pairing was no longer asked");
    /* The phone pairs by itself later: the next subscription goes through. */
    encryption_changed(&a, 52, 0);
    p = run_phone(&a, 52, 300, 0, false);
    CHECK(ancs_consumer_in_session(ancs_nimble_consumer(&a)) && events[event_count - 1].health == ANCS_HEALTH_HEALTHY,
          "no healthy session once the phone paired");
    release(&a);

    reset_fake("power: another central busy", 1000);
    ancs_nimble_init(&a, &config, on_event, NULL);
    session(&a, 53, 23);
    connect_as(&a, NULL, 54, 185, BLE_GAP_ROLE_MASTER, false);   /* a sensor this accessory reads */
    int resets = callout_resets;
    for (int i = 0; i < 100; i++) { uint8_t value[4] = { (uint8_t)i }; notify(&a, 54, 0x0042, value, sizeof value); }
    int other = callout_resets - resets;
    notification_added(&a, 53, 7);
    uint32_t id = fetch_message(&a, 7);
    struct op *w = first_pending_write_to(CP_VALUE);
    if (w) finish(w, 0);
    uint8_t response[620];
    uint16_t n = message_response(response, 7, 600);
    resets = callout_resets;
    for (uint16_t at = 0; at < n; at += 20) notify(&a, 53, DS_VALUE, response + at, (uint16_t)(n - at < 20 ? n - at : 20));
    int message = callout_resets - resets;
    CHECK(done_of(id) && done_of(id)->status == ANCS_OK, "the 600-byte Message not received");
    printf("  power: timer re-arms: %d for 100 notifications on another link, %d for a 600-byte Message in %d notifications at MTU 23\n",
           other, message, (n + 19) / 20);
    CHECK(other == 0, "%d timer re-arms for another link's notifications", other);
    CHECK(message <= 2, "%d timer re-arms for one response", message);
    release(&a);
}

/* A NULL configuration: ancs.h's microcontroller preset, whose model keeps
 * 16 notifications (a 17th drops the oldest); or the defaults (512) when
 * built with ANCS_NIMBLE_NULL_CONFIG_DEFAULTS (the ESP-IDF component's
 * Kconfig; run.sh's second build). */
static void
test_null_config(void)
{
    static ancs_nimble a;

    reset_fake("a NULL configuration", 1000);
    CHECK(ancs_nimble_init(&a, NULL, on_event, NULL) == 0, "init with NULL");
    session(&a, 55, 185);
    for (uint32_t uid = 1; uid <= 20; uid++) notification_added(&a, 55, uid);
    int removed = count_events(ANCS_EVENT_REMOVED);
    CHECK(removed == (ANCS_NIMBLE_NULL_CONFIG_DEFAULTS ? 0 : 4), "%d of 20 notifications dropped by the model's bound", removed);
    release(&a);
}

/* Security started by the adapter (default), or left to the application. */
static void
test_security_by_application(void)
{
    static ancs_nimble a;

    for (int by_application = 0; by_application < 2; by_application++) {
        reset_fake(by_application ? "security left to the application" : "security started by the adapter", 1000);
        ancs_nimble_init(&a, &lazy, on_event, NULL);
        a.security_by_application = by_application;
        security_initiated = 0;
        connect_as(&a, NULL, 19, 185, BLE_GAP_ROLE_SLAVE, true);
        struct op *o = pump_until(is_ds_subscription);
        if (o) finish(o, BLE_HS_ATT_ERR(BLE_ATT_ERR_INSUFFICIENT_ENC));
        CHECK(security_initiated == !by_application, "security initiated %d times", security_initiated);
        encryption_changed(&a, 19, 0);   /* by the adapter's request, or by the application */
        o = first_pending();
        CHECK(o && is_ds_subscription(o), "Data Source not written again once encrypted");
        pump();
        CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 1, "no session");
        release(&a);
    }
}

/* The timer's events go to the queue given at init (a Mynewt task's, say),
 * or to the porting layer's default one for NULL (ancs_nimble_init). */
static void
test_event_queue(void)
{
    static ancs_nimble a;
    static struct ble_npl_eventq host_queue;

    reset_fake("the timer on the queue given at init", 1000);
    CHECK(ancs_nimble_init_on_queue(&a, &lazy, on_event, NULL, &host_queue) == 0, "init on a queue");
    struct fake_callout *c = callout_of(&a.timer);
    CHECK(c && c->evq == &host_queue, "the timer is not on the queue given");
    connect_as(&a, NULL, 20, 185, BLE_GAP_ROLE_SLAVE, true);
    pump();
    CHECK(count_events(ANCS_EVENT_SESSION_STARTED) == 1, "no session");
    release(&a);
    CHECK(ancs_nimble_init(&a, &lazy, on_event, NULL) == 0, "init on the default queue");
    c = callout_of(&a.timer);
    CHECK(c && c->evq == &default_queue, "ancs_nimble_init's timer is not on the default queue");
    CHECK(c && c->inits == 2, "the timer was not initialised again for the other queue (%d inits)", c ? c->inits : 0);
    release(&a);
}

/* Each test, then the rule every one keeps: one ATT request at a time per link. */
/* ======================================================================
 * The media part (../ancs_nimble_media.c): AMS and CTS beside ANCS
 * ====================================================================== */

struct media_recorded {
    bool cts;
    ancs_ams_event ams;
    ancs_cts_event time;
    uint8_t value[600];
    size_t length;
};
static struct media_recorded media_events[128];
static int media_event_count;
static const char long_title[] = "\xC3\x87" "a plane pour moi \xE2\x80\x94 \xC3\x89milie S\xC3\xB8rensen live \xC3\xA0 Z\xC3\xBCrich, \xC3\xA9t\xC3\xA9 2026";

static void
on_ams(void *context, const ancs_ams_event *e)
{
    (void)context;
    if (verbose) printf("    ams event %d status %d entity %u attribute %u%s length %zu\n", (int)e->type, (int)e->status,
                        e->entity, e->attribute, e->truncated ? " truncated" : "", e->length);
    if (media_event_count == 128) return;
    struct media_recorded *r = &media_events[media_event_count++];
    memset(r, 0, sizeof *r);
    r->ams = *e;
    r->ams.value = NULL;
    r->length = e->length < sizeof r->value ? e->length : sizeof r->value;
    if (r->length) memcpy(r->value, e->value, r->length);
}

static void
on_cts(void *context, const ancs_cts_event *e)
{
    (void)context;
    if (verbose) printf("    cts event %d status %d\n", (int)e->type, (int)e->status);
    if (media_event_count == 128) return;
    struct media_recorded *r = &media_events[media_event_count++];
    memset(r, 0, sizeof *r);
    r->cts = true;
    r->time = *e;
}

static int
ams_count(ancs_ams_event_type type)
{
    int n = 0;
    for (int i = 0; i < media_event_count; i++) n += !media_events[i].cts && media_events[i].ams.type == type;
    return n;
}

static const struct media_recorded *
ams_last(ancs_ams_event_type type)
{
    for (int i = media_event_count - 1; i >= 0; i--)
        if (!media_events[i].cts && media_events[i].ams.type == type) return &media_events[i];
    return NULL;
}

static const struct media_recorded *
command_done(uint32_t id)
{
    for (int i = 0; i < media_event_count; i++)
        if (!media_events[i].cts && media_events[i].ams.type == ANCS_AMS_EVENT_COMMAND_DONE && media_events[i].ams.request_id == id)
            return &media_events[i];
    return NULL;
}

static const struct media_recorded *
cts_last(ancs_cts_event_type type)
{
    for (int i = media_event_count - 1; i >= 0; i--)
        if (media_events[i].cts && media_events[i].time.type == type) return &media_events[i];
    return NULL;
}

static int
cts_count(ancs_cts_event_type type)
{
    int n = 0;
    for (int i = 0; i < media_event_count; i++) n += media_events[i].cts && media_events[i].time.type == type;
    return n;
}

/* Writes (answered or not) to `handle`; with a first byte `first` unless it is -1. */
static int
writes_to(uint16_t handle, int first)
{
    int n = 0;
    for (int i = 0; i < op_count; i++)
        n += (ops[i].kind == OP_WRITE || ops[i].kind == OP_WRITE_LONG) && ops[i].handle == handle &&
             (first < 0 || (ops[i].length && ops[i].value[0] == first));
    return n;
}

/* The index of the first procedure of this kind on `handle` (a discovery: of `uuid`), or -1. */
static int
first_op(enum op_kind kind, uint16_t handle, const ble_uuid_t *uuid)
{
    for (int i = 0; i < op_count; i++)
        if (ops[i].kind == kind && (uuid ? ble_uuid_cmp(&ops[i].uuid.u, uuid) == 0 : ops[i].handle == handle)) return i;
    return -1;
}

static int
pending_of(enum op_kind kind)
{
    int n = 0;
    for (int i = 0; i < op_count; i++) n += !ops[i].done && ops[i].kind == kind;
    return n;
}

/* The adapter and its media part, on a link with a session; AMS ready, the time read. */
static void
media_session(ancs_nimble *a, ancs_nimble_media *m, uint16_t handle, uint16_t mtu)
{
    media_event_count = 0;
    CHECK(ancs_nimble_init(a, &lazy, on_event, NULL) == 0, "init");
    CHECK(ancs_nimble_media_init(m, a, NULL, on_ams, on_cts, NULL) == 0, "media init");
    session(a, handle, mtu);
    CHECK(ams_count(ANCS_AMS_EVENT_READY) == 1, "AMS not ready (%d)", ams_count(ANCS_AMS_EVENT_READY));
}

/* The end of a media test: the part freed, then the adapter (release). */
static void
media_release(ancs_nimble *a, ancs_nimble_media *m)
{
    pump();
    CHECK(ancs_nimble_media_deinit(m) == 0, "media deinit at the end of the test");
    release(a);
}

static void
entity_update(ancs_nimble *a, uint16_t handle, uint8_t entity, uint8_t attribute, uint8_t flags, const char *value, size_t length)
{
    uint8_t bytes[600] = { entity, attribute, flags };
    memcpy(bytes + 3, value, length);
    notify(a, handle, EU_VALUE, bytes, (uint16_t)(3 + length));
}

/* AMS and CTS found after ANCS, on the bearer ANCS leaves free; the clients run. */
static void
test_media_session(void)
{
    static ancs_nimble a;
    static ancs_nimble_media m;
    ancs_current_time now_time;

    reset_fake("media: AMS and CTS beside ANCS", 1000);
    media_session(&a, &m, 1, 23);
    int ams_discovery = first_op(OP_DISC_SVC, 0, &ams_uuid.u), cts_discovery = first_op(OP_DISC_SVC, 0, BLE_UUID16_DECLARE(0x1805));
    CHECK(ams_discovery > first_op(OP_WRITE, NS_CCCD, NULL) && ams_discovery > first_op(OP_WRITE, DS_CCCD, NULL),
          "AMS looked for (procedure %d) before ANCS was subscribed", ams_discovery);
    CHECK(cts_discovery > ams_discovery, "CTS looked for at %d, AMS at %d", cts_discovery, ams_discovery);
    CHECK(writes_to(RC_CCCD, 1) == 1 && writes_to(EU_CCCD, 1) == 1 && writes_to(CT_CCCD, 1) == 1,
          "CCCD writes: Remote Command %d, Entity Update %d, Current Time %d", writes_to(RC_CCCD, 1), writes_to(EU_CCCD, 1),
          writes_to(CT_CCCD, 1));
    CHECK(writes_to(EU_VALUE, ANCS_AMS_ENTITY_PLAYER) == 1 && writes_to(EU_VALUE, ANCS_AMS_ENTITY_QUEUE) == 1 &&
          writes_to(EU_VALUE, ANCS_AMS_ENTITY_TRACK) == 1, "registrations: %d", writes_to(EU_VALUE, -1));
    const struct media_recorded *t = cts_last(ANCS_CTS_EVENT_CURRENT_TIME), *zone = cts_last(ANCS_CTS_EVENT_LOCAL_TIME);
    CHECK(t && t->time.time.year == 2026 && t->time.time.month == 11 && t->time.time.day == 28 && t->time.time.hours == 14 &&
          t->time.time.minutes == 53 && t->time.time.seconds == 7, "the phone's time not told");
    CHECK(zone && zone->time.has_utc_offset && zone->time.utc_offset_minutes == 60, "the zone: %d",
          zone ? zone->time.utc_offset_minutes : -1);
    advance(2000);
    CHECK(ancs_nimble_phone_time(&m, &now_time) && now_time.seconds == 9, "the phone's time 2 s later: %u s", now_time.seconds);
    CHECK(pending_count() == 0, "%d procedures left", pending_count());

    /* ANCS goes on beside it. */
    notification_added(&a, 1, 7);
    uint32_t id = fetch_message(&a, 7);
    pump();
    uint8_t response[64];
    uint16_t n = message_response(response, 7, 20);
    finish(first_pending_write_to(CP_VALUE), 0);
    notify(&a, 1, DS_VALUE, response, n);
    CHECK(done_of(id) && done_of(id)->status == ANCS_OK, "the fetch beside AMS ended with %d", done_of(id) ? (int)done_of(id)->status : 999);
    media_release(&a, &m);
}

/* A title cut by the phone is read whole (Entity Attribute, a long read at MTU 23, cut inside a UTF-8 sequence). */
static void
test_media_truncated_title(void)
{
    static ancs_nimble a;
    static ancs_nimble_media m;
    const uint8_t *text = NULL;
    size_t length = 0, whole = sizeof long_title - 1;

    reset_fake("media: a title cut, read whole", 1000);
    memcpy(ea_read_value, long_title, whole);
    ea_read_length = (uint16_t)whole;
    media_session(&a, &m, 1, 23);
    read_requests = 0;
    entity_update(&a, 1, ANCS_AMS_ENTITY_TRACK, ANCS_AMS_TRACK_TITLE, 1, long_title, 18);   /* cut inside "—" */
    CHECK(writes_to(EA_VALUE, ANCS_AMS_ENTITY_TRACK) == 1, "Entity Attribute not selected");
    pump();
    const struct media_recorded *u = ams_last(ANCS_AMS_EVENT_UPDATED);
    CHECK(u && !u->ams.truncated && u->length == whole && memcmp(u->value, long_title, whole) == 0,
          "the whole title not told (%zu bytes)", u ? u->length : 0);
    CHECK(read_requests == (int)(whole / 22 + 1), "%d Read and Read Blob requests for %zu bytes at MTU 23", read_requests, whole);
    CHECK(ancs_ams_text(ancs_nimble_ams(&m), ANCS_AMS_ENTITY_TRACK, ANCS_AMS_TRACK_TITLE, &text, &length) && length == whole &&
          memcmp(text, long_title, whole) == 0, "ancs_ams_text: %zu bytes", length);

    /* A value longer than ATT allows (600 bytes) is kept to 512, the read ended there. */
    memset(ea_read_value, 'x', 600);
    ea_read_length = 600;
    entity_update(&a, 1, ANCS_AMS_ENTITY_TRACK, ANCS_AMS_TRACK_ALBUM, 1, "xxxxxxxxxxxxxx", 14);
    pump();
    u = ams_last(ANCS_AMS_EVENT_UPDATED);
    CHECK(u && u->ams.attribute == ANCS_AMS_TRACK_ALBUM && !u->ams.truncated && u->length == 512, "the long album: %zu bytes",
          u ? u->length : 0);
    CHECK(pending_count() == 0, "%d procedures left after the read was ended", pending_count());
    media_release(&a, &m);
}

/* ATT allows one request at a time: ANCS's writes and the media part's operations wait for each other, ANCS first. */
static void
test_media_shares_bearer(void)
{
    static ancs_nimble a;
    static ancs_nimble_media m;
    uint8_t response[64];
    uint32_t command = 0;

    reset_fake("media: one request at a time with ANCS", 1000);
    memcpy(ea_read_value, long_title, sizeof long_title - 1);
    ea_read_length = sizeof long_title - 1;
    media_session(&a, &m, 1, 23);
    notification_added(&a, 1, 7);
    uint32_t fetch = fetch_message(&a, 7);
    CHECK(pending_writes_to(CP_VALUE) == 1, "the fetch not written");
    entity_update(&a, 1, ANCS_AMS_ENTITY_TRACK, ANCS_AMS_TRACK_TITLE, 1, long_title, 17);
    CHECK(ancs_nimble_ams_perform(&m, ANCS_AMS_NEXT_TRACK, &command) == ANCS_OK, "next track refused");
    CHECK(pending_count() == 1, "%d procedures on the air with the Control Point write", pending_count());

    finish(first_pending_write_to(CP_VALUE), 0);   /* the bearer free: the selection goes */
    CHECK(pending_writes_to(EA_VALUE) == 1 && pending_count() == 1, "after the Control Point write: %d on the air, %d to Entity Attribute",
          pending_count(), pending_writes_to(EA_VALUE));
    uint16_t n = message_response(response, 7, 20);
    notify(&a, 1, DS_VALUE, response, n);
    CHECK(done_of(fetch) && done_of(fetch)->status == ANCS_OK, "the fetch ended with %d", done_of(fetch) ? (int)done_of(fetch)->status : 999);

    uint32_t action = 0;
    ancs_nimble_perform_action(&a, 7, ANCS_ACTION_NEGATIVE, &action);   /* held behind the selection */
    CHECK(pending_writes_to(CP_VALUE) == 0 && pending_count() == 1, "the action written over the selection");
    finish(first_pending_write_to(EA_VALUE), 0);   /* ANCS first: the held action goes before the read */
    CHECK(pending_writes_to(CP_VALUE) == 1 && pending_of(OP_READ_LONG) == 0, "after the selection: action %d, read %d",
          pending_writes_to(CP_VALUE), pending_of(OP_READ_LONG));
    finish(first_pending_write_to(CP_VALUE), 0);
    CHECK(done_of(action) && done_of(action)->status == ANCS_OK, "the action ended with %d", done_of(action) ? (int)done_of(action)->status : 999);
    CHECK(pending_of(OP_READ_LONG) == 1, "the read did not follow the action");
    pump();
    CHECK(command_done(command) && command_done(command)->ams.status == ANCS_OK, "next track ended with %d",
          command_done(command) ? (int)command_done(command)->ams.status : 999);
    CHECK(writes_to(RC_VALUE, ANCS_AMS_NEXT_TRACK) == 1, "next track written %d times", writes_to(RC_VALUE, ANCS_AMS_NEXT_TRACK));
    const struct media_recorded *u = ams_last(ANCS_AMS_EVENT_UPDATED);
    CHECK(u && u->length == sizeof long_title - 1, "the title read whole: %zu bytes", u ? u->length : 0);
    media_release(&a, &m);
}

/* The link drops with a command on the air and one waiting: both end, nothing is started on the dying link; the next link starts over. */
static void
test_media_link_drop(void)
{
    static ancs_nimble a;
    static ancs_nimble_media m;
    uint32_t on_air = 0, waiting = 0;

    reset_fake("media: the link drops mid-command", 1000);
    media_session(&a, &m, 1, 23);
    CHECK(ancs_nimble_ams_perform(&m, ANCS_AMS_PLAY, &on_air) == ANCS_OK, "play refused");
    CHECK(ancs_nimble_ams_perform(&m, ANCS_AMS_PAUSE, &waiting) == ANCS_OK, "pause refused");
    CHECK(pending_writes_to(RC_VALUE) == 1, "%d commands on the air", pending_writes_to(RC_VALUE));
    int calls = drop_link(&a, 1);
    CHECK(calls == 0, "%d GATT procedures started after the link broke", calls);
    CHECK(command_done(on_air) && command_done(on_air)->ams.status == ANCS_ERR_SESSION_ENDED, "the command on the air ended with %d",
          command_done(on_air) ? (int)command_done(on_air)->ams.status : 999);
    CHECK(command_done(waiting) && command_done(waiting)->ams.status == ANCS_ERR_SESSION_ENDED, "the waiting command ended with %d",
          command_done(waiting) ? (int)command_done(waiting)->ams.status : 999);
    CHECK(ams_last(ANCS_AMS_EVENT_ENDED) && ams_last(ANCS_AMS_EVENT_ENDED)->ams.end == ANCS_AMS_END_LINK_DOWN, "AMS not ended with the link");
    int times = cts_count(ANCS_CTS_EVENT_CURRENT_TIME);
    session(&a, 1, 23);
    CHECK(ams_count(ANCS_AMS_EVENT_READY) == 2, "AMS not ready on the next link");
    CHECK(cts_count(ANCS_CTS_EVENT_CURRENT_TIME) == times + 1, "the time not read on the next link");

    /* NimBLE failed a procedure with BLE_HS_ENOTCONN: the link is going. A
     * command asked then is not written, and ends with the link, not as a
     * transport failure. */
    notification_added(&a, 1, 7);
    fetch_message(&a, 7);
    struct op *fetch = first_pending_write_to(CP_VALUE);
    finish(fetch, BLE_HS_ENOTCONN);
    calls = gattc_calls;
    uint32_t late = 0;
    CHECK(ancs_nimble_ams_perform(&m, ANCS_AMS_PAUSE, &late) == ANCS_OK, "pause refused");
    advance(1000);
    CHECK(gattc_calls == calls, "%d GATT procedures started on the going link", gattc_calls - calls);
    CHECK(!command_done(late), "the command ended before the link did (status %d)", command_done(late) ? (int)command_done(late)->ams.status : 0);
    drop_link(&a, 1);
    CHECK(command_done(late) && command_done(late)->ams.status == ANCS_ERR_SESSION_ENDED, "the command asked as the link went ended with %d",
          command_done(late) ? (int)command_done(late)->ams.status : 999);
    session(&a, 1, 23);
    CHECK(ams_count(ANCS_AMS_EVENT_READY) == 3, "AMS not ready on the third link");
    media_release(&a, &m);
}

/* Service Changed over AMS: its session ends and starts again once it is found; ANCS's session and CTS go on. */
static void
test_media_service_changed(void)
{
    static ancs_nimble a;
    static ancs_nimble_media m;
    const uint8_t over_ams[4] = { AMS_START, 0, AMS_END, 0 };

    reset_fake("media: Service Changed over AMS", 1000);
    media_session(&a, &m, 1, 23);
    int times = cts_count(ANCS_CTS_EVENT_CURRENT_TIME);
    notify(&a, 1, SC_VALUE, over_ams, sizeof over_ams);
    CHECK(ams_last(ANCS_AMS_EVENT_ENDED) && ams_last(ANCS_AMS_EVENT_ENDED)->ams.end == ANCS_AMS_END_SERVICE_UNPUBLISHED,
          "AMS's session not ended as unpublished");
    pump();
    CHECK(ams_count(ANCS_AMS_EVENT_READY) == 2, "AMS not ready again");
    ams_hidden = true;   /* removed */
    notify(&a, 1, SC_VALUE, over_ams, sizeof over_ams);
    pump();
    CHECK(ams_count(ANCS_AMS_EVENT_ENDED) == 2 && ams_count(ANCS_AMS_EVENT_READY) == 2, "AMS removed: ended %d, ready %d",
          ams_count(ANCS_AMS_EVENT_ENDED), ams_count(ANCS_AMS_EVENT_READY));
    uint32_t id = 0;
    CHECK(ancs_nimble_ams_perform(&m, ANCS_AMS_PLAY, &id) == ANCS_ERR_AMS_NOT_READY, "a command without AMS not refused");
    ams_hidden = false;   /* back */
    notify(&a, 1, SC_VALUE, over_ams, sizeof over_ams);
    pump();
    CHECK(ams_count(ANCS_AMS_EVENT_READY) == 3, "AMS not ready once back");
    CHECK(count_events(ANCS_EVENT_SESSION_ENDED) == 0, "ANCS's session ended");
    CHECK(cts_count(ANCS_CTS_EVENT_CURRENT_TIME) == times, "CTS read again though Service Changed did not cover it");
    media_release(&a, &m);
}

/* An operation NimBLE refuses: tried again when out of buffers, else told failed from the timer, never inside the call. */
static void
test_media_refused(void)
{
    static ancs_nimble a;
    static ancs_nimble_media m;
    uint32_t id = 0;

    reset_fake("media: an operation refused", 1000);
    media_session(&a, &m, 1, 23);
    fail_rc = BLE_HS_ENOMEM;
    fail_count = 2;
    CHECK(ancs_nimble_ams_perform(&m, ANCS_AMS_NEXT_TRACK, &id) == ANCS_OK, "next track refused");
    CHECK(pending_writes_to(RC_VALUE) == 0, "written though NimBLE is out of buffers");
    advance(110);
    CHECK(pending_writes_to(RC_VALUE) == 0 && fail_count == 0, "not tried again after 100 ms (%d refusals left)", fail_count);
    advance(110);
    CHECK(pending_writes_to(RC_VALUE) == 1, "not written once NimBLE had buffers");
    pump();
    CHECK(command_done(id) && command_done(id)->ams.status == ANCS_OK, "the command ended with %d", command_done(id) ? (int)command_done(id)->ams.status : 999);

    fail_rc = BLE_HS_EUNKNOWN;
    fail_count = 1;
    CHECK(ancs_nimble_ams_perform(&m, ANCS_AMS_PLAY, &id) == ANCS_OK, "play refused");
    CHECK(!command_done(id), "the failure told inside the call");
    advance(2);
    CHECK(command_done(id) && command_done(id)->ams.status == ANCS_ERR_TRANSPORT, "the refused command ended with %d",
          command_done(id) ? (int)command_done(id)->ams.status : 999);
    CHECK(ancs_nimble_ams_perform(&m, ANCS_AMS_PLAY, &id) == ANCS_OK && pending_writes_to(RC_VALUE) == 1, "the next command not written");
    media_release(&a, &m);
}

/* On a plain link the services are found, the clients started once it is encrypted. */
static void
test_media_plain_link(void)
{
    static ancs_nimble a;
    static ancs_nimble_media m;

    reset_fake("media: started once encrypted", 1000);
    media_event_count = 0;
    CHECK(ancs_nimble_init(&a, &lazy, on_event, NULL) == 0, "init");
    CHECK(ancs_nimble_media_init(&m, &a, NULL, on_ams, on_cts, NULL) == 0, "media init");
    connect_as(&a, NULL, 1, 23, BLE_GAP_ROLE_SLAVE, true);
    pump();
    CHECK(first_op(OP_DISC_SVC, 0, &ams_uuid.u) >= 0, "AMS not looked for");
    CHECK(writes_to(EU_CCCD, -1) == 0 && pending_of(OP_READ) == 0 && ams_count(ANCS_AMS_EVENT_READY) == 0,
          "the clients started on a plain link");
    encryption_changed(&a, 1, 0);
    pump();
    CHECK(ams_count(ANCS_AMS_EVENT_READY) == 1 && cts_last(ANCS_CTS_EVENT_CURRENT_TIME), "not started once encrypted");
    media_release(&a, &m);
}

/* Deinit: refused while an operation is on the air; the adapter's deinit detaches the part, its commands ended. */
static void
test_media_deinit(void)
{
    static ancs_nimble a;
    static ancs_nimble_media m;
    uint32_t id = 0;

    reset_fake("media: deinit", 1000);
    media_session(&a, &m, 1, 23);
    ancs_nimble_ams_perform(&m, ANCS_AMS_PLAY, &id);
    CHECK(ancs_nimble_media_deinit(&m) == BLE_HS_EBUSY, "deinit with a write on the air not refused");
    finish(first_pending_write_to(RC_VALUE), 0);
    CHECK(ancs_nimble_media_deinit(&m) == 0, "deinit refused");
    CHECK(a.media == NULL, "still attached");
    release(&a);

    /* Stopped, then deinitialised: the notifications turned off on the phone first. */
    media_session(&a, &m, 1, 23);
    int writes = op_count;
    CHECK(ancs_nimble_media_stop(&m) == 0, "stop");
    CHECK(ancs_nimble_media_deinit(&m) == BLE_HS_EBUSY, "deinit with the stop's writes waiting not refused");
    pump();
    int off = 0;
    for (int i = writes; i < op_count; i++)
        off += ops[i].kind == OP_WRITE && (ops[i].handle == RC_CCCD || ops[i].handle == EU_CCCD || ops[i].handle == CT_CCCD) &&
               ops[i].value[0] == 0;
    CHECK(off == 3, "%d of Remote Command's, Entity Update's and Current Time's notifications turned off", off);
    CHECK(ams_last(ANCS_AMS_EVENT_ENDED) && ams_last(ANCS_AMS_EVENT_ENDED)->ams.end == ANCS_AMS_END_STOPPED, "AMS not ended as stopped");
    CHECK(ancs_nimble_media_deinit(&m) == 0, "deinit refused once they went");
    int before = op_count;
    entity_update(&a, 1, ANCS_AMS_ENTITY_TRACK, ANCS_AMS_TRACK_TITLE, 1, long_title, 17);
    CHECK(op_count == before, "a notification on AMS's handle acted on after deinit");
    release(&a);

    /* Attached again, the adapter deinitialised under it: detached, its commands ended. */
    media_session(&a, &m, 1, 23);
    ancs_nimble_ams_perform(&m, ANCS_AMS_PLAY, &id);
    drop_link(&a, 1);
    CHECK(command_done(id) && command_done(id)->ams.status == ANCS_ERR_SESSION_ENDED, "the command on the air ended with %d",
          command_done(id) ? (int)command_done(id)->ams.status : 999);
    CHECK(ancs_nimble_deinit(&a) == 0, "adapter deinit");
    CHECK(m.adapter == NULL, "the part not detached");
    CHECK(ancs_nimble_ams_perform(&m, ANCS_AMS_PLAY, &id) == ANCS_ERR_AMS_NOT_READY, "a command after the adapter went");
    CHECK(ancs_nimble_media_deinit(&m) == 0, "media deinit after the adapter's");
}

/* A command posted from another task; the part detached while it waited: refused. */
static void
test_media_posted(void)
{
    static ancs_nimble a;
    static ancs_nimble_media m;
    static ancs_nimble_request r, late, wrong;

    reset_fake("media: a posted command", 1000);
    media_session(&a, &m, 1, 23);
    r.kind = ANCS_NIMBLE_AMS_PERFORM;
    r.action = ANCS_AMS_NEXT_TRACK;
    CHECK(ancs_nimble_media_post(&m, &r) == 0, "post");
    CHECK(pending_writes_to(RC_VALUE) == 0, "run before the host task took it");
    run_queue();
    CHECK(r.status == ANCS_OK && pending_writes_to(RC_VALUE) == 1, "the posted command: %d, %d written", (int)r.status,
          pending_writes_to(RC_VALUE));
    pump();
    CHECK(command_done(r.request_id) && command_done(r.request_id)->ams.status == ANCS_OK, "the posted command not done");
    wrong.kind = ANCS_NIMBLE_AMS_PERFORM;
    ancs_nimble_post(&a, &wrong);   /* the adapter's post knows nothing of the media part */
    run_queue();
    CHECK(wrong.status == ANCS_ERR_INVALID_ARGUMENT, "the adapter's post took a media command: %d", (int)wrong.status);
    late.kind = ANCS_NIMBLE_AMS_PERFORM;
    late.action = ANCS_AMS_PLAY;
    CHECK(ancs_nimble_media_post(&m, &late) == 0, "post");
    CHECK(ancs_nimble_media_deinit(&m) == 0, "media deinit");
    run_queue();
    CHECK(late.status == ANCS_ERR_AMS_NOT_READY, "a command queued before the part went: %d", (int)late.status);
    CHECK(ancs_nimble_media_post(&m, &late) == BLE_HS_EINVAL, "posted to a part deinitialised");
    release(&a);
}

#define RUN(test) do { test(); CHECK(overlaps == 0, "%d GATT procedures started while another was pending on the link", overlaps); } while (0)

int
main(int argc, char **argv)
{
    verbose = argc > 1 && !strcmp(argv[1], "-v");
    RUN(test_disconnect_with_write_pending);
    RUN(test_long_notification);
    RUN(test_clock_wraps);
    RUN(test_stop_serializes);
    RUN(test_resubscribe_order);
    RUN(test_refused_retried_by_engine);
    RUN(test_deinit);
    RUN(test_init_again);
    RUN(test_heap_adapters);
    RUN(test_write_refused);
    RUN(test_bond_lost);
    RUN(test_service_changed_during_discovery);
    RUN(test_discovery_failed_retried);
    RUN(test_ancs_after_encryption);
    RUN(test_service_changed_subscribed_after_encryption);
    RUN(test_data_source_refused_retried);
    RUN(test_phone_links_only);
    RUN(test_companion_first);
    RUN(test_abandoned_write);
    RUN(test_stop_inside_added);
    RUN(test_attach_and_restart);
    RUN(test_fast_tick);
    RUN(test_post_from_another_task);
    RUN(test_power);
    RUN(test_null_config);
    RUN(test_security_by_application);
    RUN(test_event_queue);
    RUN(test_media_session);
    RUN(test_media_truncated_title);
    RUN(test_media_shares_bearer);
    RUN(test_media_link_drop);
    RUN(test_media_service_changed);
    RUN(test_media_refused);
    RUN(test_media_plain_link);
    RUN(test_media_deinit);
    RUN(test_media_posted);
    printf("adapter: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
