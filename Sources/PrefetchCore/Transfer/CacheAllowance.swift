import Foundation

/// `max_cache_size` while a run's bodies arrive (SPEC §8): the room left under the cap
/// once the plan's admitted work is counted. The plan admitted each resource at its
/// expected size; a transfer that writes past it (its size was not known, or its
/// `Content-Length` says more) takes the difference from here, and when there is not
/// enough it pauses with `cache full` (a resumable partial is kept, §7).
///
/// Shared by every shard of the run: one lock around a counter, taken only by transfers
/// growing past what they were admitted at.
final class CacheAllowance: @unchecked Sendable {
    private let lock = NSLock()
    private var room: UInt64

    /// `cap` bytes, of which `used` are in use once the admitted work is placed.
    init(cap: UInt64, used: UInt64) {
        room = cap > used ? cap - used : 0
    }

    /// Takes `bytes` more of the room; false (taking nothing) when they do not fit.
    func take(_ bytes: UInt64) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard bytes <= room else { return false }
        room -= bytes
        return true
    }

    /// Gives back bytes that will not be written after all (room a removal failed to free is
    /// taken back with `take`).
    func give(_ bytes: UInt64) {
        lock.lock()
        defer { lock.unlock() }
        room += bytes
    }

    /// The room left.
    var left: UInt64 {
        lock.lock()
        defer { lock.unlock() }
        return room
    }
}
