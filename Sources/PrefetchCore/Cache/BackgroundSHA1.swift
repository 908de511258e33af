import Foundation

/// A file's SHA-1, read on a thread of its own while the caller does other work with the same
/// descriptor (`pread`: its position is not moved). A delta reads the cached copy's SHA-1 so
/// when none is recorded (a copy placed before its entry had `zsync`, SPEC §9) beside its scan
/// of that copy: the scan is the slower of the two, so on two cores the read costs no wall time
/// (docs/BENCHMARKS.md, "Issue 38"). `cancel` stops it at its next 256 KiB.
final class BackgroundSHA1: @unchecked Sendable {
    private let condition = NSCondition()
    private var done = false
    private var cancelled = false
    private var value: String?
    /// Kept open while the read runs (the thread holds this object).
    private let file: FileDescriptor

    /// Starts reading `file` from its first byte to its end.
    init(_ file: FileDescriptor) {
        self.file = file
        let thread = Thread { [self] in
            let hex = Self.read(self.file, cancelled: { [self] in
                condition.lock()
                defer { condition.unlock() }
                return cancelled
            })
            condition.lock()
            (value, done) = (hex, true)
            condition.broadcast()
            condition.unlock()
        }
        thread.name = "prefetch.sha1"
        thread.stackSize = 256 * 1024
        thread.start()
    }

    /// Waits for the read's end: the file's SHA-1, or nil when it could not be read or was cancelled.
    func result() -> String? {
        condition.lock()
        defer { condition.unlock() }
        while !done { condition.wait() }
        return value
    }

    /// Stops the read (at its next 256 KiB) and waits for it.
    func cancel() {
        condition.lock()
        cancelled = true
        condition.unlock()
        _ = result()
    }

    private static func read(_ file: FileDescriptor, cancelled: () -> Bool) -> String? {
        let hasher = SHA1()
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var offset: UInt64 = 0
        while !cancelled() {
            let read = buffer.withUnsafeMutableBytes { buffer in
                file.read(into: buffer, at: offset).map { count in
                    hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                    return count
                }
            }
            switch read {
            case .failure: return nil
            case .success(0): return hasher.finishHex()
            case .success(let count): offset += UInt64(count)
            }
        }
        return nil
    }
}
