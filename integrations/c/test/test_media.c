/*
 * Tests of ams.h (the AMS and CTS clients) against a phone simulated in C:
 * the bytes are built here by hand from Apple's AMS specification and the
 * Bluetooth SIG's CTS, independently of the Swift core. The phone answers
 * one ATT operation at a time, in order, after the call that asked for it
 * returns, as a BLE stack does. Prints one line per test and
 * "media: N passed, N failed"; exits 1 on any failure. The heap is counted
 * through the linker's --wrap of malloc, free and posix_memalign.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ams.h"

/* ---- Heap accounting ---------------------------------------------------- */
void *__real_malloc(size_t);
void __real_free(void *);
int __real_posix_memalign(void **, size_t, size_t);
static long heap_now;
void *__wrap_malloc(size_t n) { void *p = __real_malloc(n); if (p) heap_now += (long)malloc_usable_size(p); return p; }
int __wrap_posix_memalign(void **p, size_t a, size_t n) {
    int r = __real_posix_memalign(p, a, n);
    if (r == 0) heap_now += (long)malloc_usable_size(*p);
    return r;
}
void __wrap_free(void *p) { if (p) heap_now -= (long)malloc_usable_size(p); __real_free(p); }

static int failures_in_test;
#define CHECK(cond, ...) do { if (!(cond)) { failures_in_test++; printf("    FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
    printf(__VA_ARGS__); printf("\n"); } } while (0)

/* ---- The phone's AMS ------------------------------------------------------ */
enum { OP_SUBSCRIBE, OP_UNSUBSCRIBE, OP_WRITE, OP_READ };
typedef struct { int kind; int characteristic; uint8_t bytes[64]; size_t length; uint32_t token; } operation;

#define TITLE "Ça plane pour moi — a title longer than one notification"
typedef struct {
    ancs_ams_client client;
    uint64_t now;
    operation queue[64];
    int queued, done;
    bool entity_update_on, forget_first_subscription, answer_nothing;
    uint8_t supported[8];
    size_t supported_count;
    uint8_t selected[2];
    bool playing;
    /* what the client did */
    int writes_after_end, reads, unsubscriptions, commands_written;
    bool ended;
    /* what it told */
    ancs_ams_event_type events[256];
    int event_count;
    ancs_status done_status[16];
    uint32_t done_id[16];
    int done_count;
    char title[128];
    bool title_truncated_seen;
    ancs_ams_end end;
    bool stop_on_cut_title;  /* ancs_ams_stop from the UPDATED event of the cut title (its read would follow) */
} ams_phone;

static const char *player_value(ams_phone *p, uint8_t entity, uint8_t attribute) {
    static const char *player[] = { "Music", NULL, "0.5" };
    static const char *queue[] = { "0", "3", "0", "0" };
    static const char *track[] = { "Émilie Sørensen", "Nordlys", TITLE, "215.5" };
    if (entity == 0) return attribute == 1 ? (p->playing ? "1,1.0,12.5" : "0,0.0,12.5") : attribute < 3 ? player[attribute] : NULL;
    if (entity == 1) return attribute < 4 ? queue[attribute] : NULL;
    if (entity == 2) return attribute < 4 ? track[attribute] : NULL;
    return NULL;
}

