/*
 * ams.h — what the phone plays and its clock, for C firmware: the accessory's
 * clients of the Apple Media Service (AMS: now playing, remote commands) and
 * of the Current Time Service (CTS: the phone's time and time zone).
 *
 * Two state machines that do no I/O, as ancs.h's consumer: the firmware's
 * BLE stack tells them what happened (link up, a subscription's, write's or
 * read's result, a notification's bytes, the time) and they answer through
 * callbacks. The behaviour is the Swift library's AMSClient and CTSClient
 * engines, the same code (docs/MEDIA.md):
 *   AMS  subscribes to Remote Command and Entity Update, registers for
 *        every attribute of the player, the queue and the track, reads a
 *        value the phone cut in full (Entity Attribute, a long read), keeps
 *        what is playing, and performs remote commands; one ATT operation at
 *        a time. Every command asked ends exactly once
 *        (ANCS_AMS_EVENT_COMMAND_DONE).
 *   CTS  reads Current Time, then Local Time Information, when the link
 *        comes up, and turns Current Time's notifications on; reads the zone
 *        again when a notified time says it changed. A read that fails
 *        (FAILED: unanswered, refused, the transport's) is tried again 15 s
 *        later (1.5 × request_timeout_ms), three times at most per link (a
 *        value that is not one is not).
 *
 * Library. integrations/c/build.sh builds libancs_media.a beside libancs.a:
 * an object of its own, so a firmware that links only ANCS (ancs.h) carries
 * none of this. A firmware may link both.
 *
 * Conventions are ancs.h's: results are ancs_status values (0; an ATT error
 * code 1…255, AMS's own 0xA0 Invalid State, 0xA1 Invalid Command, 0xA2
 * Absent Attribute; the library's negative codes, ancs.h's and the two
 * below); time is milliseconds from any fixed origin; the caller owns each
 * instance's storage; calls to one instance come from one thread; a callback
 * may call any function of the same instance but its deinit; pointers given
 * to a callback are valid during the call only. Values are UTF-8 as the
 * phone sent them, not NUL-terminated.
 *
 * A nested call that starts or ends a session (ancs_ams_stop() from an
 * UPDATED event, say) drops what the outer call had left to deliver,
 * computed for the session that was: no write, read or subscription of it
 * follows ENDED, and only COMMAND_DONE is still told (every command ends
 * exactly once). An operation so dropped was never made, and the engine is
 * told so: the next session does not wait for its answer.
 *
 * Memory. The heap holds what is playing (eleven values, each at most
 * max_value_length), the operations waiting (three registrations, then at
 * most max_queued_commands commands and one read per cut value) and, for a
 * call, its actions. Nothing the phone sends grows it past these bounds.
 */
#ifndef ANCS_AMS_H
#define ANCS_AMS_H

#include "ancs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ANCS_MEDIA_API_VERSION 1

/* The UUIDs as the 16 bytes a BLE stack takes, little-endian (ancs.h's form).
 *   AMS service        89D3502B-0F36-433A-8EF4-C502AD55F8DC
 *   Remote Command     9B3C81D8-57B1-4A8A-B8DF-0E56F7CA51C2 (write, notify)
 *   Entity Update      2F7CABCE-808D-411F-9A0C-BB92BA96C102 (write with response, notify)
 *   Entity Attribute   C6B2F38C-23AB-46D8-A6AB-A3A870BBD5D7 (read, write) */
#define ANCS_AMS_UUID_SERVICE_LE \
    0xdc, 0xf8, 0x55, 0xad, 0x02, 0xc5, 0xf4, 0x8e, 0x3a, 0x43, 0x36, 0x0f, 0x2b, 0x50, 0xd3, 0x89
#define ANCS_AMS_UUID_REMOTE_COMMAND_LE \
    0xc2, 0x51, 0xca, 0xf7, 0x56, 0x0e, 0xdf, 0xb8, 0x8a, 0x4a, 0xb1, 0x57, 0xd8, 0x81, 0x3c, 0x9b
#define ANCS_AMS_UUID_ENTITY_UPDATE_LE \
    0x02, 0xc1, 0x96, 0xba, 0x92, 0xbb, 0x0c, 0x9a, 0x1f, 0x41, 0x8d, 0x80, 0xce, 0xab, 0x7c, 0x2f
#define ANCS_AMS_UUID_ENTITY_ATTRIBUTE_LE \
    0xd7, 0xd5, 0xbb, 0x70, 0xa8, 0xa3, 0xab, 0xa6, 0xd8, 0x46, 0xab, 0x23, 0x8c, 0xf3, 0xb2, 0xc6
/* CTS (Bluetooth SIG): 16-bit UUIDs. */
#define ANCS_CTS_UUID_SERVICE 0x1805
#define ANCS_CTS_UUID_CURRENT_TIME 0x2A2B
#define ANCS_CTS_UUID_LOCAL_TIME_INFORMATION 0x2A0F

