import Foundation
import Glibc
import PrefetchCore

/// systemd's side of the notification protocol, for tests: an AF_UNIX datagram socket bound
/// at a path or an abstract name (`@name`), which records every datagram with the moment it
/// arrived, on its own thread, until it is closed.
final class NotifyListener: @unchecked Sendable {
    /// What `NOTIFY_SOCKET` should say.
    let name: String
    private let fd: Int32
    private let lock = NSLock()
    private var received: [(at: Date, message: String)] = []
    private var closed = false
    private let done = DispatchSemaphore(value: 0)

    /// A socket at `name`: an absolute path, or `@` and a name in the abstract namespace.
    init(_ name: String) throws {
        self.name = name
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let abstract = name.hasPrefix("@")
        let bytes = abstract ? [0] + Array(name.utf8.dropFirst()) : Array(name.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { for (i, b) in bytes.enumerated() { $0[i] = b } }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard fd >= 0, bound == 0 else { throw Errno(errno) }
        var timeout = timeval(tv_sec: 0, tv_usec: 50_000)  // so `close` is noticed
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        Thread.detachNewThread { [self] in receiveLoop() }
    }

    deinit { close() }

    func close() {
        let first = lock.withLock { () -> Bool in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        done.wait()
        Glibc.close(fd)
        if !name.hasPrefix("@") { unlink(name) }
    }

    private func receiveLoop() {
        var buffer = [UInt8](repeating: 0, count: 8192)
        while !lock.withLock({ closed }) {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { continue }
            let message = String(decoding: buffer[0..<count], as: UTF8.self)
            lock.withLock { received.append((Date(), message)) }
        }
        done.signal()
    }

    /// Every datagram so far, oldest first.
    var messages: [(at: Date, message: String)] { lock.withLock { received } }

    /// Every `KEY=VALUE` line so far (a datagram may hold several), with its datagram's moment.
    var lines: [(at: Date, line: String)] {
        messages.flatMap { message in message.message.split(separator: "\n").map { (message.at, String($0)) } }
    }

    /// The moments of the `WATCHDOG=1` pings.
    var pings: [Date] { lines.filter { $0.line == "WATCHDOG=1" }.map(\.at) }

    /// The first line that `matches`, waiting up to `seconds` for it.
    func waitFor(_ seconds: Double = 10, _ matches: (String) -> Bool) -> (at: Date, line: String)? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let found = lines.first(where: { matches($0.line) }) { return found }
            if Date() > deadline { return nil }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }
}
