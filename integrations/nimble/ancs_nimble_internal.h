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

/* What the adapter tells its media part, from the host task: three calls,
 * so that an adapter without one carries little. The part follows the link
 * (its loss by the adapter's epoch, ANCS found, encryption) when it settles. */
struct ancs_nimble_media_hooks {
    /* After every event of the adapter: the link followed, deadlines passed
     * acted on, the next operation started if the ATT bearer is free
     * (ancs_nimble_bearer_free_); then the part's earliest deadline, if any. */
    bool (*settle)(struct ancs_nimble_media *media, uint64_t *deadline_ms);
    /* A notification (or indication) on the link held, before the adapter
     * looks at it: true if it was the part's alone (Service Changed is the
     * adapter's too: false). */
    bool (*notified)(struct ancs_nimble_media *media, uint16_t handle, const uint8_t *bytes, size_t length);
    /* The adapter is deinitialised: the part's sessions end, it is detached. */
    void (*detach)(struct ancs_nimble_media *media);
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