/* The library's own statuses for AMS commands, beside ancs.h's. */
enum {
    ANCS_ERR_AMS_NOT_READY = -16,     /* no AMS session: link down, AMS not published, or being set up again */
    ANCS_ERR_AMS_UNSUPPORTED = -17    /* the player does not support the command now: nothing was written */
    /* also: ANCS_ERR_TOO_MANY_REQUESTS (max_queued_commands waiting), ANCS_ERR_TIMED_OUT,
     * ANCS_ERR_SESSION_ENDED, ANCS_ERR_TRANSPORT, ANCS_ERR_INVALID_RESPONSE (CTS: a value
     * that is not one), ANCS_ERR_INVALID_ARGUMENT, ANCS_ERR_STORAGE, ANCS_ERR_BUSY */
};

/* ==== AMS ================================================================ */
typedef enum {
    ANCS_AMS_REMOTE_COMMAND = 0,
    ANCS_AMS_ENTITY_UPDATE = 1,
    ANCS_AMS_ENTITY_ATTRIBUTE = 2,
    ANCS_AMS_CHARACTERISTIC_INT_SIZE = 0x7FFFFFFF   /* not a value: keeps the enum int-sized (ancs.h, ANCS_ENUM_INT) */
} ancs_ams_characteristic;

enum { /* RemoteCommandID */
    ANCS_AMS_PLAY = 0, ANCS_AMS_PAUSE = 1, ANCS_AMS_TOGGLE_PLAY_PAUSE = 2, ANCS_AMS_NEXT_TRACK = 3,
    ANCS_AMS_PREVIOUS_TRACK = 4, ANCS_AMS_VOLUME_UP = 5, ANCS_AMS_VOLUME_DOWN = 6,
    ANCS_AMS_ADVANCE_REPEAT_MODE = 7, ANCS_AMS_ADVANCE_SHUFFLE_MODE = 8, ANCS_AMS_SKIP_FORWARD = 9,
    ANCS_AMS_SKIP_BACKWARD = 10, ANCS_AMS_LIKE_TRACK = 11, ANCS_AMS_DISLIKE_TRACK = 12, ANCS_AMS_BOOKMARK_TRACK = 13
};
enum { /* EntityID */
    ANCS_AMS_ENTITY_PLAYER = 0, ANCS_AMS_ENTITY_QUEUE = 1, ANCS_AMS_ENTITY_TRACK = 2
};
enum { /* AttributeIDs, per entity */
    ANCS_AMS_PLAYER_NAME = 0, ANCS_AMS_PLAYER_PLAYBACK_INFO = 1, ANCS_AMS_PLAYER_VOLUME = 2,
    ANCS_AMS_QUEUE_INDEX = 0, ANCS_AMS_QUEUE_COUNT = 1, ANCS_AMS_QUEUE_SHUFFLE_MODE = 2, ANCS_AMS_QUEUE_REPEAT_MODE = 3,
    ANCS_AMS_TRACK_ARTIST = 0, ANCS_AMS_TRACK_ALBUM = 1, ANCS_AMS_TRACK_TITLE = 2, ANCS_AMS_TRACK_DURATION = 3
};
enum { /* PlaybackState */
    ANCS_AMS_PAUSED = 0, ANCS_AMS_PLAYING = 1, ANCS_AMS_REWINDING = 2, ANCS_AMS_FAST_FORWARDING = 3
};

typedef enum {
    ANCS_AMS_EVENT_READY = 0,          /* subscribed and registered: updates follow */
    ANCS_AMS_EVENT_SUPPORTED_COMMANDS, /* value/length: the RemoteCommandIDs the player supports now */
    ANCS_AMS_EVENT_UPDATED,            /* entity, attribute, value/length; truncated: cut by the phone,
                                          the whole value follows in another UPDATED (a long read) */
    ANCS_AMS_EVENT_COMMAND_DONE,       /* request_id, status: 0 or why not */
    ANCS_AMS_EVENT_SETUP_FAILED,       /* status: subscribing or registering failed; asked again after
                                          retry_interval_ms, doubling to 16 times it */
    ANCS_AMS_EVENT_INVALID_UPDATE,     /* an Entity Update notification that is not one (ignored) */
    ANCS_AMS_EVENT_ENDED,              /* end: the session ended; READY comes with the next */
    ANCS_AMS_EVENT_TYPE_INT_SIZE = 0x7FFFFFFF
} ancs_ams_event_type;

typedef enum {
    ANCS_AMS_END_LINK_DOWN = 0,
    ANCS_AMS_END_SERVICE_UNPUBLISHED,
    ANCS_AMS_END_STOPPED,
    ANCS_AMS_END_INT_SIZE = 0x7FFFFFFF
} ancs_ams_end;

