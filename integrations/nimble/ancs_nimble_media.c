/*
 * ancs_nimble_media.c — AMS and CTS beside ANCS on the NimBLE adapter's link
 * (see ancs_nimble_media.h).
 */
#include <stddef.h>
#include <string.h>

#include "ancs_nimble_internal.h"
#include "ancs_nimble_media.h"

#if ANCS_NIMBLE_LOG
#define say(m, ...) ancs_nimble_say_((m)->adapter, __VA_ARGS__)
#else
#define say(m, ...) ((void)(m))
#endif

static const ble_uuid128_t ams_uuid = BLE_UUID128_INIT(ANCS_AMS_UUID_SERVICE_LE);
static const ble_uuid128_t remote_command_uuid = BLE_UUID128_INIT(ANCS_AMS_UUID_REMOTE_COMMAND_LE);
static const ble_uuid128_t entity_update_uuid = BLE_UUID128_INIT(ANCS_AMS_UUID_ENTITY_UPDATE_LE);
static const ble_uuid128_t entity_attribute_uuid = BLE_UUID128_INIT(ANCS_AMS_UUID_ENTITY_ATTRIBUTE_LE);
#define ATT_ATTRIBUTE_NOT_FOUND 0x0A
#define MEDIA_MAGIC 0x414D5342u   /* "AMSB": the storage holds an initialised media part */

/* An operation NimBLE refused for want of buffers (BLE_HS_ENOMEM) is tried again this much later, this many times. */
enum { ENOMEM_RETRY_MS = 100, ENOMEM_RETRIES = 10 };

enum { AMS = 1, CTS = 2 };   /* services, as bits */
enum kind { OP_CCCD, OP_WRITE, OP_READ_LONG, OP_READ };
enum target { T_REMOTE_COMMAND, T_ENTITY_UPDATE, T_ENTITY_ATTRIBUTE, T_CURRENT_TIME, T_LOCAL_TIME };
enum phase { P_IDLE, P_SERVICE, P_CHARACTERISTICS, P_DESCRIPTORS };

static ancs_nimble_media *from_adapter(ancs_nimble *a);
static const struct ancs_nimble_media_hooks hooks;

static uint8_t
used(const ancs_nimble_media *m)
{
    return (m->on_ams ? AMS : 0) | (m->on_cts ? CTS : 0);
}

static uint64_t
now(ancs_nimble_media *m)
{
    if (m->adapter) m->last_ms = ancs_nimble_now_ms(m->adapter);
    return m->last_ms;
}

static bool
connected(const ancs_nimble_media *m)
{
    return m->adapter && m->adapter->conn != BLE_HS_CONN_HANDLE_NONE && !m->adapter->link_lost;
}

/* ---- operations: queued, one on the air, results to the clients ---- */

/* The result of an operation to its client (a CCCD clear, or anything of CTS's CCCD, has none). */
static void
report(ancs_nimble_media *m, const struct ancs_nimble_media_op *op, ancs_status status, const uint8_t *value,
       size_t length)
{
    uint64_t t = now(m);

    switch (op->kind) {
    case OP_CCCD:
        if (op->enable && op->target != T_CURRENT_TIME)
            ancs_ams_subscription_result(&m->ams, (ancs_ams_characteristic)op->target, status, t);
        break;
    case OP_WRITE:
        ancs_ams_write_result(&m->ams, op->token, status, t);
        break;
    case OP_READ_LONG:
        ancs_ams_read_result(&m->ams, op->token, status, status == ANCS_OK ? value : NULL, status == ANCS_OK ? length : 0, t);
        break;
    default:
        ancs_cts_read_result(&m->cts, op->token, status, status == ANCS_OK ? value : NULL, status == ANCS_OK ? length : 0, t);
        break;
    }
}

/* An operation that could not go: its failure is told from the timer, never
 * from inside the client's callback (which would take the next operation at
 * once). One per client: each has one operation waiting for a result at a time. */
static void
fail_later(ancs_nimble_media *m, const struct ancs_nimble_media_op *op, ancs_status status)
{
    int client = op->target >= T_CURRENT_TIME;

    if (op->kind == OP_CCCD && (!op->enable || client == 1)) return;   /* nothing to tell */
    m->failed[client] = *op;
    m->failed_status[client] = status;
    m->failed_due[client] = true;
}