static void ams_subscribe(void *context, ancs_ams_characteristic characteristic, bool enable) {
    ams_phone *p = context;
    if (p->ended && enable) p->writes_after_end++;
    if (!enable) p->unsubscriptions++;
    p->queue[p->queued++ % 64] = (operation){ .kind = enable ? OP_SUBSCRIBE : OP_UNSUBSCRIBE, .characteristic = (int)characteristic };
}
static void ams_write(void *context, ancs_ams_characteristic characteristic, const uint8_t *bytes, size_t length, uint32_t token) {
    ams_phone *p = context;
    if (p->ended) p->writes_after_end++;
    operation op = { .kind = OP_WRITE, .characteristic = (int)characteristic, .length = length, .token = token };
    memcpy(op.bytes, bytes, length < 64 ? length : 64);
    if (characteristic == ANCS_AMS_REMOTE_COMMAND) p->commands_written++;
    p->queue[p->queued++ % 64] = op;
}
static void ams_read(void *context, ancs_ams_characteristic characteristic, uint32_t token) {
    ams_phone *p = context;
    if (p->ended) p->writes_after_end++;
    p->reads++;
    p->queue[p->queued++ % 64] = (operation){ .kind = OP_READ, .characteristic = (int)characteristic, .token = token };
}
static void ams_event(void *context, const ancs_ams_event *event) {
    ams_phone *p = context;
    if (p->event_count < 256) p->events[p->event_count++] = event->type;
    switch (event->type) {
    case ANCS_AMS_EVENT_COMMAND_DONE:
        if (p->done_count < 16) { p->done_status[p->done_count] = event->status; p->done_id[p->done_count++] = event->request_id; }
        break;
    case ANCS_AMS_EVENT_UPDATED:
        if (event->entity == 2 && event->attribute == 2) {
            size_t n = event->length < 127 ? event->length : 127;
            memcpy(p->title, event->value, n);
            p->title[n] = 0;
            if (event->truncated) p->title_truncated_seen = true;
        }
        if (p->stop_on_cut_title && event->truncated) ancs_ams_stop(&p->client, p->now);
        break;
    case ANCS_AMS_EVENT_ENDED:
        p->ended = true;
        p->end = event->end;
        break;
    default: break;
    }
}

/* An Entity Update notification, cut to fit MTU 23 (17 bytes of value) as an iPhone cuts. */
static void notify_update(ams_phone *p, uint8_t entity, uint8_t attribute) {
    const char *value = player_value(p, entity, attribute);
    if (!value) return;
    size_t length = strlen(value), room = 23 - 3 - 3;
    uint8_t flags = 0;
    if (length > room) { length = room; while (length > 0 && ((uint8_t)value[length] & 0xC0) == 0x80) length--; flags = 1; }
    uint8_t bytes[32] = { entity, attribute, flags };
    memcpy(bytes + 3, value, length);
    ancs_ams_entity_update(&p->client, bytes, 3 + length, p->now);
}

/* Answers the operations asked, one at a time, until none is left (or `limit` answered). */
static void ams_run(ams_phone *p, int limit) {
    while (p->done < p->queued && limit-- != 0) {
        operation op = p->queue[p->done++ % 64];
        if (p->answer_nothing) continue;
        switch (op.kind) {
        case OP_SUBSCRIBE:
            if (op.characteristic == ANCS_AMS_ENTITY_UPDATE) {
                if (p->forget_first_subscription) p->forget_first_subscription = false;  /* says OK, forgets */
                else p->entity_update_on = true;
            }
            ancs_ams_subscription_result(&p->client, (ancs_ams_characteristic)op.characteristic, ANCS_OK, p->now);
            if (op.characteristic == ANCS_AMS_REMOTE_COMMAND)
                ancs_ams_remote_command(&p->client, p->supported, p->supported_count, p->now);
            break;
        case OP_UNSUBSCRIBE:
            if (op.characteristic == ANCS_AMS_ENTITY_UPDATE) p->entity_update_on = false;
            break;
        case OP_WRITE:
            if (op.characteristic == ANCS_AMS_ENTITY_UPDATE) {
                if (!p->entity_update_on) { ancs_ams_write_result(&p->client, op.token, 0xA0, p->now); break; }
                ancs_ams_write_result(&p->client, op.token, ANCS_OK, p->now);
                for (size_t i = 1; i < op.length; i++) notify_update(p, op.bytes[0], op.bytes[i]);
            } else if (op.characteristic == ANCS_AMS_ENTITY_ATTRIBUTE) {
                memcpy(p->selected, op.bytes, 2);
                ancs_ams_write_result(&p->client, op.token, ANCS_OK, p->now);
            } else {
                bool known = false;
                for (size_t i = 0; i < p->supported_count; i++) known |= op.bytes[0] == p->supported[i];
                if (!known || op.length != 1) { ancs_ams_write_result(&p->client, op.token, 0xA1, p->now); break; }
                ancs_ams_write_result(&p->client, op.token, ANCS_OK, p->now);
                if (op.bytes[0] == ANCS_AMS_PLAY || op.bytes[0] == ANCS_AMS_PAUSE || op.bytes[0] == ANCS_AMS_TOGGLE_PLAY_PAUSE) {
                    p->playing = op.bytes[0] == ANCS_AMS_PLAY || (op.bytes[0] == ANCS_AMS_TOGGLE_PLAY_PAUSE && !p->playing);
                    notify_update(p, 0, 1);
                }
            }
            break;
        case OP_READ: {
            const char *value = player_value(p, p->selected[0], p->selected[1]);
            if (!value) ancs_ams_read_result(&p->client, op.token, 0xA2, NULL, 0, p->now);
            else ancs_ams_read_result(&p->client, op.token, ANCS_OK, (const uint8_t *)value, strlen(value), p->now);
            break;
        }
        }
    }
}

