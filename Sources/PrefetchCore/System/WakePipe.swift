import Foundation

/// A pipe that a thread sleeping in `poll` can be woken through, for good: once `raise`d
/// it stays readable (never drained), so every later wait ends at once — the stop flag of
/// a thread that waits on descriptors (`NetworkWatch`).
final class WakePipe: @unchecked Sendable {
    /// The end to poll for readability.
    let readEnd: Int32
    private let writeEnd: Int32

    init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Wakes every wait, now and later.
    func raise() {
        var byte: UInt8 = 1
        _ = FileSystem.retryingEINTR { write(writeEnd, &byte, 1) }
    }

    var isRaised: Bool {
        var entry = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0
    }

    /// Sleeps until `deadline` (`Clock.monotonicNanoseconds`) or a `raise`; true when raised.
    func sleep(until deadline: UInt64) -> Bool {
        var entry = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        while true {
            let now = Clock.monotonicNanoseconds()
            if now >= deadline { return false }
            let milliseconds = Int32(min((deadline - now + 999_999) / 1_000_000, 60_000))
            if poll(&entry, 1, milliseconds) > 0 { return true }
        }
    }
}