static void
enqueue(ancs_nimble_media *m, const struct ancs_nimble_media_op *op)
{
    if (m->adapter && m->adapter->link_lost) return;   /* the link is going: its loss ends it (ANCS_ERR_SESSION_ENDED) */
    if (!connected(m)) { fail_later(m, op, ANCS_ERR_TRANSPORT); return; }
    if (op->kind == OP_CCCD) {
        /* One CCCD write per characteristic waits: the last asked for wins (off then on again, say). */
        for (uint8_t i = 0; i < m->queued; i++)
            if (m->queue[i].kind == OP_CCCD && m->queue[i].target == op->target) { m->queue[i].enable = op->enable; return; }
    }
    if (m->queued == ANCS_NIMBLE_MEDIA_QUEUE) { fail_later(m, op, ANCS_ERR_TRANSPORT); return; }
    m->queue[m->queued++] = *op;
}

static uint16_t
value_handle(const ancs_nimble_media *m, uint8_t target)
{
    switch (target) {
    case T_REMOTE_COMMAND: return m->rc_value;
    case T_ENTITY_UPDATE: return m->eu_value;
    case T_ENTITY_ATTRIBUTE: return m->ea_value;
    case T_CURRENT_TIME: return m->ct_value;
    default: return m->lti_value;
    }
}

static int on_written(uint16_t conn, const struct ble_gatt_error *error, struct ble_gatt_attr *attr, void *arg);
static int on_read(uint16_t conn, const struct ble_gatt_error *error, struct ble_gatt_attr *attr, void *arg);

/* Starts `op` on the air: 0, or NimBLE's refusal (BLE_HS_ENOENT: the characteristic is not known). */
static int
issue(ancs_nimble_media *m, const struct ancs_nimble_media_op *op)
{
    ancs_nimble *a = m->adapter;
    void *arg = ancs_nimble_link_arg_(a);
    uint16_t handle;

    if (op->kind == OP_CCCD) {
        uint8_t value[2] = { op->enable ? 1 : 0, 0 };
        handle = op->target == T_REMOTE_COMMAND ? m->rc_cccd : op->target == T_ENTITY_UPDATE ? m->eu_cccd : m->ct_cccd;
        return handle ? ble_gattc_write_flat(a->conn, handle, value, sizeof value, on_written, arg) : BLE_HS_ENOENT;
    }
    handle = value_handle(m, op->target);
    if (!handle) return BLE_HS_ENOENT;
    switch (op->kind) {
    case OP_WRITE: return ble_gattc_write_flat(a->conn, handle, op->bytes, op->length, on_written, arg);
    case OP_READ_LONG: return ble_gattc_read_long(a->conn, handle, 0, on_read, arg);
    default: return ble_gattc_read(a->conn, handle, on_read, arg);
    }
}

static void discover(ancs_nimble_media *m);

/* The bearer is free (hook_settle): discovery first, then the queue's head. */
static void
pump(ancs_nimble_media *m)
{
    struct ancs_nimble_media_op op;
    int rc;

    if (m->in_flight || !connected(m)) return;
    if (m->wanted && !m->awaits_encryption && !m->discover_due) { discover(m); return; }
    if (!m->queued || m->head_due) return;
    op = m->queue[0];
    m->read_length = 0;
    m->read_cut = false;
    rc = issue(m, &op);
    if (rc == BLE_HS_ENOMEM && m->tries < ENOMEM_RETRIES) {
        m->tries++;
        m->head_due = true;
        m->head_at = now(m) + ENOMEM_RETRY_MS;
        return;
    }
    memmove(m->queue, m->queue + 1, --m->queued * sizeof m->queue[0]);
    m->tries = 0;
    if (rc != 0) {
        say(m, "media: an operation on 0x%04x not started (rc %d)", value_handle(m, op.target), rc);
        fail_later(m, &op, rc == BLE_HS_ENOENT ? ATT_ATTRIBUTE_NOT_FOUND : ANCS_ERR_TRANSPORT);
        return;
    }
    m->current = op;
    m->in_flight = true;
    m->adapter->writes_in_flight++;   /* the adapter's own writes wait for it (ATT: one request at a time) */
}

/* The media part an operation's callback is for, or NULL (a callback of an earlier link, or the link is going). */
static ancs_nimble_media *
media_of(void *arg, uint16_t conn, int status)
{
    ancs_nimble_media *m = from_adapter(ancs_nimble_link_of_(arg, conn, status));

    return m && m->in_flight ? m : NULL;
}

