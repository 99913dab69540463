/*
 * ancs_nimble_media.h — what the phone plays and its clock (ams.h: the Apple
 * Media Service and the Current Time Service) beside ANCS, on the NimBLE
 * adapter's link (ancs_nimble.h).
 *
 * Attached to an adapter, the media part:
 *   - looks for AMS and CTS on the link once ANCS is found there (the
 *     phone's link), after the adapter's own discovery; again when the link
 *     becomes encrypted if one was missing (some phones publish them only
 *     then), and when Service Changed covers one, or one was missing (AMS
 *     removed: its session ends, ANCS_AMS_END_SERVICE_UNPUBLISHED; back: a
 *     new one);
 *   - starts the clients (ancs_ams_link_up, ancs_cts_link_up) once a
 *     service is found and the link is encrypted: AMS subscribes, registers
 *     and follows the player; CTS reads the time and the zone, then follows
 *     the time;
 *   - puts their operations on the air one at a time, and only when the
 *     adapter has nothing on the air or waiting (ATT allows one request at a
 *     time on a link; ANCS goes first): CCCD writes (one per characteristic
 *     waiting: a later one replaces it), writes with response, Entity
 *     Attribute's long read (Read then Read Blob, the value kept to
 *     ANCS_NIMBLE_MEDIA_VALUE_MAX bytes), CTS's reads. An operation NimBLE
 *     refuses is tried again every 100 ms (ten times) when it is out of
 *     buffers, and otherwise reported failed afterwards (the timer, or the
 *     adapter's next event), never from inside the client's callback;
 *   - feeds Remote Command, Entity Update and Current Time notifications,
 *     and the clients' deadlines on the adapter's timer;
 *   - ends the sessions with the link (ancs_ams_link_down: commands waiting
 *     end with ANCS_ERR_SESSION_ENDED) and with ancs_nimble_deinit() (the
 *     part is then detached: ancs_nimble_media_deinit() frees it).
 *
 * Library: this file's object and libancs_media.a (integrations/c/build.sh)
 * beside the adapter and libancs.a. A firmware that never calls
 * ancs_nimble_media_init() links neither.
 *
 * As the adapter: all of it from the NimBLE host task; a callback may call
 * the functions below but the deinits; storage is the caller's.
 */
#ifndef ANCS_NIMBLE_MEDIA_H
#define ANCS_NIMBLE_MEDIA_H

#include "ams.h"
#include "ancs_nimble.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The application's events: each client's, as ams.h tells them. */
typedef void ancs_nimble_ams_event_fn(void *context, const ancs_ams_event *event);
typedef void ancs_nimble_cts_event_fn(void *context, const ancs_cts_event *event);

/* The longest value kept from Entity Attribute's long read: ATT's largest attribute value by
 * default; a watch that shows less may define it lower (a longer value is kept to it, as
 * ams.h's max_value_length keeps it). */
#ifndef ANCS_NIMBLE_MEDIA_VALUE_MAX
#define ANCS_NIMBLE_MEDIA_VALUE_MAX 512
#endif
/* Operations waiting for the bearer: one CCCD write per characteristic, a write or read of each client. */
#define ANCS_NIMBLE_MEDIA_QUEUE 6

struct ancs_nimble_media_op {
    uint8_t kind;        /* ancs_nimble_media.c */
    uint8_t target;      /* the characteristic */
    uint8_t length;      /* of bytes (a write) */
    bool enable;         /* a CCCD write: on or off */
    uint32_t token;      /* the client's, for its result */
    uint8_t bytes[8];    /* a write: a registration (3 to 6 bytes), a command (1), a selection (2) */
};