static ancs_ams_callbacks ams_callbacks = { ams_subscribe, ams_write, ams_read, ams_event };

static void ams_start(ams_phone *p) {
    memset(p, 0, sizeof *p);
    static const uint8_t supported[] = { ANCS_AMS_PLAY, ANCS_AMS_PAUSE, ANCS_AMS_TOGGLE_PLAY_PAUSE, ANCS_AMS_NEXT_TRACK };
    memcpy(p->supported, supported, sizeof supported);
    p->supported_count = sizeof supported;
    p->playing = true;
    p->now = 1000;
    CHECK(ancs_ams_init(&p->client, NULL, &ams_callbacks, p) == ANCS_OK, "init");
}

static int count_events(ams_phone *p, ancs_ams_event_type type) {
    int n = 0;
    for (int i = 0; i < p->event_count; i++) n += p->events[i] == type;
    return n;
}

/* ---- AMS tests ------------------------------------------------------------- */
static void test_ams_set_up_and_now_playing(void) {
    ams_phone p;
    ams_start(&p);
    ancs_ams_link_up(&p.client, p.now);
    ams_run(&p, -1);
    CHECK(ancs_ams_is_ready(&p.client), "ready");
    CHECK(count_events(&p, ANCS_AMS_EVENT_READY) == 1, "one READY");
    CHECK(count_events(&p, ANCS_AMS_EVENT_SUPPORTED_COMMANDS) == 1, "the supported commands told");
    CHECK(p.title_truncated_seen, "the title came cut");
    CHECK(strcmp(p.title, TITLE) == 0, "then whole (read): %s", p.title);
    CHECK(p.reads == 1, "one read, of the title: %d", p.reads);
    const uint8_t *text = NULL;
    size_t length = 0;
    CHECK(ancs_ams_text(&p.client, ANCS_AMS_ENTITY_TRACK, ANCS_AMS_TRACK_TITLE, &text, &length)
          && length == strlen(TITLE) && memcmp(text, TITLE, length) == 0, "ancs_ams_text: the whole title");
    CHECK(ancs_ams_text(&p.client, ANCS_AMS_ENTITY_PLAYER, ANCS_AMS_PLAYER_NAME, &text, &length) && length == 5, "the player's name");
    CHECK(!ancs_ams_text(&p.client, ANCS_AMS_ENTITY_QUEUE, ANCS_AMS_QUEUE_COUNT, &text, &length), "not a text value");
    ancs_ams_playback playback;
    CHECK(ancs_ams_playback_at(&p.client, p.now + 2000, &playback), "playback");
    CHECK(playback.has_playback && playback.state == ANCS_AMS_PLAYING && playback.rate_permille == 1000, "playing at 1.0");
    CHECK(playback.elapsed_ms == 14500, "12.5 s told, 2 s later: %u ms", playback.elapsed_ms);
    CHECK(playback.has_duration && playback.duration_ms == 215500, "duration %u", playback.duration_ms);
    CHECK(playback.has_volume && playback.volume_permille == 500, "volume %u", playback.volume_permille);
    CHECK(ancs_ams_playback_at(&p.client, p.now + 10000000, &playback) && playback.elapsed_ms == 215500,
          "never past the duration: %u", playback.elapsed_ms);
    ancs_ams_deinit(&p.client);
}