typedef struct {
    ancs_ams_event_type type;
    ancs_status status;
    uint32_t request_id;
    uint8_t entity;
    uint8_t attribute;
    bool truncated;
    const uint8_t *value;   /* `length` bytes, valid during the callback (NULL when length is 0) */
    size_t length;
    ancs_ams_end end;
} ancs_ams_event;

typedef struct {
    /* Write (enable) or clear the CCCD; an enable is reported with ancs_ams_subscription_result(). */
    void (*subscribe)(void *context, ancs_ams_characteristic characteristic, bool enable);
    /* A write with response; report with ancs_ams_write_result(token). */
    void (*write)(void *context, ancs_ams_characteristic characteristic, const uint8_t *bytes, size_t length,
                  uint32_t token);
    /* Read the whole value (a long read); report with ancs_ams_read_result(token). */
    void (*read)(void *context, ancs_ams_characteristic characteristic, uint32_t token);
    void (*event)(void *context, const ancs_ams_event *event);
} ancs_ams_callbacks;

/* Every field left 0 takes its default. */
typedef struct {
    uint32_t request_timeout_ms;  /* an operation unanswered this long fails; default 10 000 */
    uint32_t retry_interval_ms;   /* a failed set-up is tried again after this; default 15 000 */
    uint16_t max_value_length;    /* a value read in full is kept to this many bytes; default 512 */
    uint8_t max_queued_commands;  /* commands waiting at most; default 8 */
} ancs_ams_config;

/* Opaque, caller-provided; ancs_ams_init() checks that it is large enough. */
#define ANCS_AMS_CLIENT_STORAGE_WORDS 64
typedef struct {
    uint64_t words[ANCS_AMS_CLIENT_STORAGE_WORDS];
} ancs_ams_client;

/* The bytes of ancs_ams_client this build uses. */
size_t ancs_ams_storage_size(void);

/* config may be NULL (the defaults); callbacks and its four functions are required. */
ancs_status ancs_ams_init(ancs_ams_client *client, const ancs_ams_config *config,
                          const ancs_ams_callbacks *callbacks, void *context);
/* Frees the heap; ANCS_ERR_BUSY from one of its callbacks. */
ancs_status ancs_ams_deinit(ancs_ams_client *client);

/* The link is up and encrypted, AMS discovered (characteristics and CCCDs known). */
ancs_status ancs_ams_link_up(ancs_ams_client *client, uint64_t now_ms);
/* The link dropped: the session ends, commands end with ANCS_ERR_SESSION_ENDED. */
ancs_status ancs_ams_link_down(ancs_ams_client *client, uint64_t now_ms);
/* Service Changed: AMS removed (published false) or published again (rediscover it first). */
ancs_status ancs_ams_service_changed(ancs_ams_client *client, bool published, uint64_t now_ms);
ancs_status ancs_ams_subscription_result(ancs_ams_client *client, ancs_ams_characteristic characteristic,
                                         ancs_status result, uint64_t now_ms);
ancs_status ancs_ams_write_result(ancs_ams_client *client, uint32_t token, ancs_status result, uint64_t now_ms);
/* result 0: `value` is the whole value read; else its ATT error or ANCS_ERR_TRANSPORT. */
ancs_status ancs_ams_read_result(ancs_ams_client *client, uint32_t token, ancs_status result,
                                 const uint8_t *value, size_t length, uint64_t now_ms);
/* GATT notifications of Remote Command and Entity Update. */
ancs_status ancs_ams_remote_command(ancs_ams_client *client, const uint8_t *bytes, size_t length, uint64_t now_ms);
ancs_status ancs_ams_entity_update(ancs_ams_client *client, const uint8_t *bytes, size_t length, uint64_t now_ms);
ancs_status ancs_ams_tick(ancs_ams_client *client, uint64_t now_ms);
/* Leaves AMS: the notifications turned off, commands ended; ancs_ams_link_up() starts again. */
ancs_status ancs_ams_stop(ancs_ams_client *client, uint64_t now_ms);
bool ancs_ams_next_deadline(const ancs_ams_client *client, uint64_t *deadline_ms);
bool ancs_ams_is_ready(const ancs_ams_client *client);

/* Asks the player to perform `command` (ANCS_AMS_PLAY …). Returns ANCS_OK
 * and sets *request_id when taken: it then ends with COMMAND_DONE. A command
 * refused at once (not ready, unsupported, too many) ends with COMMAND_DONE
 * too, before the call returns, and the call returns that status. */
ancs_status ancs_ams_perform(ancs_ams_client *client, uint8_t command, uint64_t now_ms, uint32_t *request_id);