/* The operation on the air ended: its result told, then the bearer given on (the adapter's waiting work first). */
static void
ended(ancs_nimble_media *m, ancs_status status, const uint8_t *value, size_t length)
{
    struct ancs_nimble_media_op op = m->current;
    ancs_nimble *a = m->adapter;

    m->in_flight = false;
    report(m, &op, status, value, length);
    ancs_nimble_operation_ended_(a);
}

static int
on_written(uint16_t conn, const struct ble_gatt_error *error, struct ble_gatt_attr *attr, void *arg)
{
    ancs_nimble_media *m = media_of(arg, conn, error->status);

    (void)attr;
    if (m) ended(m, ancs_nimble_result_of_(error->status), NULL, 0);
    return 0;
}

/* A read's value, in pieces for a long read (Read, then Read Blob at each
 * offset, then BLE_HS_EDONE). Kept to ANCS_NIMBLE_MEDIA_VALUE_MAX bytes: a
 * longer value (over ATT's largest) ends the read there. */
static int
on_read(uint16_t conn, const struct ble_gatt_error *error, struct ble_gatt_attr *attr, void *arg)
{
    ancs_nimble_media *m = media_of(arg, conn, error->status);
    uint16_t length;

    if (!m) return 0;
    if (error->status == BLE_HS_EDONE) { ended(m, ANCS_OK, m->value, m->read_length); return 0; }
    if (error->status != 0 || !attr) { ended(m, ancs_nimble_result_of_(error->status), NULL, 0); return 0; }
    length = OS_MBUF_PKTLEN(attr->om);
    if (attr->offset != m->read_length) { ended(m, ANCS_ERR_TRANSPORT, NULL, 0); return 1; }
    if (length > sizeof m->value - m->read_length) {
        length = (uint16_t)(sizeof m->value - m->read_length);
        m->read_cut = true;
    }
    if (os_mbuf_copydata(attr->om, 0, length, m->value + m->read_length) != 0) { ended(m, ANCS_ERR_TRANSPORT, NULL, 0); return 1; }
    m->read_length += length;
    if (m->current.kind == OP_READ) { ended(m, ANCS_OK, m->value, m->read_length); return 0; }   /* one response */
    if (m->read_cut) {
        say(m, "media: a value longer than %u bytes: kept to that", (unsigned)sizeof m->value);
        ended(m, ANCS_OK, m->value, m->read_length);
        return 1;   /* NimBLE ends the read: nothing more is called */
    }
    return 0;
}

/* ---- the clients' callbacks ---- */

static void
ams_subscribe(void *context, ancs_ams_characteristic characteristic, bool enable)
{
    struct ancs_nimble_media_op op = { OP_CCCD, (uint8_t)characteristic, 0, enable, 0, { 0 } };
    enqueue(context, &op);
}

static void
ams_write(void *context, ancs_ams_characteristic characteristic, const uint8_t *bytes, size_t length, uint32_t token)
{
    struct ancs_nimble_media_op op = { OP_WRITE, (uint8_t)characteristic, (uint8_t)length, false, token, { 0 } };

    if (length > sizeof op.bytes) { fail_later(context, &op, ANCS_ERR_TRANSPORT); return; }
    memcpy(op.bytes, bytes, length);
    enqueue(context, &op);
}

static void
ams_read(void *context, ancs_ams_characteristic characteristic, uint32_t token)
{
    struct ancs_nimble_media_op op = { OP_READ_LONG, (uint8_t)characteristic, 0, false, token, { 0 } };
    enqueue(context, &op);
}

static void
ams_event(void *context, const ancs_ams_event *event)
{
    ancs_nimble_media *m = context;
    m->on_ams(m->context, event);
}

static const ancs_ams_callbacks ams_callbacks = { ams_subscribe, ams_write, ams_read, ams_event };

static void
cts_subscribe(void *context, ancs_cts_characteristic characteristic, bool enable)
{
    struct ancs_nimble_media_op op = { OP_CCCD, T_CURRENT_TIME, 0, enable, 0, { 0 } };
    (void)characteristic;
    enqueue(context, &op);
}

static void
cts_read(void *context, ancs_cts_characteristic characteristic, uint32_t token)
{
    uint8_t target = characteristic == ANCS_CTS_CURRENT_TIME ? T_CURRENT_TIME : T_LOCAL_TIME;
    struct ancs_nimble_media_op op = { OP_READ, target, 0, false, token, { 0 } };
    enqueue(context, &op);
}

