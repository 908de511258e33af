#ifndef PREFETCH_CSHIMS_SDBUS_H
#define PREFETCH_CSHIMS_SDBUS_H

#include <stddef.h>
#include <stdint.h>

/*
 * sd-bus (libsystemd's D-Bus client), loaded at run time with dlopen, never linked:
 * only a machine with a system bus loads libsystemd.so.0 and what it needs, so
 * `validate` and a machine without D-Bus never do (SPEC §4, §7). The build needs no
 * libsystemd-dev: the few calls the NetworkManager probe makes are declared here as
 * function pointers with the signatures of sd-bus.h (systemd 221 and later, where
 * sd-bus became public; each is in the LIBSYSTEMD_221 symbol version), and each is
 * looked up by name. None of them is variadic: messages are built with
 * sd_bus_message_append_basic and read with read_basic, peek_type, skip and
 * enter/exit_container (sd-bus's own variadic append/read are not used).
 */

typedef struct sd_bus sd_bus;
typedef struct sd_bus_message sd_bus_message;

/* sd_bus_error as sd-bus.h lays it out. */
typedef struct {
    const char * _Nullable name;
    const char * _Nullable message;
    int _need_free;
} CShims_sd_bus_error;

/* The calls, as sd-bus.h declares them (the names without the sd_ prefix), with
 * nullability spelled out so that Swift sees them as they are used. */
typedef struct {
    int (* _Nonnull bus_new)(sd_bus * _Nullable * _Nonnull ret);
    int (* _Nonnull bus_set_address)(sd_bus * _Nonnull bus, const char * _Nonnull address);
    int (* _Nonnull bus_set_bus_client)(sd_bus * _Nonnull bus, int b);
    int (* _Nonnull bus_start)(sd_bus * _Nonnull bus);
    int (* _Nonnull bus_get_fd)(sd_bus * _Nonnull bus);
    int (* _Nonnull bus_get_events)(sd_bus * _Nonnull bus);
    int (* _Nonnull bus_get_timeout)(sd_bus * _Nonnull bus, uint64_t * _Nonnull timeout_usec);
    int (* _Nonnull bus_process)(sd_bus * _Nonnull bus, sd_bus_message * _Nullable * _Nullable ret);
    int (* _Nonnull bus_send)(sd_bus * _Nonnull bus, sd_bus_message * _Nonnull m, uint64_t * _Nullable cookie);
    void (* _Nonnull bus_close)(sd_bus * _Nonnull bus);
    sd_bus * _Nullable (* _Nonnull bus_unref)(sd_bus * _Nullable bus);
    int (* _Nonnull message_new_method_call)(sd_bus * _Nonnull bus, sd_bus_message * _Nullable * _Nonnull m,
                                             const char * _Nullable destination, const char * _Nonnull path,
                                             const char * _Nullable interface, const char * _Nonnull member);
    int (* _Nonnull message_set_auto_start)(sd_bus_message * _Nonnull m, int b);
    int (* _Nonnull message_append_basic)(sd_bus_message * _Nonnull m, char type, const void * _Nonnull p);
    sd_bus_message * _Nullable (* _Nonnull message_unref)(sd_bus_message * _Nullable m);
    int (* _Nonnull message_get_type)(sd_bus_message * _Nonnull m, uint8_t * _Nonnull type);
    int (* _Nonnull message_get_reply_cookie)(sd_bus_message * _Nonnull m, uint64_t * _Nonnull cookie);
    const CShims_sd_bus_error * _Nullable (* _Nonnull message_get_error)(sd_bus_message * _Nonnull m);
    const char * _Nullable (* _Nonnull message_get_path)(sd_bus_message * _Nonnull m);
    const char * _Nullable (* _Nonnull message_get_interface)(sd_bus_message * _Nonnull m);
    const char * _Nullable (* _Nonnull message_get_member)(sd_bus_message * _Nonnull m);
    int (* _Nonnull message_enter_container)(sd_bus_message * _Nonnull m, char type, const char * _Nullable contents);
    int (* _Nonnull message_exit_container)(sd_bus_message * _Nonnull m);
    int (* _Nonnull message_read_basic)(sd_bus_message * _Nonnull m, char type, void * _Nullable p);
    int (* _Nonnull message_peek_type)(sd_bus_message * _Nonnull m, char * _Nullable type,
                                       const char * _Nullable * _Nullable contents);
    int (* _Nonnull message_skip)(sd_bus_message * _Nonnull m, const char * _Nullable types);
} CShims_sdbus;

/* dlopen("libsystemd.so.0") and every call above looked up in it: the table, or NULL
 * with the reason (dlerror's text, or the symbol that is missing) in `error`. Called
 * once per process (SDBus.shared); the library is never unloaded. */
const CShims_sdbus * _Nullable CShims_sdbus_load(char * _Nonnull error, size_t size);

#endif
