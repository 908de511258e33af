#!/usr/bin/python3
"""A small real service that owns org.freedesktop.NetworkManager on a private bus and
answers org.freedesktop.DBus.Properties Get/GetAll from scripted objects, for the
probe tests (NetworkProbeTests). Nothing in it is NetworkManager's: only the D-Bus
surface the probe reads.

    fake-networkmanager.py BUS_ADDRESS STATE_JSON

STATE_JSON: {"objects": {PATH: {INTERFACE: {PROPERTY: [SIGNATURE, VALUE]}}}, "hang": false}
with SIGNATURE one of b u s o ao. It prints "ready" once it owns the name, then takes
one JSON command per line on stdin:

    {"set": {PATH: {INTERFACE: {PROPERTY: [SIGNATURE, VALUE]}}}}
        changes those properties and emits PropertiesChanged for each (path, interface)
    {"hang": true}   Get and GetAll are never answered from then on (false: answered again)
    {"drop": PATH}   the object is gone (UnknownObject)

and says "ok" after each. End of stdin: it exits.
"""
import json
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

ROOT = "/org/freedesktop/NetworkManager"
PROPERTIES = "org.freedesktop.DBus.Properties"


def typed(signature, value):
    if signature == "b":
        return dbus.Boolean(value)
    if signature == "u":
        return dbus.UInt32(value)
    if signature == "s":
        return dbus.String(value)
    if signature == "o":
        return dbus.ObjectPath(value)
    if signature == "ao":
        return dbus.Array([dbus.ObjectPath(v) for v in value], signature="o")
    raise ValueError("unknown signature " + signature)


class Fake(dbus.service.FallbackObject):
    def __init__(self, bus, state):
        super().__init__(bus, ROOT)
        self.objects = state.get("objects", {})
        self.hang = state.get("hang", False)
        self.held = []  # the callbacks of calls never answered

    def lookup(self, rel, interface):
        path = ROOT if rel == "/" else ROOT + rel
        if path not in self.objects:
            raise dbus.exceptions.DBusException("no object " + path, name="org.freedesktop.DBus.Error.UnknownObject")
        return self.objects[path].get(interface, {})

    @dbus.service.method(PROPERTIES, in_signature="s", out_signature="a{sv}", rel_path_keyword="rel",
                         async_callbacks=("ok", "err"))
    def GetAll(self, interface, rel, ok, err):
        if self.hang:
            self.held.append((ok, err))
            return
        try:
            props = self.lookup(rel, interface)
        except dbus.exceptions.DBusException as e:
            err(e)
            return
        ok(dbus.Dictionary({k: typed(s, v) for k, (s, v) in props.items()}, signature="sv"))

    @dbus.service.method(PROPERTIES, in_signature="ss", out_signature="v", rel_path_keyword="rel",
                         async_callbacks=("ok", "err"))
    def Get(self, interface, name, rel, ok, err):
        if self.hang:
            self.held.append((ok, err))
            return
        try:
            props = self.lookup(rel, interface)
        except dbus.exceptions.DBusException as e:
            err(e)
            return
        if name not in props:
            err(dbus.exceptions.DBusException("no property " + name, name="org.freedesktop.DBus.Error.InvalidArgs"))
            return
        signature, value = props[name]
        ok(typed(signature, value))

    @dbus.service.signal(PROPERTIES, signature="sa{sv}as", rel_path_keyword="rel")
    def PropertiesChanged(self, interface, changed, invalidated, rel=None):
        pass

    def command(self, line):
        command = json.loads(line)
        if "hang" in command:
            self.hang = command["hang"]
        if "drop" in command:
            self.objects.pop(command["drop"], None)
        for path, interfaces in command.get("set", {}).items():
            for interface, props in interfaces.items():
                self.objects.setdefault(path, {}).setdefault(interface, {}).update(props)
                changed = dbus.Dictionary({k: typed(s, v) for k, (s, v) in props.items()}, signature="sv")
                rel = "/" if path == ROOT else path[len(ROOT):]
                self.PropertiesChanged(interface, changed, dbus.Array([], signature="s"), rel=rel)


def main():
    address, state_file = sys.argv[1], sys.argv[2]
    with open(state_file) as f:
        state = json.load(f)
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    fake = Fake(bus, state)
    name = dbus.service.BusName("org.freedesktop.NetworkManager", bus, do_not_queue=True)
    loop = GLib.MainLoop()

    def on_input(source, condition):
        line = sys.stdin.readline()
        if not line:
            loop.quit()
            return False
        if line.strip():
            fake.command(line)
            print("ok", flush=True)
        return True

    GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP, on_input)
    print("ready", flush=True)
    loop.run()
    del name


if __name__ == "__main__":
    main()