static void test_ams_commands(void) {
    ams_phone p;
    ams_start(&p);
    ancs_ams_link_up(&p.client, p.now);
    ams_run(&p, -1);
    uint32_t id = 0;
    CHECK(ancs_ams_perform(&p.client, ANCS_AMS_PAUSE, p.now, &id) == ANCS_OK, "pause taken");
    ams_run(&p, -1);
    CHECK(p.done_count == 1 && p.done_id[0] == id && p.done_status[0] == ANCS_OK, "pause done: %d", p.done_count);
    ancs_ams_playback playback;
    CHECK(ancs_ams_playback_at(&p.client, p.now, &playback) && playback.state == ANCS_AMS_PAUSED, "paused, as the phone told");
    /* Not in the player's list: refused at once, nothing written. */
    int written = p.commands_written;
    CHECK(ancs_ams_perform(&p.client, ANCS_AMS_LIKE_TRACK, p.now, &id) == ANCS_ERR_AMS_UNSUPPORTED, "unsupported");
    CHECK(p.done_count == 2 && p.done_status[1] == ANCS_ERR_AMS_UNSUPPORTED && p.done_id[1] == id, "ended before the call returned");
    CHECK(p.commands_written == written, "nothing written");
    CHECK(ancs_ams_perform(&p.client, 14, p.now, &id) == ANCS_ERR_INVALID_ARGUMENT, "no command 14");
    /* The link drops with a command on the air: it ends once, with the session. */
    CHECK(ancs_ams_perform(&p.client, ANCS_AMS_PLAY, p.now, &id) == ANCS_OK, "play taken");
    ancs_ams_link_down(&p.client, p.now);
    CHECK(p.done_count == 3 && p.done_status[2] == ANCS_ERR_SESSION_ENDED, "ended with the session: %d", p.done_count);
    CHECK(p.ended && p.end == ANCS_AMS_END_LINK_DOWN, "ENDED, link down");
    ams_run(&p, -1);  /* the late answer changes nothing */
    CHECK(p.done_count == 3, "each command ends once");
    CHECK(ancs_ams_perform(&p.client, ANCS_AMS_PLAY, p.now, &id) == ANCS_ERR_AMS_NOT_READY, "no session: not ready");
    ancs_ams_deinit(&p.client);
}

static void test_ams_invalid_state_then_timeout(void) {
    /* The phone says OK to the CCCD but does not see it: the registration is refused 0xA0, the CCCD is written again. */
    ams_phone p;
    ams_start(&p);
    p.forget_first_subscription = true;
    ancs_ams_link_up(&p.client, p.now);
    ams_run(&p, -1);
    CHECK(ancs_ams_is_ready(&p.client), "ready after writing the CCCD again");
    int subscriptions = 0;
    for (int i = 0; i < p.queued; i++) subscriptions += p.queue[i].kind == OP_SUBSCRIBE && p.queue[i].characteristic == ANCS_AMS_ENTITY_UPDATE;
    CHECK(subscriptions == 2, "Entity Update's CCCD written twice: %d", subscriptions);
    /* A command never answered: timed out at 10 s, told once. */
    p.answer_nothing = true;
    uint32_t id = 0;
    ancs_ams_perform(&p.client, ANCS_AMS_NEXT_TRACK, p.now, &id);
    ams_run(&p, -1);
    uint64_t deadline = 0;
    CHECK(ancs_ams_next_deadline(&p.client, &deadline) && deadline == p.now + 10000, "deadline %llu", (unsigned long long)deadline);
    p.now = deadline;
    ancs_ams_tick(&p.client, p.now);
    CHECK(p.done_count == 1 && p.done_status[0] == ANCS_ERR_TIMED_OUT, "timed out");
    ancs_ams_deinit(&p.client);
}

