/// The states of SPEC §2, in precedence order (the first that applies wins).
public enum ResourceStatus: String, Sendable, CaseIterable {
    case expired, failed, backoff, fresh, deferred, waiting, due
}

/// A feed's header in the plan.
public struct FeedPlan: Sendable {
    public var name: String
    public var zoneName: String
    public var clock: ZoneClock
    public var schedule: String?
    public var windows: [TimeWindow]
    public var days: Set<Weekday>?
    /// The next five releases after the evaluation time, before jitter.
    public var nextReleases: [Instant]
    /// The release in force, if any.
    public var currentRelease: Instant?
    public var jitter: TimeSpan
    public var jitterOffset: Int64
    /// True when transfers may run now (window open, jitter passed).
    public var windowOpen: Bool
    /// Condition checks that hold (true) or block (false) for this feed now.
    public var holds: [(name: String, ok: Bool)]
    public var items: PlanRows
}

/// The whole plan: feeds with their rows, and the due work in execution order.
public struct Plan: Sendable {
    public var now: Instant
    public var feeds: [FeedPlan]
    public var conditions: ConditionSnapshot
    public var machineID: MachineID?
    /// Throughput the estimates use, bytes per second, and whether it was measured.
    public var throughput: Double
    public var throughputMeasured: Bool
    /// Keys of due items in the order a run would start them, made from `positions` as
    /// they are read (not kept: a key each would be a second string of every due path).
    public var order: DueOrder { DueOrder(feeds: feeds, positions: positions) }
    /// The due items in that order as indices into the planned feeds and their resources
    /// (`run` builds its jobs from these without looking keys up).
    var positions: [(feed: Int, resource: Int)] = []
    /// `max_cache_size` (SPEC §8): the cap, the use, the room to be made; nil without a cap.
    public var cache: CachePlan?

    /// Items in the given state, over all feeds.
    public func items(_ status: ResourceStatus) -> [PlanItem] {
        feeds.flatMap { $0.items.filter { $0.status == status } }
    }
}

/// The keys of a plan's due work in the order a run starts it (`Plan.order`).
public struct DueOrder: RandomAccessCollection, Sendable {
    let feeds: [FeedPlan]
    let positions: [(feed: Int, resource: Int)]

    public var startIndex: Int { 0 }
    public var endIndex: Int { positions.count }

    public subscript(index: Int) -> ResourceKey {
        let (feed, resource) = positions[index]
        return ResourceKey(feed: feeds[feed].name, path: feeds[feed].items.resources[resource].path)
    }
}

/// Everything the planner needs; it reads nothing else (no clock, no files, no network).
public struct PlanInput: Sendable {
    public var feeds: [Feed]
    public var state: StateSnapshot
    /// Resources whose final file is in the cache.
    public var cached: CachedFiles
    public var conditions: ConditionSnapshot
    public var now: Instant
    public var machineID: MachineID?
    /// The partial files on disk of resources state.db records a partial for
    /// (`CacheListing.partialFiles`), and this boot's id: where each would resume (`ResumePoint`).
    public var partialFiles: [ResourceKey: PartialFile]
    public var bootID: String
    /// `max_cache_size` in bytes (SPEC §8; nil: no cap), and what the cache holds now.
    public var maxCacheSize: UInt64?
    public var cacheUsage: CacheUsage?
    /// SPEC §9: the file in the cache that holds a SHA-256 (and size) already, as `FEED/PATH`
    /// (`LocalSourceLookup` over state.db and the disk; nil: none is looked for).
    public var localSource: (@Sendable (_ sha256: String, _ size: UInt64?) -> String?)?
    /// SPEC §9: whether a pinned copy due for revalidation still holds its pin's bytes (its
    /// size, inode and mtime the recorded ones, else hashed again); nil: it is taken to.
    public var pinnedCopyHolds: (@Sendable (_ key: ResourceKey, _ sha256: String) -> Bool)?

    public init(feeds: [Feed], state: StateSnapshot = StateSnapshot(), cached: CachedFiles = CachedFiles(),
                conditions: ConditionSnapshot = ConditionSnapshot(), now: Instant, machineID: MachineID? = nil,
                partialFiles: [ResourceKey: PartialFile] = [:], bootID: String = BootID.unknown,
                maxCacheSize: UInt64? = nil, cacheUsage: CacheUsage? = nil) {
        self.maxCacheSize = maxCacheSize
        self.cacheUsage = cacheUsage
        self.feeds = feeds
        self.state = state
        self.cached = cached
        self.conditions = conditions
        self.now = now
        self.machineID = machineID
        self.partialFiles = partialFiles
        self.bootID = bootID
    }
}
