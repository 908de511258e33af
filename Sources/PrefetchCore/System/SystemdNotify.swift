import Foundation

/// systemd's service notification socket (sd_notify(3)): each message is one datagram of
/// `KEY=VALUE` lines sent to the AF_UNIX datagram socket that `NOTIFY_SOCKET` names — a
/// path, or, with a leading `@`, a name in the abstract namespace.
///
/// The protocol is written out here rather than linked from libsystemd: systemd documents
/// the datagram as the stable interface and sd_notify(3) ("Standalone Implementations")
/// recommends exactly this to programs that need nothing else from libsystemd; Debian 12's
/// libsystemd0 would load liblzma, libzstd, liblz4, libgcrypt, libgpg-error and libcap into
/// every prefetch process, `plan` and `validate` included (docs/installing.md, "The daemon and systemd").
public final class NotifySocket: @unchecked Sendable {
    /// Where `NOTIFY_SOCKET` points.
    public enum Address: Sendable, Equatable {
        /// A socket file (an absolute path).
        case path(String)
        /// A name in the abstract namespace (`@name`, here without the `@`).
        case abstract(String)

        /// The address in `NOTIFY_SOCKET`; nil when it is unset or empty (not under systemd),
        /// and for what sd_notify(3) refuses as well: a relative path, a `vsock:` address
        /// (VM managers only), or one longer than `sun_path` holds.
        public static func parse(_ value: String?) -> Address? {
            guard let value, let first = value.utf8.first else { return nil }
            let room = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
            switch first {
            case UInt8(ascii: "/"):
                return value.utf8.count < room ? .path(value) : nil  // room for the NUL
            case UInt8(ascii: "@"):
                let name = String(value.dropFirst())
                return !name.isEmpty && value.utf8.count <= room ? .abstract(name) : nil
            default:
                return nil
            }
        }
    }

    private let fd: Int32
    private let address: sockaddr_un
    private let length: socklen_t

    private init(fd: Int32, address: Address) {
        self.fd = fd
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        let bytes: [UInt8]
        switch address {
        case .path(let path): bytes = Array(path.utf8)
        case .abstract(let name): bytes = [0] + Array(name.utf8)  // the leading NUL marks the abstract namespace
        }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { room in
            for (index, byte) in bytes.enumerated() { room[index] = byte }
        }
        self.address = socketAddress
        // A path counts its NUL; an abstract name is exactly its bytes (systemd binds it so).
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        if case .path = address {
            length = socklen_t(pathOffset + bytes.count + 1)
        } else {
            length = socklen_t(pathOffset + bytes.count)
        }
    }

    deinit {
        close(fd)
    }

    /// A datagram socket for `address` (nothing is sent yet). A send waits at most two seconds
    /// for room in systemd's queue, so a manager that stopped reading cannot stall the daemon.
    public static func open(_ address: Address) -> Result<NotifySocket, Errno> {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(.current) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return .success(NotifySocket(fd: fd, address: address))
    }

    /// Sends `message` (`READY=1`, or several lines `STATUS=…\nWATCHDOG=1`) as one datagram.
    public func send(_ message: String) -> Result<Void, Errno> {
        var text = message
        var target = address
        return text.withUTF8 { bytes in
            withUnsafePointer(to: &target) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    FileSystem.retryingEINTR {
                        sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, length)
                    }.map { _ in () }
                }
            }
        }
    }
}

/// What systemd tells a service through its environment (systemd.exec(5), sd_watchdog_enabled(3)).
public enum SystemdEnvironment {
    /// The watchdog's timeout in microseconds: `WATCHDOG_USEC` when it is a positive number
    /// and `WATCHDOG_PID` is unset or names `pid` (a child that inherited the variables of
    /// its parent is not the one watched). Nil when there is no watchdog for this process.
    public static func watchdogMicroseconds(_ environment: [String: String], pid: Int32) -> UInt64? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let named = environment["WATCHDOG_PID"] {
            guard let watched = Int32(named), watched == pid else { return nil }
        }
        return usec
    }

    /// This process's id.
    public static var processID: Int32 { getpid() }
}

/// Whether stdout or stderr is the stream connected to the journal (systemd.exec(5),
/// `JOURNAL_STREAM`): its `DEVICE:INODE` is compared with the descriptor's own.
public enum JournalStream {
    /// `JOURNAL_STREAM`'s device and inode (decimal, `DEVICE:INODE`); nil when unset or malformed.
    public static func parse(_ value: String?) -> (device: UInt64, inode: UInt64)? {
        guard let value else { return nil }
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return nil }
        return (device, inode)
    }

    /// Whether descriptor `fd` is the stream `JOURNAL_STREAM` names. A descriptor that was
    /// redirected (to a file, a pipe) no longer matches, even with the variable inherited.
    public static func connects(_ fd: Int32, environment: [String: String]) -> Bool {
        guard let named = parse(environment["JOURNAL_STREAM"]) else { return false }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return false }
        return UInt64(info.st_dev) == named.device && UInt64(info.st_ino) == named.inode
    }
}
