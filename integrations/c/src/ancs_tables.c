/* The C API's constant tables: status names and the default display attributes. */
#include "ancs.h"

static const ancs_attribute_request default_display[] = {
    { ANCS_ATTR_APP_IDENTIFIER, 0 },
    { ANCS_ATTR_TITLE, 64 },
    { ANCS_ATTR_MESSAGE, 256 },
    { ANCS_ATTR_DATE, 0 },
};

const ancs_attribute_request *
ancs_default_display_attributes(size_t *count)
{
    if (count) *count = sizeof default_display / sizeof default_display[0];
    return default_display;
}

const char *
ancs_status_name(ancs_status status)
{
    switch (status) {
    case ANCS_OK: return "ok";
    case ANCS_ATT_WRITE_NOT_PERMITTED: return "write not permitted (ATT 0x03: notifications not shared)";
    case ANCS_ATT_CCCD_IMPROPERLY_CONFIGURED: return "CCCD improperly configured (ATT 0xFD)";
    case ANCS_ATT_INSUFFICIENT_AUTHENTICATION: return "insufficient authentication (ATT 0x05)";
    case ANCS_ATT_INSUFFICIENT_AUTHORIZATION: return "insufficient authorization (ATT 0x08)";
    case ANCS_ATT_INSUFFICIENT_ENCRYPTION: return "insufficient encryption (ATT 0x0F)";
    case ANCS_ATT_UNKNOWN_COMMAND: return "unknown command (ANCS 0xA0)";
    case ANCS_ATT_INVALID_COMMAND: return "invalid command (ANCS 0xA1)";
    case ANCS_ATT_INVALID_PARAMETER: return "invalid parameter (ANCS 0xA2)";
    case ANCS_ATT_ACTION_FAILED: return "action failed (ANCS 0xA3)";
    case ANCS_ERR_TRANSPORT: return "transport failure";
    case ANCS_ERR_INVALID_RESPONSE: return "invalid response";
    case ANCS_ERR_TIMED_OUT: return "timed out";
    case ANCS_ERR_CANCELLED: return "cancelled";
    case ANCS_ERR_SESSION_ENDED: return "session ended";
    case ANCS_ERR_NOT_CONNECTED: return "not connected";
    case ANCS_ERR_DATA_SOURCE_UNAVAILABLE: return "Data Source unavailable";
    case ANCS_ERR_ACTION_NOT_AVAILABLE: return "the notification offers no such action";
    case ANCS_ERR_UNKNOWN_NOTIFICATION: return "no notification with this UID in this session";
    case ANCS_ERR_ENCODING: return "the request cannot be encoded";
    case ANCS_ERR_TOO_MANY_REQUESTS: return "too many requests outstanding";
    case ANCS_ERR_NOTIFICATION_REMOVED: return "the notification was removed before the request was written";
    case ANCS_ERR_INVALID_ARGUMENT: return "invalid argument";
    case ANCS_ERR_STORAGE: return "storage not initialized or too small";
    case ANCS_ERR_BUSY: return "called from one of the instance's callbacks";
    default: return status > 0 && status < 256 ? "ATT error" : "unknown status";
    }
}
