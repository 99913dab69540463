/*
 * A sample accessory on NimBLE: advertises the ANCS solicitation, lets the
 * phone connect and pair (LE Secure Connections, bonding; numeric comparison
 * confirmed automatically, as a watch whose user taps "OK"), and prints every
 * notification the phone shows — one line each — with its app's name, what
 * the phone plays and its clock (AMS and CTS, ancs_nimble_media.h). Reads
 * commands from standard input:
 *
 *   + UID          the notification's positive action (e.g. accept a call)
 *   - UID          its negative action (e.g. dismiss)
 *   a UID          fetch its attributes (Title, Subtitle, Message, Date, action labels)
 *   m UID MAX      fetch its Message, at most MAX bytes
 *   app BUNDLE-ID  fetch an app's display name
 *   play, pause, toggle, next, previous, volume-up, volume-down
 *                  a command to the phone's player
 *   now            what is playing and the phone's time, now
 *   disconnect     end the connection (the phone connects again)
 *   quit           end the connection and exit (also at the end of the input)
 *
 * This build runs NimBLE's Linux port: the HCI transport is a TCP connection
 * to a controller (a Bumble virtual controller in the project's tests).
 *
 * Usage: ancs-sample [--just-works] [--no-media] [--mtu MTU] [--probe-interval S] [--silence-limit S]
 *                    [--retry-interval S] [--storage BYTES] [--timeout SECONDS] TCP-PORT
 *
 * --storage reserves BYTES for the library (ancs_heap_use, ancs.h "The
 * heap"): libancs.a then allocates nothing from the C library's heap, and
 * the storage needed is printed at exit ("storage: needed N of M bytes").
 *
 * --no-media leaves AMS and CTS alone (the adapter alone, as a firmware that
 * does not link the media part).
 *
 * --mtu sets the ATT MTU NimBLE prefers (ble_att_set_preferred_mtu; 23–527,
 * the build's MYNEWT_VAL_BLE_ATT_PREFERRED_MTU, 256, by default).
 * --probe-interval, --silence-limit and --retry-interval set the engine's
 * liveness intervals in seconds (ancs_consumer_config: probe_interval_s,
 * silence_limit_s, retry_interval_s; 0 keeps the default, "off" turns one
 * off), so that a test sees a fault found within seconds instead of minutes.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ancs_nimble.h"
#include "ancs_nimble_media.h"
#include "host/util/util.h"
#include "nimble/nimble_port.h"
#include "services/gap/ble_svc_gap.h"
#include "services/gatt/ble_svc_gatt.h"

void ble_hci_sock_ack_handler(void *param);
void ble_hci_sock_set_device(int dev);
void ble_store_config_init(void);

static ancs_nimble adapter;
static ancs_nimble_media media;
static bool with_media = true;
static uint8_t own_address_type;
static uint16_t connection = BLE_HS_CONN_HANDLE_NONE;
static bool quitting;
static size_t storage_size;

static void
print_storage(void)
{
    if (storage_size) printf("storage: needed %zu of %zu bytes, %zu in use\n", ancs_heap_peak(), storage_size, ancs_heap_in_use());
}

static void advertise(void);

/* ---- printing ---- */

