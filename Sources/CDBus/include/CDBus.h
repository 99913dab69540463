// The part of libdbus-1's C API that ANCSDBus uses, loaded at run time
// from the system's libdbus-1.so.3 (Debian: libdbus-1-3, on every machine
// with a D-Bus daemon). Nothing is needed at build time: no headers, no
// libdbus-1-dev. The types below are libdbus's stable ABI (1.x); the
// functions are libdbus's own, named with a `cdbus_` prefix.
#ifndef CDBUS_H
#define CDBUS_H
// Linux only: elsewhere the module is empty.
#if defined(__linux__)

#include <stddef.h>
#include <stdint.h>

typedef uint32_t dbus_bool_t;
typedef uint32_t dbus_uint32_t;
typedef int32_t dbus_int32_t;
typedef uint16_t dbus_uint16_t;
typedef int16_t dbus_int16_t;
typedef uint64_t dbus_uint64_t;
typedef int64_t dbus_int64_t;

typedef struct DBusConnection DBusConnection;
typedef struct DBusMessage DBusMessage;

typedef struct DBusError {
    const char *name;
    const char *message;
    unsigned int dummy1 : 1;
    unsigned int dummy2 : 1;
    unsigned int dummy3 : 1;
    unsigned int dummy4 : 1;
    unsigned int dummy5 : 1;
    void *padding1;
} DBusError;

typedef struct DBusMessageIter {
    void *dummy1;
    void *dummy2;
    dbus_uint32_t dummy3;
    int dummy4, dummy5, dummy6, dummy7, dummy8, dummy9, dummy10, dummy11;
    int pad1;
    void *pad2;
    void *pad3;
} DBusMessageIter;

typedef struct { dbus_uint32_t first32; dbus_uint32_t second32; } DBus8ByteStruct;

typedef union {
    unsigned char bytes[8];
    dbus_int16_t i16;
    dbus_uint16_t u16;
    dbus_int32_t i32;
    dbus_uint32_t u32;
    dbus_bool_t bool_val;
    dbus_int64_t i64;
    dbus_uint64_t u64;
    DBus8ByteStruct eight;
    double dbl;
    unsigned char byt;
    char *str;
    int fd;
} DBusBasicValue;

typedef enum { DBUS_BUS_SESSION, DBUS_BUS_SYSTEM, DBUS_BUS_STARTER } DBusBusType;
typedef enum { DBUS_DISPATCH_DATA_REMAINS, DBUS_DISPATCH_COMPLETE, DBUS_DISPATCH_NEED_MEMORY } DBusDispatchStatus;

#define DBUS_NAME_FLAG_DO_NOT_QUEUE 0x4

/// Loads libdbus-1.so.3 and resolves every function below, once. Returns 1
/// on success; 0 with a reason in `reason` (NUL-terminated) otherwise. Call
/// it (and check it) before any other function here.
int cdbus_load(char *reason, size_t length);