static void test_ams_stop_and_nested_stop(void) {
    ams_phone p;
    ams_start(&p);
    ancs_ams_link_up(&p.client, p.now);
    ams_run(&p, -1);
    ancs_ams_stop(&p.client, p.now);
    CHECK(p.unsubscriptions == 2 && p.ended && p.end == ANCS_AMS_END_STOPPED, "both notifications off, ENDED stopped");
    ancs_ams_deinit(&p.client);

    /* Stopped from inside the cut title's UPDATED event: its read, which the outer call had
     * left to deliver, does not follow the end. */
    ams_start(&p);
    p.stop_on_cut_title = true;
    ancs_ams_link_up(&p.client, p.now);
    ams_run(&p, -1);
    CHECK(p.ended && p.end == ANCS_AMS_END_STOPPED, "stopped");
    CHECK(p.writes_after_end == 0, "no write, read or subscription after ENDED: %d", p.writes_after_end);
    CHECK(p.reads == 0, "the title not read: %d", p.reads);
    CHECK(!ancs_ams_is_ready(&p.client), "not ready");
    /* A new link starts again at once: the read never made holds no slot. */
    p.ended = false;
    p.stop_on_cut_title = false;
    ancs_ams_link_up(&p.client, p.now);
    ams_run(&p, -1);
    CHECK(ancs_ams_is_ready(&p.client), "ready again");
    ancs_ams_deinit(&p.client);
}

static void test_ams_arguments_and_heap(void) {
    long before = heap_now;
    ams_phone p;
    ams_start(&p);
    CHECK(ancs_ams_storage_size() <= sizeof(ancs_ams_client), "storage %zu <= %zu", ancs_ams_storage_size(), sizeof(ancs_ams_client));
    CHECK(ancs_cts_storage_size() <= sizeof(ancs_cts_client), "storage %zu <= %zu", ancs_cts_storage_size(), sizeof(ancs_cts_client));
    CHECK(ancs_ams_link_up(NULL, 0) == ANCS_ERR_STORAGE, "NULL");
    ancs_ams_client unset;
    memset(&unset, 0, sizeof unset);
    CHECK(ancs_ams_link_up(&unset, 0) == ANCS_ERR_STORAGE, "not initialized");
    CHECK(ancs_ams_subscription_result(&p.client, (ancs_ams_characteristic)7, ANCS_OK, 0) == ANCS_ERR_INVALID_ARGUMENT, "no such characteristic");
    CHECK(ancs_ams_read_result(&p.client, 1, ANCS_OK, NULL, 3, 0) == ANCS_ERR_INVALID_ARGUMENT, "NULL bytes");
    CHECK(ancs_ams_write_result(&p.client, 1, -99, 0) == ANCS_ERR_INVALID_ARGUMENT, "not a result");
    ancs_ams_callbacks none = { 0 };
    CHECK(ancs_ams_init(&unset, NULL, &none, NULL) == ANCS_ERR_INVALID_ARGUMENT, "callbacks required");
    /* A hostile phone's updates: malformed ones are told and dropped; nothing traps. */
    ancs_ams_link_up(&p.client, p.now);
    ams_run(&p, -1);
    uint8_t bytes[40];
    for (int i = 0; i < 200; i++) {
        for (size_t j = 0; j < sizeof bytes; j++) bytes[j] = (uint8_t)(i * 31 + j * 7);
        ancs_ams_entity_update(&p.client, bytes, (size_t)(i % 40), p.now);
        ancs_ams_remote_command(&p.client, bytes, (size_t)(i % 20), p.now);
    }
    CHECK(count_events(&p, ANCS_AMS_EVENT_INVALID_UPDATE) > 0, "malformed updates told");
    ancs_ams_deinit(&p.client);
    CHECK(heap_now == before, "the heap back where it was: %ld bytes left", heap_now - before);
}

/* ---- The phone's CTS ------------------------------------------------------- */
typedef struct {
    ancs_cts_client client;
    uint64_t now;
    operation queue[16];
    int queued, done;
    bool subscribed, answer_nothing;
    uint8_t time[10];
    uint8_t zone[2];
    ancs_cts_event events[32];
    int event_count;
    int reads_of_zone;
} cts_phone;