static void
print_text(const char *label, const uint8_t *bytes, size_t length)
{
    printf(" %s=\"", label);
    for (size_t i = 0; i < length; i++) {
        uint8_t c = bytes[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
        else putchar(c);
    }
    putchar('"');
}

static const char *
event_name(ancs_event_type type)
{
    static const char *names[] = {
        "session-started", "session-ended", "added", "modified", "removed", "ready", "updated",
        "display-failed", "attributes", "app-attributes", "done", "protocol-error", "data-source-unavailable", "unknown-event",
        "health", "hidden"
    };
    return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "?";
}

static void
print_attributes(const ancs_event *e)
{
    static const char *names[] = { "app", "title", "subtitle", "message", "size", "date", "positive", "negative" };
    bool app = e->type == ANCS_EVENT_APP_ATTRIBUTES || (e->type == ANCS_EVENT_REQUEST_DONE && e->app_identifier);
    for (size_t i = 0; i < e->attribute_count; i++) {
        const ancs_attribute *a = &e->attributes[i];
        if (app)
            print_text(a->id == 0 ? "name" : "app-attribute", a->value, a->length);
        else
            print_text(a->id < 8 ? names[a->id] : "attribute", a->value, a->length);
    }
}

static void
on_event(void *context, const ancs_event *e, const char *text)
{
    (void)context;
    if (text) {
        printf("adapter: %s\n", text);
        return;
    }
    printf("%s", event_name(e->type));
    switch (e->type) {
    case ANCS_EVENT_SESSION_ENDED:
        printf(" reason=%d status=%d", (int)e->session_end, (int)e->status);
        break;
    case ANCS_EVENT_ADDED: case ANCS_EVENT_MODIFIED: case ANCS_EVENT_REMOVED:
    case ANCS_EVENT_READY: case ANCS_EVENT_UPDATED:
        printf(" uid=%u category=%u flags=0x%02x%s", (unsigned)e->uid, e->category_id, e->event_flags,
               e->pre_existing ? " pre-existing" : "");
        if (e->has_app_name) print_text("name", e->app_name, e->app_name_length);
        if (e->type == ANCS_EVENT_READY || e->type == ANCS_EVENT_UPDATED) print_attributes(e);
        break;
    case ANCS_EVENT_DISPLAY_FAILED:
        printf(" uid=%u status=%d (%s)", (unsigned)e->uid, (int)e->status, ancs_status_name(e->status));
        break;
    case ANCS_EVENT_HIDDEN:
        printf(" uid=%u", (unsigned)e->uid);
        break;
    case ANCS_EVENT_REQUEST_DONE:
        printf(" request=%u status=%d (%s)", (unsigned)e->request_id, (int)e->status, ancs_status_name(e->status));
        if (e->app_identifier) print_text("app-id", e->app_identifier, e->app_identifier_length);
        else if (e->attribute_count) printf(" uid=%u", (unsigned)e->uid);
        print_attributes(e);
        break;
    case ANCS_EVENT_DATA_SOURCE_UNAVAILABLE: case ANCS_EVENT_PROTOCOL_ERROR:
        printf(" status=%d (%s)", (int)e->status, ancs_status_name(e->status));
        break;
    case ANCS_EVENT_UNKNOWN_EVENT:
        printf(" event-id=%u uid=%u", e->event_id, (unsigned)e->uid);
        break;
    case ANCS_EVENT_HEALTH: {
        static const char *states[] = { "healthy", "waiting-for-permission", "not-shared", "resubscribing", "bond-lost" };
        static const char *reasons[] = { "probe-unanswered", "missed-notification", "notification-source-silent",
                                         "subscription-lost", "sharing-restored" };
        printf(" state=%s", (unsigned)e->health < 5 ? states[e->health] : "?");
        if (e->health == ANCS_HEALTH_WAITING_FOR_PERMISSION)
            printf(" refused=%s status=%d (%s)",
                   e->refused == ANCS_DATA_SOURCE ? "data-source" : e->refused == ANCS_NOTIFICATION_SOURCE ? "notification-source"
                                                                                                             : "control-point",
                   (int)e->status, ancs_status_name(e->status));
        if (e->health == ANCS_HEALTH_RESUBSCRIBING)
            printf(" reason=%s", (unsigned)e->resubscribe_reason < 5 ? reasons[e->resubscribe_reason] : "?");
        if (e->health == ANCS_HEALTH_WAITING_FOR_PERMISSION)
            fputs(e->status == 0x08 ? " (on the iPhone: allow notifications for this accessory)"
                                    : " (on the iPhone: accept the pairing request; declined or not answered, it is asked again)",
                  stdout);
        if (e->health == ANCS_HEALTH_NOT_SHARED)
            printf(" (on the iPhone: Settings > Bluetooth > (i) > Share System Notifications)");
        break;
    }
    default:
        break;
    }
    putchar('\n');
}

/* ---- what the phone plays, and its clock ---- */

static const char *
media_attribute_name(uint8_t entity, uint8_t attribute)
{
    static const char *player[] = { "player-name", "playback", "volume" };
    static const char *queue[] = { "queue-index", "queue-count", "shuffle", "repeat" };
    static const char *track[] = { "artist", "album", "title", "duration" };
    if (entity == ANCS_AMS_ENTITY_PLAYER && attribute < 3) return player[attribute];
    if (entity == ANCS_AMS_ENTITY_QUEUE && attribute < 4) return queue[attribute];
    if (entity == ANCS_AMS_ENTITY_TRACK && attribute < 4) return track[attribute];
    return "attribute";
}

/* One line: the track, its artist, the state and where it is, as a watch face shows them. */
static void
print_now_playing(void)
{
    static const char *states[] = { "paused", "playing", "rewinding", "fast-forwarding" };
    const uint8_t *text;
    size_t length;
    ancs_ams_playback playback;

    printf("now-playing");
    if (ancs_ams_text(ancs_nimble_ams(&media), ANCS_AMS_ENTITY_TRACK, ANCS_AMS_TRACK_TITLE, &text, &length)) print_text("title", text, length);
    if (ancs_ams_text(ancs_nimble_ams(&media), ANCS_AMS_ENTITY_TRACK, ANCS_AMS_TRACK_ARTIST, &text, &length)) print_text("artist", text, length);
    if (ancs_nimble_ams_playback(&media, &playback)) {
        if (playback.has_playback) {
            printf(" state=%s elapsed=%u:%02u", playback.state < 4 ? states[playback.state] : "?",
                   (unsigned)(playback.elapsed_ms / 60000), (unsigned)(playback.elapsed_ms / 1000 % 60));
        }
        if (playback.has_duration)
            printf(" duration=%u:%02u", (unsigned)(playback.duration_ms / 60000), (unsigned)(playback.duration_ms / 1000 % 60));
        if (playback.has_volume) printf(" volume=%u%%", (unsigned)(playback.volume_permille / 10));
    }
    putchar('\n');
}

static void
on_ams(void *context, const ancs_ams_event *e)
{
    (void)context;
    switch (e->type) {
    case ANCS_AMS_EVENT_READY:
        printf("media-ready\n");
        break;
    case ANCS_AMS_EVENT_SUPPORTED_COMMANDS:
        printf("media-supported commands=");
        for (size_t i = 0; i < e->length; i++) printf("%s%u", i ? "," : "", e->value[i]);
        putchar('\n');
        break;
    case ANCS_AMS_EVENT_UPDATED:
        printf("media-updated%s", e->truncated ? " truncated" : "");
        print_text(media_attribute_name(e->entity, e->attribute), e->value, e->length);
        putchar('\n');
        /* The track's or the player's state changed: the watch face's line again. */
        if (!e->truncated && (e->entity == ANCS_AMS_ENTITY_TRACK || e->attribute == ANCS_AMS_PLAYER_PLAYBACK_INFO)) print_now_playing();
        break;
    case ANCS_AMS_EVENT_COMMAND_DONE:
        printf("media-done request=%u status=%d (%s)\n", (unsigned)e->request_id, (int)e->status,
               e->status == ANCS_ERR_AMS_UNSUPPORTED ? "unsupported" : e->status == ANCS_ERR_AMS_NOT_READY ? "not ready"
                                                                                                       : ancs_status_name(e->status));
        break;
    case ANCS_AMS_EVENT_SETUP_FAILED:
        printf("media-setup-failed status=%d (%s)\n", (int)e->status, ancs_status_name(e->status));
        break;
    case ANCS_AMS_EVENT_INVALID_UPDATE:
        printf("media-invalid-update\n");
        break;
    case ANCS_AMS_EVENT_ENDED:
        printf("media-ended reason=%d\n", (int)e->end);
        break;
    default:
        break;
    }
}

static void
print_time(const char *label, const ancs_current_time *t)
{
    printf("%s %04u-%02u-%02uT%02u:%02u:%02u", label, t->year, t->month, t->day, t->hours, t->minutes, t->seconds);
}

static void
on_cts(void *context, const ancs_cts_event *e)
{
    (void)context;
    switch (e->type) {
    case ANCS_CTS_EVENT_CURRENT_TIME:
        print_time("time", &e->time);
        printf(" reason=0x%02x\n", e->time.adjust_reason);
        break;
    case ANCS_CTS_EVENT_LOCAL_TIME:
        if (e->has_utc_offset) {
            int offset = e->utc_offset_minutes;
            printf("zone UTC%c%02d:%02d dst=%u\n", offset < 0 ? '-' : '+', abs(offset) / 60, abs(offset) % 60, e->dst_offset);
        } else {
            printf("zone unknown\n");
        }
        break;
    case ANCS_CTS_EVENT_FAILED:
        printf("time-failed characteristic=%d status=%d (%s)\n", (int)e->characteristic, (int)e->status, ancs_status_name(e->status));
        break;
    default:
        break;
    }
}

/* ---- commands from standard input, run on the host task ---- */

static pthread_mutex_t line_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t line_taken = PTHREAD_COND_INITIALIZER;
static char line[256];
static bool line_ready, input_ended;
static struct ble_npl_event line_event;

/* A player command's RemoteCommandID, or -1. */
static int
media_command(const char *command)
{
    static const struct { const char *name; uint8_t id; } commands[] = {
        { "play", ANCS_AMS_PLAY }, { "pause", ANCS_AMS_PAUSE }, { "toggle", ANCS_AMS_TOGGLE_PLAY_PAUSE },
        { "next", ANCS_AMS_NEXT_TRACK }, { "previous", ANCS_AMS_PREVIOUS_TRACK },
        { "volume-up", ANCS_AMS_VOLUME_UP }, { "volume-down", ANCS_AMS_VOLUME_DOWN },
    };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(command, commands[i].name)) return commands[i].id;
    return -1;
}