/* What is playing, as last told. */
typedef struct {
    bool has_playback;
    uint8_t state;             /* ANCS_AMS_PAUSED, ANCS_AMS_PLAYING, … */
    int32_t rate_permille;     /* 1000 is normal speed, 0 paused, negative rewinding */
    uint32_t elapsed_ms;       /* into the track at now_ms: the time told, run at the rate, within 0 and the duration */
    bool has_duration;
    uint32_t duration_ms;
    bool has_volume;
    uint16_t volume_permille;  /* 0…1000 */
} ancs_ams_playback;
bool ancs_ams_playback_at(const ancs_ams_client *client, uint64_t now_ms, ancs_ams_playback *playback);
/* A text value as last told (ANCS_AMS_ENTITY_PLAYER with ANCS_AMS_PLAYER_NAME, or
 * ANCS_AMS_ENTITY_TRACK with its ARTIST, ALBUM or TITLE); false if none. Valid
 * until the next call on the instance. */
bool ancs_ams_text(const ancs_ams_client *client, uint8_t entity, uint8_t attribute,
                   const uint8_t **value, size_t *length);

/* ==== CTS ================================================================ */
typedef enum {
    ANCS_CTS_CURRENT_TIME = 0,
    ANCS_CTS_LOCAL_TIME_INFORMATION = 1,
    ANCS_CTS_CHARACTERISTIC_INT_SIZE = 0x7FFFFFFF
} ancs_cts_characteristic;

/* Current Time's fields (adjust_reason: bit 0 manual, 1 external reference, 2 time zone, 3 daylight saving). */
typedef struct {
    uint16_t year;
    uint8_t month, day, hours, minutes, seconds;
    uint8_t day_of_week;   /* 1 Monday … 7 Sunday, 0 unknown */
    uint8_t fractions256;
    uint8_t adjust_reason;
} ancs_current_time;

typedef enum {
    ANCS_CTS_EVENT_CURRENT_TIME = 0,  /* time: read or notified */
    ANCS_CTS_EVENT_LOCAL_TIME,        /* has_utc_offset, utc_offset_minutes, dst_offset */
    ANCS_CTS_EVENT_FAILED,            /* characteristic, status */
    ANCS_CTS_EVENT_TYPE_INT_SIZE = 0x7FFFFFFF
} ancs_cts_event_type;

typedef struct {
    ancs_cts_event_type type;
    ancs_status status;
    ancs_cts_characteristic characteristic;
    ancs_current_time time;
    bool has_utc_offset;          /* false: the phone does not know its zone */
    int16_t utc_offset_minutes;   /* daylight saving included */
    uint8_t dst_offset;           /* in 15-minute steps, 255 unknown */
} ancs_cts_event;

typedef struct {
    /* Write (enable) or clear Current Time's CCCD; no result is needed. */
    void (*subscribe)(void *context, ancs_cts_characteristic characteristic, bool enable);
    /* Read the value; report with ancs_cts_read_result(token). */
    void (*read)(void *context, ancs_cts_characteristic characteristic, uint32_t token);
    void (*event)(void *context, const ancs_cts_event *event);
} ancs_cts_callbacks;

#define ANCS_CTS_CLIENT_STORAGE_WORDS 32
typedef struct {
    uint64_t words[ANCS_CTS_CLIENT_STORAGE_WORDS];
} ancs_cts_client;

size_t ancs_cts_storage_size(void);
/* request_timeout_ms 0: 10 000. */
ancs_status ancs_cts_init(ancs_cts_client *client, uint32_t request_timeout_ms, const ancs_cts_callbacks *callbacks,
                          void *context);
ancs_status ancs_cts_deinit(ancs_cts_client *client);
/* The link is up and encrypted, CTS discovered. */
ancs_status ancs_cts_link_up(ancs_cts_client *client, uint64_t now_ms);
ancs_status ancs_cts_link_down(ancs_cts_client *client, uint64_t now_ms);
ancs_status ancs_cts_read_result(ancs_cts_client *client, uint32_t token, ancs_status result,
                                 const uint8_t *value, size_t length, uint64_t now_ms);
/* A GATT notification of Current Time. */
ancs_status ancs_cts_current_time(ancs_cts_client *client, const uint8_t *bytes, size_t length, uint64_t now_ms);
ancs_status ancs_cts_tick(ancs_cts_client *client, uint64_t now_ms);
/* Current Time's notifications off, nothing more read; ancs_cts_link_up() starts again. */
ancs_status ancs_cts_stop(ancs_cts_client *client, uint64_t now_ms);
bool ancs_cts_next_deadline(const ancs_cts_client *client, uint64_t *deadline_ms);
/* The phone's local time at now_ms (the time told, run since); false until told. */
bool ancs_cts_phone_time(const ancs_cts_client *client, uint64_t now_ms, ancs_current_time *time);

#ifdef __cplusplus
}
#endif
#endif /* ANCS_AMS_H */
