/// The states of SPEC §2, in precedence order (the first that applies wins).
public enum ResourceStatus: String, Sendable, CaseIterable {
    case expired, failed, backoff, fresh, deferred, waiting, due
}

/// One resource's row in the plan.
public struct PlanItem: Sendable, Equatable {
    public var feed: String
    public var path: String
    /// The URL with query values elided.
    public var url: String
    public var status: ResourceStatus
    /// A short fixed phrase (docs/commands.md, "plan", lists them).
    public var reason: String
    /// When the state changes next; nil for due, waiting and expired.
    public var next: Instant?
    /// Expected total bytes, when known.
    public var bytes: UInt64?
    /// Bytes still to transfer, when known.
    public var remaining: UInt64?
    public var priority: Priority
    /// When the window this due work runs in closes; nil when it never does.
    public var windowEnd: Instant?
    /// For due work: when it should finish at the recorded throughput.
    public var estimatedFinish: Instant?
    /// For due work: false when it is not expected to finish before its window closes.
    public var fits: Bool?
    /// The last error, for failed and backoff.
    public var error: String?
    /// For due work: its place in the order a run starts transfers.
    public var startOrder: Int?
    /// False when a cut transfer could not resume (SPEC §6 "deadlines act"): it has no
    /// resumable partial, and its last 2xx response fails §7's rule (`ResumeRule`).
    public var resumable: Bool = true
    /// Where the transfer resumes its partial (`ResumePoint`), when it has one.
    public var resumeFrom: UInt64? = nil
    /// For due work in a window: when the feed's next window after this one opens.
    public var nextOpening: Instant? = nil
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
    public var items: [PlanItem]
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
    /// Keys of due items in the order a run would start them.
    public var order: [ResourceKey]
    /// The same items as indices into the planned feeds and their resources (`run` builds
    /// its jobs from these without looking keys up).
    var positions: [(feed: Int, resource: Int)] = []

    /// Items in the given state, over all feeds.
    public func items(_ status: ResourceStatus) -> [PlanItem] {
        feeds.flatMap { $0.items.filter { $0.status == status } }
    }
}

/// Everything the planner needs; it reads nothing else (no clock, no files, no network).
public struct PlanInput: Sendable {
    public var feeds: [Feed]
    public var state: StateSnapshot
    /// Resources whose final file is in the cache.
    public var cached: Set<ResourceKey>
    public var conditions: ConditionSnapshot
    public var now: Instant
    public var machineID: MachineID?
    /// The partial files on disk of resources state.db records a partial for
    /// (`CacheListing.partialFiles`), and this boot's id: where each would resume (`ResumePoint`).
    public var partialFiles: [ResourceKey: PartialFile]
    public var bootID: String

    public init(feeds: [Feed], state: StateSnapshot = StateSnapshot(), cached: Set<ResourceKey> = [],
                conditions: ConditionSnapshot = ConditionSnapshot(), now: Instant, machineID: MachineID? = nil,
                partialFiles: [ResourceKey: PartialFile] = [:], bootID: String = BootID.unknown) {
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

extension FeedPlan {
    /// When the feed next has something to do: now when work is due, else the earliest
    /// retry, window, embargo's end or release after now (`status`, the metrics).
    public func nextWakeup(at now: Instant) -> Instant? {
        if items.contains(where: { $0.status == .due }) { return now }
        return (items.compactMap(\.next) + nextReleases).filter { $0 > now }.min()
    }
}
