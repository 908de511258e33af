/// The plan's view of `max_cache_size` (SPEC §8): the cap, the bytes in use now, what is
/// removed to make room before transfers start, and the use once the admitted work is placed.
public struct CachePlan: Sendable {
    /// `max_cache_size`, in bytes.
    public var maxBytes: UInt64
    /// Bytes of cached files now.
    public var used: UInt64
    /// Once the removals are made and every admitted resource of known size is placed.
    public var usedAfter: UInt64
    /// What goes to make room, in the order it goes (oldest placement first).
    public var removals: [CacheUsage.Room]
    /// When more room appears by itself (a previous generation reaching its 60 s), while
    /// something waits for it (`cache full`); nil otherwise.
    public var moreRoomAt: Instant?

    /// The bytes the removals free.
    public var freed: UInt64 { removals.reduce(0) { $0 + $1.bytes } }
}