static void
cts_event(void *context, const ancs_cts_event *event)
{
    ancs_nimble_media *m = context;
    m->on_cts(m->context, event);
}

static const ancs_cts_callbacks cts_callbacks = { cts_subscribe, cts_read, cts_event };

/* ---- discovery: AMS, then CTS, as wanted ---- */

/* The service the running discovery is at: AMS while it is wanted, then CTS. */
static uint8_t
service_at(const ancs_nimble_media *m)
{
    return m->discovering & AMS ? AMS : CTS;
}

/* A service found, once the link is encrypted: its client starts (again). */
static void
start_clients(ancs_nimble_media *m)
{
    uint64_t t = now(m);

    if (m->stopped || !connected(m) || !ancs_nimble_encrypted_(m->adapter)) return;
    if (m->on_ams && m->ea_value) {
        if (!m->ams_linked) {
            m->ams_linked = m->ams_published = true;
            ancs_ams_link_up(&m->ams, t);
        } else if (!m->ams_published) {
            m->ams_published = true;
            ancs_ams_service_changed(&m->ams, true, t);
        }
    }
    if (m->on_cts && m->ct_value && !m->cts_linked) {
        m->cts_linked = true;
        ancs_cts_link_up(&m->cts, t);
    }
}

static void look_for(ancs_nimble_media *m);

/* The discovery ended (found, absent or failed): the bearer given back, the clients started. */
static void
discovery_ended(ancs_nimble_media *m)
{
    ancs_nimble *a = m->adapter;

    m->phase = P_IDLE;
    m->discovering = 0;
    m->in_flight = false;
    start_clients(m);
    ancs_nimble_operation_ended_(a);   /* wanted again meanwhile (Service Changed): starts over from pump */
}

static void
discovery_failed(ancs_nimble_media *m, int status)
{
    ancs_nimble *a = m->adapter;

    m->wanted |= m->discovering;   /* looked for again */
    if ((status == BLE_HS_ATT_ERR(BLE_ATT_ERR_INSUFFICIENT_AUTHEN) || status == BLE_HS_ATT_ERR(BLE_ATT_ERR_INSUFFICIENT_ENC)) &&
        !ancs_nimble_encrypted_(a)) {
        say(m, "media: discovery needs an encrypted link");
        m->awaits_encryption = true;   /* the adapter asks for it for ANCS */
    } else {
        say(m, "media: discovery failed: status 0x%x; trying again in %u s", status, (unsigned)(a->retry_ms / 1000));
        m->discover_due = true;
        m->discover_at = now(m) + a->retry_ms;
    }
    discovery_ended(m);
}

/* The service at hand is done: the next one, or the end. A service wanted
 * again while it was looked for (Service Changed) is not taken: it is looked
 * for again. */
static void
service_done(ancs_nimble_media *m)
{
    uint8_t service = service_at(m);

    if (m->wanted & service) {
        if (service == AMS) m->ams_start = m->ams_end = m->rc_value = m->rc_cccd = m->eu_value = m->eu_cccd = m->ea_value = 0;
        else m->cts_start = m->cts_end = m->ct_value = m->ct_cccd = m->lti_value = 0;
    } else if (service == AMS) {
        if (!(m->rc_value && m->eu_value && m->eu_cccd && m->ea_value)) m->ea_value = 0;   /* not usable: not found */
        say(m, "media: AMS %s (Remote Command 0x%04x, Entity Update 0x%04x, Entity Attribute 0x%04x)",
            m->ea_value ? "found" : "not found", m->rc_value, m->eu_value, m->ea_value);
    } else {
        say(m, "media: CTS %s (Current Time 0x%04x, Local Time Information 0x%04x)", m->ct_value ? "found" : "not found",
            m->ct_value, m->lti_value);
    }
    m->discovering &= (uint8_t)~service;
    if (m->discovering) look_for(m);
    else discovery_ended(m);
}

/* The CCCD belongs to the characteristic with the largest value handle below it. */
static uint16_t
owner_of(const ancs_nimble_media *m, uint16_t descriptor)
{
    uint16_t owner = 0;

    for (int i = 0; i < m->value_count; i++)
        if (m->values[i] < descriptor && m->values[i] > owner) owner = m->values[i];
    return owner;
}

