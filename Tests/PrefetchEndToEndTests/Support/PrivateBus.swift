import Foundation
import Glibc
import PrefetchCore
import TestSupport

/// A real `dbus-daemon` on a private socket, with a configuration of its own (one
/// `<listen>`, a policy that allows every user everything), for the NetworkManager probe's
/// tests: `address` goes into `DBUS_SYSTEM_BUS_ADDRESS`. Killed when released (SIGKILL: a
/// child of the test process inherits its blocked SIGTERM, as `SquidProxy` says).
final class PrivateBus {
    static let daemon = ["/usr/bin/dbus-daemon", "/bin/dbus-daemon"].first { FileManager.default.isExecutableFile(atPath: $0) }

    let socket: String
    var address: String { "unix:path=\(socket)" }
    private let process = Process()

    /// `folder` must be one that the users who connect can enter.
    init(in folder: TemporaryFolder, name: String = "bus") throws {
        socket = folder.file(name)
        let config = try folder.write(name + ".conf", """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_destination="*" eavesdrop="true"/>
                <allow receive_sender="*"/>
              </policy>
            </busconfig>
            """)
        process.executableURL = URL(fileURLWithPath: Self.daemon ?? "/usr/bin/dbus-daemon")
        process.arguments = ["--config-file=\(config)", "--nofork", "--print-address"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // It prints its address once it listens.
        let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        guard line.hasPrefix("unix:") else { throw Errno(ECONNREFUSED) }
        chmod(socket, 0o777)
    }

    deinit { stop() }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// A small real service that owns `org.freedesktop.NetworkManager` on a bus and answers
/// `Properties.Get`/`GetAll` from scripted objects (`Fixtures/networkmanager/fake-networkmanager.py`,
/// Python with python3-dbus and GLib's main loop): `set` changes properties at run time
/// and emits `PropertiesChanged`, `hang` makes it stop answering. Its state is built with
/// `FakeNetworkManager.objects`. Stopped when released.
final class FakeNetworkManager {
    static let python = "/usr/bin/python3"
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/networkmanager/fake-networkmanager.py").standardized.path

    /// Whether this machine can run it (python3-dbus, python3-gi, dbus-daemon).
    static let available: Bool = {
        guard PrivateBus.daemon != nil, FileManager.default.isExecutableFile(atPath: python) else { return false }
        let check = Process()
        check.executableURL = URL(fileURLWithPath: python)
        check.arguments = ["-c", "import dbus, dbus.mainloop.glib; from gi.repository import GLib"]
        check.standardOutput = FileHandle.nullDevice
        check.standardError = FileHandle.nullDevice
        guard (try? check.run()) != nil else { return false }
        check.waitUntilExit()
        return check.terminationStatus == 0
    }()

    private let process = Process()
    private let input = Pipe()
    private let lines = LineReader()

    init(bus: PrivateBus, objects: [String: Any], hang: Bool = false, in folder: TemporaryFolder) throws {
        let state = try JSONSerialization.data(withJSONObject: ["objects": objects, "hang": hang], options: [.sortedKeys])
        let file = try folder.write("nm-state-\(UUID().uuidString).json", state)
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = [Self.script, bus.address, file]
        process.standardInput = input
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        lines.read(out.fileHandleForReading)
        guard lines.wait(for: "ready", seconds: 20) else { throw Errno(ETIMEDOUT) }
    }

    deinit {
        try? input.fileHandleForWriting.close()  // it exits at the end of its input
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    private func send(_ command: [String: Any]) throws {
        let before = lines.count("ok")
        var data = try JSONSerialization.data(withJSONObject: command, options: [.sortedKeys])
        data.append(UInt8(ascii: "\n"))
        try input.fileHandleForWriting.write(contentsOf: data)
        guard lines.wait(for: "ok", count: before + 1, seconds: 20) else { throw Errno(ETIMEDOUT) }
    }

    /// Changes properties (`objects`' shape) and emits `PropertiesChanged` for each.
    func set(_ objects: [String: Any]) throws { try send(["set": objects]) }

    /// From now on Get and GetAll are never answered.
    func hang() throws { try send(["hang": true]) }

    static let root = "/org/freedesktop/NetworkManager"
    static let manager = "org.freedesktop.NetworkManager"
    static let active = "org.freedesktop.NetworkManager.Connection.Active"
    static let device = "org.freedesktop.NetworkManager.Device"

    /// A device: interface, NMDeviceType, NMMetered, connectivity (NMConnectivityState).
    struct Device {
        var interface: String
        var type: UInt32
        var metered: UInt32
        var connectivity: UInt32 = 4
    }

    /// An active connection.
    struct Connection {
        var type: String
        var vpn = false
        var ownsDefaultRoute = false
        var devices: [Device]
    }

    /// The objects of a NetworkManager whose primary connection is `primary` (the first
    /// active connection), with `others` beside it.
    static func objects(startup: Bool = false, metered: UInt32, primary: Connection?, others: [Connection] = []) -> [String: Any] {
        var objects: [String: Any] = [:]
        var devicePaths: [String: String] = [:]
        var activePaths: [String] = []
        for (index, connection) in ([primary].compactMap { $0 } + others).enumerated() {
            let path = "\(root)/ActiveConnection/\(index + 1)"
            activePaths.append(path)
            var paths: [String] = []
            for device in connection.devices {
                let devicePath = devicePaths[device.interface] ?? "\(root)/Devices/\(devicePaths.count + 1)"
                devicePaths[device.interface] = devicePath
                paths.append(devicePath)
                objects[devicePath] = [Self.device: ["Interface": ["s", device.interface], "DeviceType": ["u", device.type],
                                                     "Metered": ["u", device.metered], "Ip4Connectivity": ["u", device.connectivity],
                                                     "Ip6Connectivity": ["u", 0], "State": ["u", 100]]]
            }
            objects[path] = [Self.active: ["Type": ["s", connection.type], "Vpn": ["b", connection.vpn], "State": ["u", 2],
                                           "Default": ["b", connection.ownsDefaultRoute], "Default6": ["b", false],
                                           "Devices": ["ao", paths]]]
        }
        objects[root] = [Self.manager: ["Startup": ["b", startup], "Metered": ["u", metered],
                                        "PrimaryConnection": ["o", primary == nil ? "/" : activePaths[0]],
                                        "PrimaryConnectionType": ["s", primary?.type ?? ""],
                                        "ActiveConnections": ["ao", activePaths], "Version": ["s", "1.42.4"]]]
        return objects
    }

    /// A wired link whose `Metered` is `metered`.
    static func wired(metered: UInt32, startup: Bool = false) -> [String: Any] {
        objects(startup: startup, metered: metered,
                primary: Connection(type: "802-3-ethernet", ownsDefaultRoute: true, devices: [Device(interface: "eth0", type: 1, metered: metered)]))
    }
}

/// A Unix socket that accepts connections and never says a word (a hung dbus-daemon).
final class SilentSocket: @unchecked Sendable {
    let path: String
    var address: String { "unix:path=\(path)" }
    private let fd: Int32
    private let lock = NSLock()
    private var accepted: [Int32] = []
    private var closed = false

    init(_ path: String) throws {
        self.path = path
        fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { for (i, b) in path.utf8.enumerated() { $0[i] = b } }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else { throw Errno(errno) }
        chmod(path, 0o777)
        Thread.detachNewThread { [self] in
            while true {
                var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&entry, 1, 100)
                let stop = lock.withLock { closed }
                if stop { return }
                guard ready > 0 else { continue }
                let client = accept(fd, nil, nil)
                if client >= 0 { lock.withLock { accepted.append(client) } }  // held open, never read or written
            }
        }
    }

    deinit {
        lock.withLock { closed = true }
        usleep(150_000)
        for client in lock.withLock({ accepted }) { close(client) }
        close(fd)
    }
}

/// The lines a child writes, each with the moment it arrived, read on a thread of its own.
final class LineReader: @unchecked Sendable {
    private let condition = NSCondition()
    private var received: [(at: Date, line: String)] = []

    func read(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    condition.lock()
                    received.append((Date(), line))
                    condition.broadcast()
                    condition.unlock()
                }
            }
        }
    }

    var all: [(at: Date, line: String)] {
        condition.lock()
        defer { condition.unlock() }
        return received
    }

    func count(_ line: String) -> Int { all.filter { $0.line == line }.count }

    /// Waits until `line` has arrived `count` times.
    func wait(for line: String, count: Int = 1, seconds: Double) -> Bool {
        first(within: seconds) { lines in lines.filter { $0.line == line }.count >= count } != nil
    }

    /// Waits until `matches` holds for the lines so far; the moment it first did.
    @discardableResult
    func first(within seconds: Double, where matches: ([(at: Date, line: String)]) -> Bool) -> Date? {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while !matches(received) {
            guard Date() < deadline else { return nil }
            _ = condition.wait(until: min(deadline, Date().addingTimeInterval(0.1)))
        }
        return Date()
    }
}