static void
run_command(struct ble_npl_event *event)
{
    char command[256];
    uint32_t id = 0;
    ancs_status status = ANCS_OK;
    unsigned long uid;
    unsigned max;
    bool ended;

    (void)event;
    pthread_mutex_lock(&line_lock);
    snprintf(command, sizeof command, "%s", line);
    ended = input_ended;
    line_ready = false;
    pthread_cond_signal(&line_taken);
    pthread_mutex_unlock(&line_lock);

    if (quitting) return;
    if (ended || !strcmp(command, "quit")) {
        printf("quitting\n");
        quitting = true;
        if (connection != BLE_HS_CONN_HANDLE_NONE) ble_gap_terminate(connection, BLE_ERR_REM_USER_CONN_TERM);
        else exit(0);
        return;
    }
    if (!strcmp(command, "disconnect")) {
        if (connection != BLE_HS_CONN_HANDLE_NONE) ble_gap_terminate(connection, BLE_ERR_REM_USER_CONN_TERM);
        return;
    }
    if ((command[0] == '+' || command[0] == '-') && sscanf(command + 1, "%lu", &uid) == 1) {
        status = ancs_nimble_perform_action(&adapter, (uint32_t)uid, command[0] == '+' ? ANCS_ACTION_POSITIVE : ANCS_ACTION_NEGATIVE, &id);
    } else if (command[0] == 'a' && command[1] == ' ' && sscanf(command + 2, "%lu", &uid) == 1) {
        static const ancs_attribute_request all[] = {
            { ANCS_ATTR_TITLE, 64 }, { ANCS_ATTR_SUBTITLE, 64 }, { ANCS_ATTR_MESSAGE, 256 }, { ANCS_ATTR_DATE, 0 },
            { ANCS_ATTR_POSITIVE_ACTION_LABEL, 0 }, { ANCS_ATTR_NEGATIVE_ACTION_LABEL, 0 },
        };
        status = ancs_nimble_fetch_attributes(&adapter, (uint32_t)uid, all, sizeof all / sizeof all[0], &id);
    } else if (command[0] == 'm' && command[1] == ' ' && sscanf(command + 2, "%lu %u", &uid, &max) == 2 && max <= 0xFFFF) {
        ancs_attribute_request message = { ANCS_ATTR_MESSAGE, (uint16_t)max };
        status = ancs_nimble_fetch_attributes(&adapter, (uint32_t)uid, &message, 1, &id);
    } else if (!strncmp(command, "app ", 4)) {
        status = ancs_nimble_fetch_app_attributes(&adapter, command + 4, &id);
    } else if (with_media && !strcmp(command, "now")) {
        ancs_current_time t;
        print_now_playing();
        if (ancs_nimble_phone_time(&media, &t)) { print_time("time-now", &t); putchar('\n'); }
        return;
    } else if (with_media && media_command(command) >= 0) {
        status = ancs_nimble_ams_perform(&media, (uint8_t)media_command(command), &id);
    } else {
        printf("unknown command: %s (+ UID, - UID, a UID, m UID MAX, app ID, %sdisconnect, quit)\n", command,
               with_media ? "play, pause, toggle, next, previous, volume-up, volume-down, now, " : "");
        return;
    }
    printf("request=%u: %s\n", (unsigned)id, status == ANCS_OK ? "sent" : ancs_status_name(status));
}