static int
on_descriptor(uint16_t conn, const struct ble_gatt_error *error, uint16_t value, const struct ble_gatt_dsc *dsc, void *arg)
{
    ancs_nimble_media *m = media_of(arg, conn, error->status);
    uint16_t owner;

    (void)value;
    if (!m) return 0;
    if (error->status == BLE_HS_EDONE) { service_done(m); return 0; }
    if (error->status != 0) { discovery_failed(m, error->status); return 0; }
    if (ble_uuid_cmp(&dsc->uuid.u, BLE_UUID16_DECLARE(BLE_GATT_DSC_CLT_CFG_UUID16)) != 0) return 0;
    owner = owner_of(m, dsc->handle);
    if (!owner) return 0;
    if (owner == m->rc_value) m->rc_cccd = dsc->handle;
    if (owner == m->eu_value) m->eu_cccd = dsc->handle;
    if (owner == m->ct_value) m->ct_cccd = dsc->handle;
    return 0;
}

static int
on_characteristic(uint16_t conn, const struct ble_gatt_error *error, const struct ble_gatt_chr *chr, void *arg)
{
    ancs_nimble_media *m = media_of(arg, conn, error->status);
    bool ams;

    if (!m) return 0;
    ams = service_at(m) == AMS;
    if (error->status == BLE_HS_EDONE) {
        m->phase = P_DESCRIPTORS;
        if (ble_gattc_disc_all_dscs(conn, ams ? m->ams_start : m->cts_start, ams ? m->ams_end : m->cts_end, on_descriptor,
                                    ancs_nimble_link_arg_(m->adapter)) != 0)
            discovery_failed(m, BLE_HS_EUNKNOWN);
        return 0;
    }
    if (error->status != 0) { discovery_failed(m, error->status); return 0; }
    if (ams) {
        if (ble_uuid_cmp(&chr->uuid.u, &remote_command_uuid.u) == 0) m->rc_value = chr->val_handle;
        if (ble_uuid_cmp(&chr->uuid.u, &entity_update_uuid.u) == 0) m->eu_value = chr->val_handle;
        if (ble_uuid_cmp(&chr->uuid.u, &entity_attribute_uuid.u) == 0) m->ea_value = chr->val_handle;
    } else {
        if (ble_uuid_cmp(&chr->uuid.u, BLE_UUID16_DECLARE(ANCS_CTS_UUID_CURRENT_TIME)) == 0) m->ct_value = chr->val_handle;
        if (ble_uuid_cmp(&chr->uuid.u, BLE_UUID16_DECLARE(ANCS_CTS_UUID_LOCAL_TIME_INFORMATION)) == 0) m->lti_value = chr->val_handle;
    }
    if (m->value_count < sizeof m->values / sizeof m->values[0]) m->values[m->value_count++] = chr->val_handle;
    return 0;
}

static int
on_service(uint16_t conn, const struct ble_gatt_error *error, const struct ble_gatt_svc *service, void *arg)
{
    ancs_nimble_media *m = media_of(arg, conn, error->status);
    bool ams;

    if (!m) return 0;
    ams = service_at(m) == AMS;
    if (error->status == 0) {
        if (ams) { m->ams_start = service->start_handle; m->ams_end = service->end_handle; }
        else { m->cts_start = service->start_handle; m->cts_end = service->end_handle; }
        return 0;
    }
    if (error->status != BLE_HS_EDONE) { discovery_failed(m, error->status); return 0; }
    if (!(ams ? m->ams_start : m->cts_start)) { service_done(m); return 0; }   /* not published */
    m->phase = P_CHARACTERISTICS;
    m->value_count = 0;
    if (ble_gattc_disc_all_chrs(conn, ams ? m->ams_start : m->cts_start, ams ? m->ams_end : m->cts_end, on_characteristic,
                                ancs_nimble_link_arg_(m->adapter)) != 0)
        discovery_failed(m, BLE_HS_EUNKNOWN);
    return 0;
}

/* Looks for the next service of the running discovery. */
static void
look_for(ancs_nimble_media *m)
{
    ancs_nimble *a = m->adapter;
    uint8_t service = service_at(m);
    int rc;

    m->wanted &= (uint8_t)~service;
    if (service == AMS) m->ams_start = m->ams_end = m->rc_value = m->rc_cccd = m->eu_value = m->eu_cccd = m->ea_value = 0;
    else m->cts_start = m->cts_end = m->ct_value = m->ct_cccd = m->lti_value = 0;
    m->phase = P_SERVICE;
    rc = service == AMS ? ble_gattc_disc_svc_by_uuid(a->conn, &ams_uuid.u, on_service, ancs_nimble_link_arg_(a))
                        : ble_gattc_disc_svc_by_uuid(a->conn, BLE_UUID16_DECLARE(ANCS_CTS_UUID_SERVICE), on_service,
                                                     ancs_nimble_link_arg_(a));
    if (rc != 0) discovery_failed(m, rc);
}