typedef struct ancs_nimble_media {
    ancs_ams_client ams;
    ancs_cts_client cts;
    ancs_nimble *adapter;               /* NULL once the adapter was deinitialised */
    ancs_nimble_ams_event_fn *on_ams;   /* NULL: AMS not used */
    ancs_nimble_cts_event_fn *on_cts;   /* NULL: CTS not used */
    void *context;
    struct ancs_nimble_media *self;     /* with magic: this storage holds an initialised media part */
    uint32_t magic;
    /* discovered handles (0: not found) */
    uint16_t ams_start, ams_end, rc_value, rc_cccd, eu_value, eu_cccd, ea_value;
    uint16_t cts_start, cts_end, ct_value, ct_cccd, lti_value;
    uint16_t values[8];                 /* characteristic value handles of the service being discovered */
    uint8_t value_count;
    uint8_t phase;                      /* discovery (ancs_nimble_media.c) */
    uint8_t wanted;                     /* services to look for (again, once the running discovery ends) */
    uint8_t discovering;                /* services the running discovery looks for */
    uint8_t epoch;                      /* the adapter's link instance this state is of */
    bool looked;                        /* discovery was asked for on this link (ANCS found) */
    bool encrypted;                     /* the link was seen encrypted */
    bool awaits_encryption;             /* discovery refused on a plain link: again once encrypted */
    bool discover_due;                  /* discovery failed: again at discover_at */
    uint64_t discover_at;
    bool ams_linked, cts_linked;        /* the client was told link up on this link */
    bool ams_published;                 /* AMS found, as the client was last told */
    bool stopped;                       /* ancs_nimble_media_stop: nothing started until _start */
    bool in_flight;                     /* an operation or a discovery of ours is on the air */
    struct ancs_nimble_media_op current;
    struct ancs_nimble_media_op queue[ANCS_NIMBLE_MEDIA_QUEUE];
    uint8_t queued;
    uint8_t tries;                      /* the queue's head refused for want of buffers */
    bool head_due;                      /* the head tried again at head_at */
    uint64_t head_at;
    bool failed_due[2];                 /* an operation of AMS [0] or CTS [1] that could not go: told from the timer */
    struct ancs_nimble_media_op failed[2];
    ancs_status failed_status[2];
    uint64_t last_ms;                   /* the adapter's clock when last read (once detached, the clients' time) */
    uint16_t read_length;
    bool read_cut;                      /* the value was longer than `value` */
    uint8_t value[ANCS_NIMBLE_MEDIA_VALUE_MAX];
} ancs_nimble_media;

/* Attaches the media part to an initialised adapter (one part per adapter).
 * ams_config as in ams.h (NULL: the defaults); on_ams or on_cts NULL leaves
 * that service alone (not both). If the adapter holds the phone's link
 * already, AMS and CTS are looked for at once. 0; BLE_HS_EINVAL (arguments,
 * a client refused its configuration), BLE_HS_EALREADY (the adapter has a
 * media part). */
int ancs_nimble_media_init(ancs_nimble_media *media, ancs_nimble *adapter, const ancs_ams_config *ams_config,
                           ancs_nimble_ams_event_fn *on_ams, ancs_nimble_cts_event_fn *on_cts, void *context);

/* Detaches and frees: the sessions end (commands end with
 * ANCS_ERR_SESSION_ENDED; notifications are left on: ancs_nimble_media_stop
 * first to turn them off). BLE_HS_EBUSY, changing nothing, while an
 * operation of the part is on the air or waiting for it (the stop's CCCD
 * writes, say: call it again after they went, or after
 * BLE_GAP_EVENT_DISCONNECT); 0 otherwise. */
int ancs_nimble_media_deinit(ancs_nimble_media *media);

/* Leaves AMS and CTS on the link (their notifications turned off,
 * ancs_ams_stop and ancs_cts_stop), or starts them again
 * (BLE_HS_ENOTCONN without a link). 0. */
int ancs_nimble_media_stop(ancs_nimble_media *media);
int ancs_nimble_media_start(ancs_nimble_media *media);

/* ancs_ams_perform on the adapter's clock: ANCS_OK and *request_id, then
 * ANCS_AMS_EVENT_COMMAND_DONE; or why not (also told as COMMAND_DONE). */
ancs_status ancs_nimble_ams_perform(ancs_nimble_media *media, uint8_t command, uint32_t *request_id);

/* What is playing now, and the phone's time now (ams.h), on the adapter's clock. */
bool ancs_nimble_ams_playback(ancs_nimble_media *media, ancs_ams_playback *playback);
bool ancs_nimble_phone_time(ancs_nimble_media *media, ancs_current_time *time);

/* ancs_nimble_ams_perform from another task (a UI task's button): the
 * request (ancs_nimble.h) with kind ANCS_NIMBLE_AMS_PERFORM and the command in
 * `action`, run on the adapter's queue; `status` and `request_id` as
 * ancs_nimble_ams_perform gives them (ANCS_ERR_AMS_NOT_READY if the part
 * was detached meanwhile), then `done`. The one function of the part safe to
 * call from any task. 0; BLE_HS_EINVAL without a part attached, a request or a queue. */
int ancs_nimble_media_post(ancs_nimble_media *media, ancs_nimble_request *request);

/* The clients, for what the functions above do not cover (ancs_ams_text, …). */
ancs_ams_client *ancs_nimble_ams(ancs_nimble_media *media);
ancs_cts_client *ancs_nimble_cts(ancs_nimble_media *media);

#ifdef __cplusplus
}
#endif
#endif /* ANCS_NIMBLE_MEDIA_H */
