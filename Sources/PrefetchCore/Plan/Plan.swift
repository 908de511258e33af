/// The states of SPEC §2, in precedence order (the first that applies wins).
public enum ResourceStatus: String, Sendable, CaseIterable {
    case expired, failed, backoff, fresh, deferred, waiting, due
}

/// One resource's row in the plan, as its readers see it: its feed's name, its resource's
/// path and URL (the URL the manifest's own value; a path read from the URL made as a
/// string of its own), its texts, and its numbers (`Values`). A feed's rows keep only the numbers and indexes into the feed's
/// texts (`PlanRows`); a `PlanItem` is made when a row is read.
public struct PlanItem: Sendable, Equatable {
    public let feed: String
    public let path: String
    /// The URL, shown with its query values elided (made when asked).
    let source: ResourceURL
    /// The URL with query values elided.
    public var url: String { source.redacted }
    /// A short fixed phrase (docs/commands.md, "plan", lists them).
    public var reason: String
    /// The last error, for failed and backoff.
    public var error: String?
    /// Who served the cached copy: nothing cached, the entry's `url`, or a mirror (`shown`).
    enum Server: Sendable, Equatable { case none, entry, other(String) }
    var server: Server = .none
    /// The URL that served the cached copy, query values elided (SPEC §8; the entry's `url`
    /// unless a mirror served it); nil when nothing is cached.
    public var servedBy: String? {
        get {
            switch server {
            case .none: nil
            case .entry: url
            case .other(let text): text
            }
        }
        set { server = newValue.map { .other($0) } ?? .none }
    }
    var values: Values

    public var status: ResourceStatus {
        get { values.status }
        set { values.status = newValue }
    }
    public var priority: Priority {
        get { values.priority }
        set { values.priority = newValue }
    }
    /// False when a cut transfer could not resume (SPEC §6 "deadlines act"): it has no
    /// resumable partial, and its last 2xx response fails §7's rule (`ResumeRule`).
    public var resumable: Bool {
        get { values.resumable }
        set { values.resumable = newValue }
    }
    /// The resource's place in its feed's `resources` (the manifest's order), which the
    /// rows leave when due work moves first: the reader index finds each resource's row by
    /// it, with no dictionary of paths.
    var row: UInt32 {
        get { values.row }
        set { values.row = newValue }
    }

    init(feed: String, resource: Resource, row: Int, status: ResourceStatus, reason: String, bytes: UInt64?, remaining: UInt64?) {
        self.feed = feed
        self.path = resource.path
        self.source = resource.url
        self.reason = reason
        self.values = Values(status: status, priority: resource.priority, row: UInt32(truncatingIfNeeded: row))
        self.bytes = bytes
        self.remaining = remaining
    }

    init(feed: String, resource: Resource, values: Values, reason: String, error: String?, server: Server) {
        self.feed = feed
        self.path = resource.path
        self.source = resource.url
        self.reason = reason
        self.error = error
        self.server = server
        self.values = values
    }

    /// When the state changes next; nil for due, waiting and expired.
    public var next: Instant? {
        get { values.next }
        set { values.next = newValue }
    }
    /// Expected total bytes, when known.
    public var bytes: UInt64? {
        get { values.bytes }
        set { values.bytes = newValue }
    }
    /// Bytes still to transfer, when known.
    public var remaining: UInt64? {
        get { values.remaining }
        set { values.remaining = newValue }
    }
    /// When the window this due work runs in closes; nil when it never does.
    public var windowEnd: Instant? {
        get { values.windowEnd }
        set { values.windowEnd = newValue }
    }
    /// For due work: when it should finish at the recorded throughput.
    public var estimatedFinish: Instant? {
        get { values.estimatedFinish }
        set { values.estimatedFinish = newValue }
    }
    /// For due work: false when it is not expected to finish before its window closes.
    public var fits: Bool? {
        get { values.fits }
        set { values.fits = newValue }
    }
    /// For due work: its place in the order a run starts transfers.
    public var startOrder: Int? {
        get { values.startOrder }
        set { values.startOrder = newValue }
    }
    /// Where the transfer resumes its partial (`ResumePoint`), when it has one.
    public var resumeFrom: UInt64? {
        get { values.resumeFrom }
        set { values.resumeFrom = newValue }
    }
    /// For due work in a window: when the feed's next window after this one opens.
    public var nextOpening: Instant? {
        get { values.nextOpening }
        set { values.nextOpening = newValue }
    }

    /// A row's numbers and small fields: what `PlanRows` keeps of it beside its texts.
    struct Values: Sendable, Equatable {
        /// `next`, `bytes`, `remaining`, `windowEnd`, `estimatedFinish`, `startOrder`,
        /// `resumeFrom`, `nextOpening`: a word each.
        var numbers = OptionalWords<8>()
        var status: ResourceStatus
        var priority: Priority
        var resumable = true
        var fits: Bool?
        var row: UInt32

        // The numbers of PlanItem's properties of the same names (documented there).
        var next: Instant? {
            get { numbers[0] }
            set { numbers[0] = newValue }
        }
        var bytes: UInt64? {
            get { numbers[1] }
            set { numbers[1] = newValue }
        }
        var remaining: UInt64? {
            get { numbers[2] }
            set { numbers[2] = newValue }
        }
        var windowEnd: Instant? {
            get { numbers[3] }
            set { numbers[3] = newValue }
        }
        var estimatedFinish: Instant? {
            get { numbers[4] }
            set { numbers[4] = newValue }
        }
        var startOrder: Int? {
            get { numbers[5] }
            set { numbers[5] = newValue }
        }
        var resumeFrom: UInt64? {
            get { numbers[6] }
            set { numbers[6] = newValue }
        }
        var nextOpening: Instant? {
            get { numbers[7] }
            set { numbers[7] = newValue }
        }
    }
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