static void cts_subscribe(void *context, ancs_cts_characteristic characteristic, bool enable) {
    cts_phone *p = context;
    (void)characteristic;
    p->subscribed = enable;
}
static void cts_read(void *context, ancs_cts_characteristic characteristic, uint32_t token) {
    cts_phone *p = context;
    if (characteristic == ANCS_CTS_LOCAL_TIME_INFORMATION) p->reads_of_zone++;
    p->queue[p->queued++ % 16] = (operation){ .kind = OP_READ, .characteristic = (int)characteristic, .token = token };
}
static void cts_event(void *context, const ancs_cts_event *event) {
    cts_phone *p = context;
    if (p->event_count < 32) p->events[p->event_count++] = *event;
}
static void cts_run(cts_phone *p) {
    while (p->done < p->queued) {
        operation op = p->queue[p->done++ % 16];
        if (p->answer_nothing) continue;
        if (op.characteristic == ANCS_CTS_CURRENT_TIME) ancs_cts_read_result(&p->client, op.token, ANCS_OK, p->time, 10, p->now);
        else ancs_cts_read_result(&p->client, op.token, ANCS_OK, p->zone, 2, p->now);
    }
}
static ancs_cts_callbacks cts_callbacks = { cts_subscribe, cts_read, cts_event };

static void cts_start(cts_phone *p) {
    memset(p, 0, sizeof *p);
    /* 2026-11-28 23:59:30, a Saturday (6), no adjustment; UTC+1 (4 quarter hours), no DST. */
    static const uint8_t time[10] = { 0xEA, 0x07, 11, 28, 23, 59, 30, 6, 0, 0 };
    memcpy(p->time, time, 10);
    p->zone[0] = 4;
    p->zone[1] = 0;
    p->now = 5000;
    CHECK(ancs_cts_init(&p->client, 0, &cts_callbacks, p) == ANCS_OK, "init");
}

static void test_cts(void) {
    long before = heap_now;
    cts_phone p;
    cts_start(&p);
    ancs_cts_link_up(&p.client, p.now);
    cts_run(&p);
    CHECK(p.subscribed, "Current Time's notifications on");
    CHECK(p.event_count == 2, "two events: %d", p.event_count);
    CHECK(p.events[0].type == ANCS_CTS_EVENT_CURRENT_TIME && p.events[0].time.year == 2026 && p.events[0].time.day == 28
          && p.events[0].time.seconds == 30 && p.events[0].time.day_of_week == 6, "the time read");
    CHECK(p.events[1].type == ANCS_CTS_EVENT_LOCAL_TIME && p.events[1].has_utc_offset && p.events[1].utc_offset_minutes == 60,
          "the zone read: %d", p.events[1].utc_offset_minutes);
    /* The phone's clock runs: 45 s later it is the next day, a Sunday. */
    ancs_current_time now;
    CHECK(ancs_cts_phone_time(&p.client, p.now + 45000, &now) && now.day == 29 && now.hours == 0 && now.minutes == 0
          && now.seconds == 15 && now.day_of_week == 7, "%u-%u %u:%u:%u dow %u", now.month, now.day, now.hours, now.minutes, now.seconds, now.day_of_week);
    /* Notified with the zone's change (Adjust Reason bit 2): the zone is read again. */
    uint8_t moved[10] = { 0xEA, 0x07, 11, 28, 17, 59, 31, 6, 0, 1 << 2 };
    p.zone[0] = (uint8_t)-20;
    ancs_cts_current_time(&p.client, moved, 10, p.now);
    cts_run(&p);
    CHECK(p.reads_of_zone == 2, "the zone read again: %d", p.reads_of_zone);
    CHECK(p.events[p.event_count - 1].type == ANCS_CTS_EVENT_LOCAL_TIME && p.events[p.event_count - 1].utc_offset_minutes == -300,
          "New York: %d", p.events[p.event_count - 1].utc_offset_minutes);
    /* A value that is not a time: told as such. */
    uint8_t bad[3] = { 1, 2, 3 };
    ancs_cts_current_time(&p.client, bad, 3, p.now);
    CHECK(p.events[p.event_count - 1].type == ANCS_CTS_EVENT_FAILED && p.events[p.event_count - 1].status == ANCS_ERR_INVALID_RESPONSE,
          "an invalid time");
    /* Stopped: notifications off, nothing more read. */
    ancs_cts_stop(&p.client, p.now);
    CHECK(!p.subscribed, "notifications off");
    int reads = p.queued;
    ancs_cts_current_time(&p.client, moved, 10, p.now);
    CHECK(p.queued == reads, "nothing read after the stop");
    ancs_cts_deinit(&p.client);

    /* A read never answered times out at 10 s. */
    cts_start(&p);
    p.answer_nothing = true;
    ancs_cts_link_up(&p.client, p.now);
    cts_run(&p);
    uint64_t deadline = 0;
    CHECK(ancs_cts_next_deadline(&p.client, &deadline) && deadline == p.now + 10000, "deadline");
    ancs_cts_tick(&p.client, deadline);
    CHECK(p.event_count == 1 && p.events[0].type == ANCS_CTS_EVENT_FAILED && p.events[0].status == ANCS_ERR_TIMED_OUT
          && p.events[0].characteristic == ANCS_CTS_CURRENT_TIME, "timed out");
    CHECK(!ancs_cts_phone_time(&p.client, p.now, &now), "no time known");
    CHECK(ancs_cts_link_up(NULL, 0) == ANCS_ERR_STORAGE, "NULL");
    ancs_cts_deinit(&p.client);
    CHECK(heap_now == before, "the heap back where it was: %ld bytes left", heap_now - before);
}

