#include "CShimsSDBus.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static CShims_sdbus loaded;

const CShims_sdbus *CShims_sdbus_load(char *error, size_t size) {
    CShims_sdbus *table = &loaded;
    void *library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *why = dlerror();
        snprintf(error, size, "%s", why ? why : "libsystemd.so.0 not found");
        return NULL;
    }
    memset(table, 0, sizeof *table);
    /* Each name, looked up and stored in its typed slot; the first one missing fails. */
#define CSHIMS_SDBUS_SYMBOL(slot, name)                                                  \
    do {                                                                                 \
        void *found = dlsym(library, name);                                              \
        if (!found) {                                                                    \
            snprintf(error, size, "libsystemd.so.0 has no %s (systemd 221 or later needed)", name); \
            return NULL;                                                                 \
        }                                                                                \
        memcpy(&table->slot, &found, sizeof found);                                      \
    } while (0)
    CSHIMS_SDBUS_SYMBOL(bus_new, "sd_bus_new");
    CSHIMS_SDBUS_SYMBOL(bus_set_address, "sd_bus_set_address");
    CSHIMS_SDBUS_SYMBOL(bus_set_bus_client, "sd_bus_set_bus_client");
    CSHIMS_SDBUS_SYMBOL(bus_start, "sd_bus_start");
    CSHIMS_SDBUS_SYMBOL(bus_get_fd, "sd_bus_get_fd");
    CSHIMS_SDBUS_SYMBOL(bus_get_events, "sd_bus_get_events");
    CSHIMS_SDBUS_SYMBOL(bus_get_timeout, "sd_bus_get_timeout");
    CSHIMS_SDBUS_SYMBOL(bus_process, "sd_bus_process");
    CSHIMS_SDBUS_SYMBOL(bus_send, "sd_bus_send");
    CSHIMS_SDBUS_SYMBOL(bus_close, "sd_bus_close");
    CSHIMS_SDBUS_SYMBOL(bus_unref, "sd_bus_unref");
    CSHIMS_SDBUS_SYMBOL(message_new_method_call, "sd_bus_message_new_method_call");
    CSHIMS_SDBUS_SYMBOL(message_set_auto_start, "sd_bus_message_set_auto_start");
    CSHIMS_SDBUS_SYMBOL(message_append_basic, "sd_bus_message_append_basic");
    CSHIMS_SDBUS_SYMBOL(message_unref, "sd_bus_message_unref");
    CSHIMS_SDBUS_SYMBOL(message_get_type, "sd_bus_message_get_type");
    CSHIMS_SDBUS_SYMBOL(message_get_reply_cookie, "sd_bus_message_get_reply_cookie");
    CSHIMS_SDBUS_SYMBOL(message_get_error, "sd_bus_message_get_error");
    CSHIMS_SDBUS_SYMBOL(message_get_path, "sd_bus_message_get_path");
    CSHIMS_SDBUS_SYMBOL(message_get_interface, "sd_bus_message_get_interface");
    CSHIMS_SDBUS_SYMBOL(message_get_member, "sd_bus_message_get_member");
    CSHIMS_SDBUS_SYMBOL(message_enter_container, "sd_bus_message_enter_container");
    CSHIMS_SDBUS_SYMBOL(message_exit_container, "sd_bus_message_exit_container");
    CSHIMS_SDBUS_SYMBOL(message_read_basic, "sd_bus_message_read_basic");
    CSHIMS_SDBUS_SYMBOL(message_peek_type, "sd_bus_message_peek_type");
    CSHIMS_SDBUS_SYMBOL(message_skip, "sd_bus_message_skip");
#undef CSHIMS_SDBUS_SYMBOL
    return table;
}