/* From pump: the bearer is free. The discovery holds it until it ends. */
static void
discover(ancs_nimble_media *m)
{
    m->discovering = m->wanted & used(m);
    if (!m->discovering) { m->wanted = 0; return; }
    m->in_flight = true;
    m->adapter->writes_in_flight++;
    look_for(m);
}

/* ---- the adapter's hooks ---- */

static ancs_nimble_media *
from_adapter(ancs_nimble *a)
{
    return a && a->media_hooks == &hooks ? a->media : NULL;
}

/* Some phones publish a service only on an encrypted link: what was not found is looked for again. */
static void
now_encrypted(ancs_nimble_media *m)
{
    m->awaits_encryption = false;
    if (m->on_ams && !m->ea_value && !(m->discovering & AMS)) m->wanted |= AMS;
    if (m->on_cts && !m->ct_value && !(m->discovering & CTS)) m->wanted |= CTS;
    if (!m->discovering) start_clients(m);   /* found on the plain link, started now */
}

/* The link held is gone (dropped, or left): everything of it dropped first, then the clients told (their commands end). */
static void
link_gone(ancs_nimble_media *m)
{
    bool ams = m->ams_linked, cts = m->cts_linked;
    uint64_t t = now(m);

    m->ams_start = m->ams_end = m->rc_value = m->rc_cccd = m->eu_value = m->eu_cccd = m->ea_value = 0;
    m->cts_start = m->cts_end = m->ct_value = m->ct_cccd = m->lti_value = 0;
    m->value_count = 0;
    m->phase = P_IDLE;
    m->wanted = m->discovering = 0;
    m->looked = m->encrypted = m->awaits_encryption = m->discover_due = m->head_due = false;
    m->ams_linked = m->cts_linked = m->ams_published = m->in_flight = false;
    m->failed_due[0] = m->failed_due[1] = false;
    m->queued = m->tries = 0;
    if (ams) ancs_ams_link_down(&m->ams, t);
    if (cts) ancs_cts_link_down(&m->cts, t);
}

static void
hook_detach(ancs_nimble_media *m)
{
    ancs_nimble *a = m->adapter;

    if (!a) return;
    link_gone(m);
    a->media = NULL;
    a->media_hooks = NULL;
    m->adapter = NULL;
}

static bool
touches(uint16_t start, uint16_t end, uint16_t service_start, uint16_t service_end)
{
    return !service_start || (start <= service_end && end >= service_start);
}

/* Service Changed over these handles: a service there (or not found before) is looked for again. */
static void
service_changed(ancs_nimble_media *m, uint16_t start, uint16_t end)
{
    uint64_t t = now(m);

    if (m->on_ams && touches(start, end, m->ams_start, m->ams_end)) {
        say(m, "media: Service Changed covers AMS: looked for again");
        m->rc_value = m->eu_value = m->ea_value = 0;   /* its notifications are not taken meanwhile */
        m->wanted |= AMS;
        if (m->ams_linked && m->ams_published) {
            m->ams_published = false;
            ancs_ams_service_changed(&m->ams, false, t);
        }
    }
    if (m->on_cts && touches(start, end, m->cts_start, m->cts_end)) {
        say(m, "media: Service Changed covers CTS: looked for again");
        m->ct_value = m->lti_value = 0;
        m->wanted |= CTS;
        if (m->cts_linked) {
            m->cts_linked = false;
            ancs_cts_link_down(&m->cts, t);
        }
    }
}

