/*
 * ancs_nimble_internal.h — what the adapter (ancs_nimble.c) and its media
 * part (ancs_nimble_media.c) share. Not an application's header: the names
 * ending in an underscore may change in any release.
 *
 * The media part is a separate object, so that a firmware that never calls
 * ancs_nimble_media_init() links none of it (nor ams.h's library): the
 * adapter reaches it only through the hooks below, set by that call.
 */
#ifndef ANCS_NIMBLE_INTERNAL_H
#define ANCS_NIMBLE_INTERNAL_H

#include "ancs_nimble.h"

/* What the adapter tells its media part, from the host task. */
struct ancs_nimble_media_hooks {
    void (*ancs_found)(struct ancs_nimble_media *media);      /* ANCS found on the link held: the phone's */
    void (*encrypted)(struct ancs_nimble_media *media);       /* the link held is encrypted now */
    void (*link_gone)(struct ancs_nimble_media *media);       /* the link held is forgotten (dropped, or left) */
    void (*detach)(struct ancs_nimble_media *media);          /* the adapter is deinitialised */
    void (*service_changed)(struct ancs_nimble_media *media, uint16_t start, uint16_t end);
    /* A notification on a handle not the adapter's: true if it was the media part's. */
    bool (*notified)(struct ancs_nimble_media *media, uint16_t handle, const uint8_t *bytes, size_t length);
    /* The ATT bearer is free (nothing of the adapter's in flight or waiting): the next operation may go. */
    void (*pump)(struct ancs_nimble_media *media);
    void (*tick)(struct ancs_nimble_media *media, uint64_t now_ms);
    bool (*deadline)(struct ancs_nimble_media *media, uint64_t *deadline_ms);
    ancs_status (*perform)(struct ancs_nimble_media *media, uint8_t command, uint32_t *request_id);   /* a posted request */
};

/* The adapter's own, for its media part. */
void *ancs_nimble_link_arg_(ancs_nimble *adapter);
ancs_nimble *ancs_nimble_link_of_(void *arg, uint16_t conn, int status);
ancs_status ancs_nimble_result_of_(int status);
bool ancs_nimble_encrypted_(ancs_nimble *adapter);
/* Nothing of the adapter's in flight or waiting for the bearer: an operation may start. */
bool ancs_nimble_bearer_free_(const ancs_nimble *adapter);
/* An operation of the media part ended (writes_in_flight counted it): the adapter's waiting work goes first. */
void ancs_nimble_operation_ended_(ancs_nimble *adapter);
/* The timer armed for the earliest deadline, the media part's included. */
void ancs_nimble_schedule_(ancs_nimble *adapter);
#if ANCS_NIMBLE_LOG
void ancs_nimble_say_(ancs_nimble *adapter, const char *format, ...) __attribute__((format(printf, 2, 3)));
#endif

#endif /* ANCS_NIMBLE_INTERNAL_H */
