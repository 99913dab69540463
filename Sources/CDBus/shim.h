// libdbus-1 (Debian: libdbus-1-dev), found through pkg-config "dbus-1".
#include <dbus/dbus.h>