static void *
read_input(void *unused)
{
    char buffer[256];

    (void)unused;
    for (;;) {
        bool more = fgets(buffer, sizeof buffer, stdin) != NULL;
        pthread_mutex_lock(&line_lock);
        while (line_ready) pthread_cond_wait(&line_taken, &line_lock);
        if (more) {
            buffer[strcspn(buffer, "\r\n")] = 0;
            snprintf(line, sizeof line, "%s", buffer);
        } else {
            input_ended = true;
        }
        line_ready = true;
        pthread_mutex_unlock(&line_lock);
        ble_npl_eventq_put(nimble_port_get_dflt_eventq(), &line_event);
        if (!more) return NULL;
    }
}

/* ---- GAP ---- */

static int
gap_event(struct ble_gap_event *event, void *arg)
{
    struct ble_gap_conn_desc desc;
    int rc;

    (void)arg;
    switch (event->type) {
    case BLE_GAP_EVENT_CONNECT:
        if (event->connect.status != 0) { advertise(); break; }
        connection = event->connect.conn_handle;
        printf("connected\n");
        break;
    case BLE_GAP_EVENT_DISCONNECT:
        printf("disconnected reason=0x%x\n", event->disconnect.reason);
        connection = BLE_HS_CONN_HANDLE_NONE;
        ancs_nimble_gap_event(&adapter, event);
        if (quitting) exit(0);
        advertise();
        return 0;
    case BLE_GAP_EVENT_ENC_CHANGE:
        if (ble_gap_conn_find(event->enc_change.conn_handle, &desc) == 0)
            printf("encryption status=%d encrypted=%d authenticated=%d bonded=%d\n", event->enc_change.status,
                   desc.sec_state.encrypted, desc.sec_state.authenticated, desc.sec_state.bonded);
        break;
    case BLE_GAP_EVENT_MTU:
        printf("mtu %u\n", event->mtu.value);
        break;
    case BLE_GAP_EVENT_PASSKEY_ACTION:
        if (event->passkey.params.action == BLE_SM_IOACT_NUMCMP) {
            struct ble_sm_io io = { .action = BLE_SM_IOACT_NUMCMP, .numcmp_accept = 1 };
            printf("pairing code %06u: confirmed\n", (unsigned)event->passkey.params.numcmp);
            ble_sm_inject_io(event->passkey.conn_handle, &io);
        }
        break;
    case BLE_GAP_EVENT_REPEAT_PAIRING:
        /* On the phone's link (it forgot the bond) the adapter drops the
         * stale bond, tells the engine and returns RETRY; on another link it
         * returns 0, which is neither RETRY nor IGNORE: this sample ignores. */
        rc = ancs_nimble_gap_event(&adapter, event);
        return rc ? rc : BLE_GAP_REPEAT_PAIRING_IGNORE;
    default:
        break;
    }
    return ancs_nimble_gap_event(&adapter, event);
}