static bool
hook_notified(ancs_nimble_media *m, uint16_t handle, const uint8_t *bytes, size_t length)
{
    uint64_t t = now(m);

    if (!handle || m->epoch != m->adapter->epoch) return false;   /* of a link not looked at yet */
    if (handle == m->adapter->sc_value) {
        if (m->looked && length >= 4) service_changed(m, (uint16_t)(bytes[0] | bytes[1] << 8), (uint16_t)(bytes[2] | bytes[3] << 8));
        return false;   /* the adapter's too */
    }
    if (m->ams_linked && handle == m->eu_value) ancs_ams_entity_update(&m->ams, bytes, length, t);
    else if (m->ams_linked && handle == m->rc_value) ancs_ams_remote_command(&m->ams, bytes, length, t);
    else if (m->cts_linked && handle == m->ct_value) ancs_cts_current_time(&m->cts, bytes, length, t);
    else return false;
    return true;
}

static void
earlier(bool *due, uint64_t *next, bool candidate, uint64_t at)
{
    if (candidate && (!*due || at < *next)) { *next = at; *due = true; }
}

/* After every event of the adapter (its schedule): the link followed, the
 * deadlines passed acted on, the bearer given to the next operation if it is
 * free; then the earliest deadline. A failure is told here, from the settle
 * after the one that found it: never inside the call that asked. */
static bool
hook_settle(ancs_nimble_media *m, uint64_t *deadline)
{
    ancs_nimble *a = m->adapter;
    uint64_t t = now(m), at;
    bool due = false;

    if (m->epoch != a->epoch) {   /* the adapter forgot the link it held */
        m->epoch = a->epoch;
        link_gone(m);
    }
    if (!m->looked && a->ancs_seen && a->conn != BLE_HS_CONN_HANDLE_NONE) {   /* ANCS found: the phone's link */
        m->looked = true;
        m->wanted = used(m);
    }
    if (m->looked && !m->encrypted && ancs_nimble_encrypted_(a)) {
        m->encrypted = true;
        now_encrypted(m);
    }
    if (m->head_due && t >= m->head_at) m->head_due = false;   /* the head tried again (pump) */
    if (m->discover_due && t >= m->discover_at) m->discover_due = false;
    for (int client = 0; client < 2; client++) {
        if (!m->failed_due[client]) continue;
        struct ancs_nimble_media_op op = m->failed[client];
        m->failed_due[client] = false;
        report(m, &op, m->failed_status[client], NULL, 0);
    }
    if (m->on_ams && ancs_ams_next_deadline(&m->ams, &at) && at <= t) ancs_ams_tick(&m->ams, t);
    if (m->on_cts && ancs_cts_next_deadline(&m->cts, &at) && at <= t) ancs_cts_tick(&m->cts, t);
    /* Nested (a discovery that fails to start ends, and the adapter settles
     * again) it finds the discovery due later, or starts the queue's head. */
    if (ancs_nimble_bearer_free_(a)) pump(m);

    earlier(&due, deadline, m->failed_due[0] || m->failed_due[1], t);
    earlier(&due, deadline, m->head_due, m->head_at);
    earlier(&due, deadline, m->discover_due, m->discover_at);
    if (m->on_ams && ancs_ams_next_deadline(&m->ams, &at)) earlier(&due, deadline, true, at);
    if (m->on_cts && ancs_cts_next_deadline(&m->cts, &at)) earlier(&due, deadline, true, at);
    return due;
}

static const struct ancs_nimble_media_hooks hooks = { hook_settle, hook_notified, hook_detach };

/* ---- public ---- */

static bool
initialised(const ancs_nimble_media *m)
{
    return m->self == m && m->magic == MEDIA_MAGIC;
}

static void
settle(ancs_nimble_media *m)
{
    if (m->adapter) ancs_nimble_schedule_(m->adapter);   /* the next operation, the timer */
}

int
ancs_nimble_media_init(ancs_nimble_media *m, ancs_nimble *a, const ancs_ams_config *ams_config,
                       ancs_nimble_ams_event_fn *on_ams, ancs_nimble_cts_event_fn *on_cts, void *context)
{
    if (!m || !a || a->self != a || (!on_ams && !on_cts)) return BLE_HS_EINVAL;
    if (initialised(m)) {
        int rc = ancs_nimble_media_deinit(m);
        if (rc != 0) return rc;
    }
    if (a->media) return BLE_HS_EALREADY;
    memset(m, 0, sizeof *m);
    m->on_ams = on_ams;
    m->on_cts = on_cts;
    m->context = context;
    if (on_ams && ancs_ams_init(&m->ams, ams_config, &ams_callbacks, m) != ANCS_OK) return BLE_HS_EINVAL;
    if (on_cts && ancs_cts_init(&m->cts, 0, &cts_callbacks, m) != ANCS_OK) {
        if (on_ams) ancs_ams_deinit(&m->ams);
        return BLE_HS_EINVAL;
    }
    m->adapter = a;
    m->self = m;
    m->magic = MEDIA_MAGIC;
    m->epoch = a->epoch;
    a->media = m;
    a->media_hooks = &hooks;
    settle(m);   /* the phone's link held already: AMS and CTS looked for */
    return 0;
}

