import Foundation
import Glibc

/// Ports on 127.0.0.1 for the real servers the end-to-end tests start (nginx, squid,
/// node_exporter, openssl s_server): one that is free, and whether one is listening.
enum LoopbackPort {
    /// A port nothing listens on now (bind 127.0.0.1:0, read it, close).
    static func free() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw OriginError.system("bind", errno) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts a connection on `port` now.
    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Waits up to `seconds` for `port` to accept, giving up early when `process` (the server
    /// started for it) has exited. Whether it accepts.
    static func waitUntilAccepting(_ port: Int, process: Process? = nil, seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if accepts(port) { return true }
            if let process, !process.isRunning { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return accepts(port)
    }
}