static void
advertise(void)
{
    /* Flags, 128-bit Service Solicitation (0x15) of ANCS, the name */
    static const uint8_t ancs[16] = { 0xd0, 0x00, 0x2d, 0x12, 0x1e, 0x4b, 0x0f, 0xa4, 0x99, 0x4e, 0xce, 0xb5, 0x31, 0xf4, 0x05, 0x79 };
    static const char name[] = "ancs-nc";   /* 3 + 18 + 2 + 7 bytes: within 31 */
    uint8_t data[31];
    uint8_t n = 0;
    struct ble_gap_adv_params params = { .conn_mode = BLE_GAP_CONN_MODE_UND, .disc_mode = BLE_GAP_DISC_MODE_GEN };
    int rc;

    data[n++] = 2; data[n++] = BLE_HS_ADV_TYPE_FLAGS; data[n++] = BLE_HS_ADV_F_DISC_GEN | BLE_HS_ADV_F_BREDR_UNSUP;
    data[n++] = 17; data[n++] = 0x15; memcpy(data + n, ancs, 16); n += 16;
    data[n++] = sizeof name; data[n++] = BLE_HS_ADV_TYPE_COMP_NAME; memcpy(data + n, name, sizeof name - 1); n += sizeof name - 1;
    rc = ble_gap_adv_set_data(data, n);
    if (rc == 0) rc = ble_gap_adv_start(own_address_type, NULL, BLE_HS_FOREVER, &params, gap_event, NULL);
    if (rc) { printf("error: advertising failed: %d\n", rc); exit(1); }
    printf("advertising\n");
}

static void
on_sync(void)
{
    int rc = ble_hs_util_ensure_addr(0);
    if (rc == 0) rc = ble_hs_id_infer_auto(0, &own_address_type);
    if (rc) { printf("error: no address: %d\n", rc); exit(1); }
    advertise();
}