// Each line: return type, name, parameters, arguments.
#define CDBUS_FUNCTIONS(F) \
    F(DBusConnection *, dbus_bus_get_private, (DBusBusType type, DBusError *error), (type, error)) \
    F(const char *, dbus_bus_get_unique_name, (DBusConnection *connection), (connection)) \
    F(dbus_bool_t, dbus_bus_register, (DBusConnection *connection, DBusError *error), (connection, error)) \
    F(void, dbus_connection_close, (DBusConnection *connection), (connection)) \
    F(void, dbus_connection_flush, (DBusConnection *connection), (connection)) \
    F(DBusDispatchStatus, dbus_connection_get_dispatch_status, (DBusConnection *connection), (connection)) \
    F(dbus_bool_t, dbus_connection_get_is_connected, (DBusConnection *connection), (connection)) \
    F(dbus_bool_t, dbus_connection_get_unix_fd, (DBusConnection *connection, int *fd), (connection, fd)) \
    F(DBusConnection *, dbus_connection_open_private, (const char *address, DBusError *error), (address, error)) \
    F(DBusMessage *, dbus_connection_pop_message, (DBusConnection *connection), (connection)) \
    F(dbus_bool_t, dbus_connection_read_write, (DBusConnection *connection, int timeout_milliseconds), (connection, timeout_milliseconds)) \
    F(dbus_bool_t, dbus_connection_send, (DBusConnection *connection, DBusMessage *message, dbus_uint32_t *serial), (connection, message, serial)) \
    F(void, dbus_connection_set_exit_on_disconnect, (DBusConnection *connection, dbus_bool_t exit_on_disconnect), (connection, exit_on_disconnect)) \
    F(void, dbus_connection_unref, (DBusConnection *connection), (connection)) \
    F(void, dbus_error_free, (DBusError *error), (error)) \
    F(void, dbus_error_init, (DBusError *error), (error)) \
    F(void, dbus_free, (void *memory), (memory)) \
    F(const char *, dbus_message_get_error_name, (DBusMessage *message), (message)) \
    F(const char *, dbus_message_get_interface, (DBusMessage *message), (message)) \
    F(const char *, dbus_message_get_member, (DBusMessage *message), (message)) \
    F(dbus_bool_t, dbus_message_get_no_reply, (DBusMessage *message), (message)) \
    F(const char *, dbus_message_get_path, (DBusMessage *message), (message)) \
    F(dbus_uint32_t, dbus_message_get_reply_serial, (DBusMessage *message), (message)) \
    F(const char *, dbus_message_get_sender, (DBusMessage *message), (message)) \
    F(int, dbus_message_get_type, (DBusMessage *message), (message)) \
    F(void, dbus_message_iter_abandon_container, (DBusMessageIter *iter, DBusMessageIter *sub), (iter, sub)) \
    F(dbus_bool_t, dbus_message_iter_append_basic, (DBusMessageIter *iter, int type, const void *value), (iter, type, value)) \
    F(dbus_bool_t, dbus_message_iter_append_fixed_array, (DBusMessageIter *iter, int element_type, const void *value, int n_elements), (iter, element_type, value, n_elements)) \
    F(dbus_bool_t, dbus_message_iter_close_container, (DBusMessageIter *iter, DBusMessageIter *sub), (iter, sub)) \
    F(int, dbus_message_iter_get_arg_type, (DBusMessageIter *iter), (iter)) \
    F(void, dbus_message_iter_get_basic, (DBusMessageIter *iter, void *value), (iter, value)) \
    F(void, dbus_message_iter_get_fixed_array, (DBusMessageIter *iter, void *value, int *n_elements), (iter, value, n_elements)) \
    F(char *, dbus_message_iter_get_signature, (DBusMessageIter *iter), (iter)) \
    F(dbus_bool_t, dbus_message_iter_init, (DBusMessage *message, DBusMessageIter *iter), (message, iter)) \
    F(void, dbus_message_iter_init_append, (DBusMessage *message, DBusMessageIter *iter), (message, iter)) \
    F(dbus_bool_t, dbus_message_iter_next, (DBusMessageIter *iter), (iter)) \
    F(dbus_bool_t, dbus_message_iter_open_container, (DBusMessageIter *iter, int type, const char *contained_signature, DBusMessageIter *sub), (iter, type, contained_signature, sub)) \
    F(void, dbus_message_iter_recurse, (DBusMessageIter *iter, DBusMessageIter *sub), (iter, sub)) \
    F(DBusMessage *, dbus_message_new_error, (DBusMessage *reply_to, const char *error_name, const char *error_message), (reply_to, error_name, error_message)) \
    F(DBusMessage *, dbus_message_new_method_call, (const char *destination, const char *path, const char *iface, const char *method), (destination, path, iface, method)) \
    F(DBusMessage *, dbus_message_new_method_return, (DBusMessage *method_call), (method_call)) \
    F(DBusMessage *, dbus_message_new_signal, (const char *path, const char *iface, const char *name), (path, iface, name)) \
    F(DBusMessage *, dbus_message_ref, (DBusMessage *message), (message)) \
    F(void, dbus_message_unref, (DBusMessage *message), (message))

#define CDBUS_DECLARE(type, name, parameters, arguments) type c##name parameters;
CDBUS_FUNCTIONS(CDBUS_DECLARE)
#undef CDBUS_DECLARE

#endif // __linux__
#endif
