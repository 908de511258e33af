import Foundation
import Glibc
import Testing
import TestSupport
@testable import PrefetchCore

/// What systemd's environment says (`NOTIFY_SOCKET`, `WATCHDOG_USEC`/`WATCHDOG_PID`,
/// `JOURNAL_STREAM`), read as sd_notify(3), sd_watchdog_enabled(3) and systemd.exec(5) say;
/// and datagrams sent through a real socket, a path's and an abstract name's.
@Suite struct SystemdNotifyTests {
    static let longPath = "/" + String(repeating: "a", count: 106)  // 107 bytes and a NUL: what sun_path holds

    @Test(arguments: [
        (nil, nil),
        ("", nil),
        ("/run/systemd/notify", NotifySocket.Address.path("/run/systemd/notify")),
        ("@/org/freedesktop/systemd1/notify/42", .abstract("/org/freedesktop/systemd1/notify/42")),
        ("@", nil),                                    // no name
        ("run/systemd/notify", nil),                   // relative
        ("vsock:2:1234", nil),                         // a VM manager's, not a service's
        (SystemdNotifyTests.longPath, .path(SystemdNotifyTests.longPath)),
        (SystemdNotifyTests.longPath + "b", nil),      // no room for the NUL
        ("@" + String(repeating: "n", count: 107), .abstract(String(repeating: "n", count: 107))),
        ("@" + String(repeating: "n", count: 108), nil),
    ] as [(String?, NotifySocket.Address?)])
    func notifySocketAddresses(value: String?, expected: NotifySocket.Address?) {
        #expect(NotifySocket.Address.parse(value) == expected)
    }

    @Test(arguments: [
        ([:], nil),
        (["WATCHDOG_USEC": "30000000"], 30_000_000),
        (["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4242"], 30_000_000),   // this process
        (["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"], nil),             // another one's
        (["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "x"], nil),
        (["WATCHDOG_USEC": "0"], nil),
        (["WATCHDOG_USEC": "-5"], nil),
        (["WATCHDOG_USEC": "2min"], nil),
        (["WATCHDOG_PID": "4242"], nil),
    ] as [([String: String], UInt64?)])
    func watchdogFromTheEnvironment(environment: [String: String], expected: UInt64?) {
        #expect(SystemdEnvironment.watchdogMicroseconds(environment, pid: 4242) == expected)
    }

    @Test func journalStreamValues() {
        #expect(JournalStream.parse("64769:1234567").map { [$0.device, $0.inode] } == [64769, 1_234_567])
        for bad in [nil, "", "64769", "64769:", ":12", "a:b", "1:2:3", "-1:2"] as [String?] {
            #expect(JournalStream.parse(bad) == nil, "\(bad ?? "nil")")
        }
    }

    /// A descriptor matches the `JOURNAL_STREAM` of its own device and inode, not another file's.
    @Test func aDescriptorIsTheJournalStreamByDeviceAndInode() throws {
        let dir = try TemporaryFolder()
        let path = try dir.write("stream", "")
        let other = try dir.write("other", "")
        let fd = open(path, O_WRONLY)
        defer { close(fd) }
        var info = stat(), otherInfo = stat()
        #expect(fstat(fd, &info) == 0 && stat(other, &otherInfo) == 0)
        #expect(JournalStream.connects(fd, environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]))
        #expect(!JournalStream.connects(fd, environment: ["JOURNAL_STREAM": "\(otherInfo.st_dev):\(otherInfo.st_ino)"]))
        #expect(!JournalStream.connects(fd, environment: [:]))
    }

    /// Messages reach a real datagram socket bound at a path and at an abstract name, whole.
    @Test(arguments: ["path", "abstract"])
    func datagramsReachARealSocket(kind: String) throws {
        let dir = try TemporaryFolder()
        let name = kind == "path" ? dir.file("notify") : "@prefetch-unit-" + UUID().uuidString
        let receiver = try #require(Self.bind(name))
        defer { close(receiver) }
        let address = try #require(NotifySocket.Address.parse(name))
        let sender = try NotifySocket.open(address).get()
        try sender.send("READY=1\nSTATUS=loaded 3 feeds").get()
        try sender.send("WATCHDOG=1").get()
        #expect(Self.receive(receiver) == "READY=1\nSTATUS=loaded 3 feeds")
        #expect(Self.receive(receiver) == "WATCHDOG=1")
    }

    /// Nobody listening: the send fails with an errno, it does not crash or hang.
    @Test func aSocketNobodyListensOnFails() throws {
        let dir = try TemporaryFolder()
        let sender = try NotifySocket.open(.path(dir.file("gone"))).get()
        #expect(throws: Errno(ENOENT)) { try sender.send("READY=1").get() }
    }

    /// A datagram socket bound at `name` (a path, or `@name` in the abstract namespace).
    static func bind(_ name: String) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = name.hasPrefix("@") ? [0] + Array(name.utf8.dropFirst()) : Array(name.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { for (i, b) in bytes.enumerated() { $0[i] = b } }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count + (name.hasPrefix("@") ? 0 : 1))
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) } }
        guard bound == 0 else { close(fd); return nil }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    static func receive(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count < 0 ? nil : String(decoding: buffer[0..<count], as: UTF8.self)
    }
}