static void *
host_task(void *unused)
{
    (void)unused;
    nimble_port_run();
    return NULL;
}

static void *
hci_task(void *unused)
{
    ble_hci_sock_ack_handler(unused);
    return NULL;
}

static void
on_timeout(int signal_number)
{
    static const char message[] = "error: timed out\n";
    (void)signal_number;
    if (write(1, message, sizeof message - 1) < 0) _exit(3);
    _exit(3);
}

int
main(int argc, char *argv[])
{
    static struct ble_npl_task host, hci;
    pthread_t input;
    static const char usage[] = "usage: ancs-sample [--just-works] [--no-media] [--mtu MTU] [--probe-interval S] [--silence-limit S]"
                                " [--retry-interval S] [--storage BYTES] [--timeout SECONDS] TCP-PORT\n";
    ancs_consumer_config config;
    int port = -1, timeout = 0, just_works = 0, mtu = 0;

    ancs_consumer_config_default(&config);
    for (int i = 1; i < argc; i++) {
        uint32_t *interval = !strcmp(argv[i], "--probe-interval") ? &config.probe_interval_s
                           : !strcmp(argv[i], "--silence-limit") ? &config.silence_limit_s
                           : !strcmp(argv[i], "--retry-interval") ? &config.retry_interval_s : NULL;
        if (!strcmp(argv[i], "--just-works")) just_works = 1;
        else if (!strcmp(argv[i], "--no-media")) with_media = false;
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) timeout = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mtu") && i + 1 < argc) mtu = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--storage") && i + 1 < argc) storage_size = (size_t)strtoul(argv[++i], NULL, 10);
        else if (interval && i + 1 < argc) {
            i++;
            *interval = !strcmp(argv[i], "off") ? ANCS_OFF : (uint32_t)strtoul(argv[i], NULL, 10);
        }
        else if (argv[i][0] != '-') port = atoi(argv[i]);
        else { fputs(usage, stderr); return 64; }
    }
    if (port <= 0) { fputs(usage, stderr); return 64; }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (timeout > 0) { signal(SIGALRM, on_timeout); alarm((unsigned)timeout); }

    ble_hci_sock_set_device(port);
    nimble_port_init();
    ble_hs_cfg.sync_cb = on_sync;
    ble_hs_cfg.store_status_cb = ble_store_util_status_rr;
    ble_hs_cfg.sm_io_cap = just_works ? BLE_HS_IO_NO_INPUT_OUTPUT : BLE_HS_IO_DISPLAY_YESNO;
    ble_hs_cfg.sm_bonding = 1;
    ble_hs_cfg.sm_mitm = just_works ? 0 : 1;
    ble_hs_cfg.sm_sc = 1;
    ble_hs_cfg.sm_our_key_dist = BLE_SM_PAIR_KEY_DIST_ENC | BLE_SM_PAIR_KEY_DIST_ID;
    ble_hs_cfg.sm_their_key_dist = BLE_SM_PAIR_KEY_DIST_ENC | BLE_SM_PAIR_KEY_DIST_ID;
    ble_svc_gap_init();
    ble_svc_gatt_init();
    ble_svc_gap_device_name_set("ancs-sample");
    ble_store_config_init();
    if (mtu && ble_att_set_preferred_mtu((uint16_t)mtu) != 0) { printf("error: MTU %d refused\n", mtu); return 64; }

    if (storage_size) {
        /* The library's memory reserved here, before the engine is made. */
        void *storage = malloc(storage_size);
        if (!storage || ancs_heap_use(storage, storage_size) != ANCS_OK) { printf("error: storage of %zu bytes\n", storage_size); return 64; }
        atexit(print_storage);
    }
    if (ancs_nimble_init(&adapter, &config, on_event, NULL) != 0) { printf("error: adapter\n"); return 1; }
    if (with_media && ancs_nimble_media_init(&media, &adapter, NULL, on_ams, on_cts, NULL) != 0) { printf("error: media\n"); return 1; }
    ble_npl_event_init(&line_event, run_command, NULL);
    pthread_create(&input, NULL, read_input, NULL);

    ble_npl_task_init(&hci, "hci_sock", hci_task, NULL, 1, BLE_NPL_TIME_FOREVER, NULL, 400);
    ble_npl_task_init(&host, "ble_host", host_task, NULL, 1, BLE_NPL_TIME_FOREVER, NULL, 400);
    pthread_exit(NULL);
}