int
ancs_nimble_media_deinit(ancs_nimble_media *m)
{
    ancs_nimble *a;

    if (!m) return BLE_HS_EINVAL;
    if (!initialised(m)) return 0;
    /* An operation on the air: NimBLE's callback would reach the storage. One
     * waiting (ancs_nimble_media_stop's, say) goes first: it is the phone's to see. */
    if ((m->in_flight || m->queued) && connected(m)) return BLE_HS_EBUSY;
    a = m->adapter;
    hook_detach(m);   /* the sessions end */
    if (a) ancs_nimble_schedule_(a);   /* the timer, without the part's deadlines */
    if (m->on_ams) ancs_ams_deinit(&m->ams);
    if (m->on_cts) ancs_cts_deinit(&m->cts);
    m->magic = 0;
    return 0;
}

int
ancs_nimble_media_stop(ancs_nimble_media *m)
{
    uint64_t t;

    if (!m || !initialised(m)) return BLE_HS_EINVAL;
    t = now(m);
    m->stopped = true;
    if (m->ams_linked) ancs_ams_stop(&m->ams, t);
    if (m->cts_linked) ancs_cts_stop(&m->cts, t);
    settle(m);
    return 0;
}

int
ancs_nimble_media_start(ancs_nimble_media *m)
{
    uint64_t t;

    if (!m || !initialised(m)) return BLE_HS_EINVAL;
    if (!connected(m)) return BLE_HS_ENOTCONN;
    if (m->stopped) {
        t = now(m);
        m->stopped = false;
        /* Linked before the stop: started again; found since: started as new. */
        if (m->ams_linked && m->ams_published) ancs_ams_link_up(&m->ams, t);
        if (m->cts_linked) ancs_cts_link_up(&m->cts, t);
        if (!m->discovering) start_clients(m);
    }
    settle(m);
    return 0;
}

ancs_status
ancs_nimble_ams_perform(ancs_nimble_media *m, uint8_t command, uint32_t *request_id)
{
    ancs_status status;

    if (!m || !initialised(m) || !m->on_ams) return ANCS_ERR_INVALID_ARGUMENT;
    status = ancs_ams_perform(&m->ams, command, now(m), request_id);
    settle(m);
    return status;
}

bool
ancs_nimble_ams_playback(ancs_nimble_media *m, ancs_ams_playback *playback)
{
    return m && initialised(m) && m->on_ams && ancs_ams_playback_at(&m->ams, now(m), playback);
}

bool
ancs_nimble_phone_time(ancs_nimble_media *m, ancs_current_time *time)
{
    return m && initialised(m) && m->on_cts && ancs_cts_phone_time(&m->cts, now(m), time);
}

ancs_ams_client *
ancs_nimble_ams(ancs_nimble_media *m)
{
    return &m->ams;
}

ancs_cts_client *
ancs_nimble_cts(ancs_nimble_media *m)
{
    return &m->cts;
}

/* A posted command, on the host task. */
static void
on_posted(struct ble_npl_event *event)
{
    ancs_nimble_request *r = ble_npl_event_get_arg(event);
    ancs_nimble_media *m = from_adapter(r->adapter);

    if (!m) r->status = ANCS_ERR_AMS_NOT_READY;   /* detached (or deinitialised) while the request was queued */
    else if (r->kind != ANCS_NIMBLE_AMS_PERFORM) r->status = ANCS_ERR_INVALID_ARGUMENT;
    else r->status = ancs_nimble_ams_perform(m, r->action, &r->request_id);
    if (r->done) r->done(r);
}

int
ancs_nimble_media_post(ancs_nimble_media *m, ancs_nimble_request *r)
{
    /* Reads only what init wrote (the adapter and its queue): safe from any task. */
    if (!m || !r || !m->adapter || !m->adapter->eventq) return BLE_HS_EINVAL;
    r->adapter = m->adapter;
    ble_npl_event_init(&r->event, on_posted, r);
    ble_npl_eventq_put(m->adapter->eventq, &r->event);
    return 0;
}