/* The UUID macros against the UUIDs' text, byte by byte. */
static void test_uuids(void) {
    struct { const char *text; uint8_t bytes[16]; } uuids[] = {
        { "89D3502B-0F36-433A-8EF4-C502AD55F8DC", { ANCS_AMS_UUID_SERVICE_LE } },
        { "9B3C81D8-57B1-4A8A-B8DF-0E56F7CA51C2", { ANCS_AMS_UUID_REMOTE_COMMAND_LE } },
        { "2F7CABCE-808D-411F-9A0C-BB92BA96C102", { ANCS_AMS_UUID_ENTITY_UPDATE_LE } },
        { "C6B2F38C-23AB-46D8-A6AB-A3A870BBD5D7", { ANCS_AMS_UUID_ENTITY_ATTRIBUTE_LE } },
    };
    for (size_t u = 0; u < sizeof uuids / sizeof uuids[0]; u++) {
        uint8_t big_endian[16];
        int n = 0;
        for (const char *c = uuids[u].text; *c && n < 16; c++) {
            if (*c == '-') continue;
            unsigned byte;
            sscanf(c, "%2x", &byte);
            big_endian[n++] = (uint8_t)byte;
            c++;
        }
        bool same = n == 16;
        for (int i = 0; i < 16; i++) same = same && uuids[u].bytes[i] == big_endian[15 - i];
        CHECK(same, "%s", uuids[u].text);
    }
}

int main(void) {
    struct { const char *name; void (*run)(void); } tests[] = {
        { "AMS: set up, a cut title read whole, now playing", test_ams_set_up_and_now_playing },
        { "AMS: commands, one unsupported, the link dropping", test_ams_commands },
        { "AMS: 0xA0 to the registration, a command unanswered", test_ams_invalid_state_then_timeout },
        { "AMS: stop, and stop from inside an event", test_ams_stop_and_nested_stop },
        { "AMS: arguments, a hostile phone, the heap", test_ams_arguments_and_heap },
        { "CTS: time and zone, the clock, a zone change, stop, a timeout", test_cts },
        { "the UUIDs", test_uuids },
    };
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        failures_in_test = 0;
        tests[i].run();
        printf("%s %s\n", failures_in_test ? "FAIL" : "ok  ", tests[i].name);
        if (failures_in_test) failed++; else passed++;
    }
    printf("media: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
