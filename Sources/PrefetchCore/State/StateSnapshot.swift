/// What the planner knows from past runs: a plain value read from state.db in one go.
public struct StateSnapshot: Sendable {
    public var feeds: [String: FeedState] = [:]
    /// Per resource, keyed by feed and path.
    public var resources = ResourceStates()
    /// Bytes a feed moved over metered links, keyed by feed and local day (`YYYY-MM-DD`).
    public var meteredBytes: [MeteredDay: UInt64] = [:]
    /// Median transfer throughput of recent runs, bytes per second; nil before any.
    public var throughput: Double?
    /// Origins held (SPEC §6), keyed by `scheme://host:port`.
    public var originHolds: [String: OriginHold] = [:]
    /// Delta partials kept for resume (SPEC §9), keyed by feed and path.
    public var deltaPartials: [ResourceKey: DeltaPartialRecord] = [:]

    public init() {}

    /// Whether any resource has a partial recorded: one look over the records (most passes
    /// have none, and then skip the lookups per resource that ask for one).
    public var hasPartials: Bool { resources.values.contains { $0.hasPartial } }
}

/// An origin held after a connection-level failure or a 429/502/503/504 (SPEC §6): none of
/// its resources is requested before `until`, when one request probes it again.
public struct OriginHold: Sendable, Equatable {
    /// `scheme://host:port`.
    public var origin: String
    public var until: Instant
    /// "HTTP 503", "connection refused".
    public var reason: String
    /// When the hold began (the first failure of this streak).
    public var since: Instant
    /// Consecutive failed requests to the origin (the origin's own backoff).
    public var failures: Int

    public init(origin: String, until: Instant, reason: String, since: Instant, failures: Int) {
        self.origin = origin
        self.until = until
        self.reason = reason
        self.since = since
        self.failures = failures
    }
}

/// A feed's metered usage on one local day.
public struct MeteredDay: Sendable, Hashable {
    public var feed: String
    public var day: String

    public init(feed: String, day: String) {
        self.feed = feed
        self.day = day
    }
}

/// Per feed: its releases and outcome.
public struct FeedState: Sendable, Equatable {
    /// Nominal start of the last release a run worked on.
    public var lastRelease: Instant?
    /// When that release finished (nothing due, waiting or in backoff).
    public var lastReleaseFinished: Instant?
    public var lastSuccess: Instant?
    public var lastError: String?
    /// Why a pending release moved nothing, as a pass saw it last while the window was open,
    /// and when (SPEC §6, starvation).
    public var missedReason: String?
    public var missedReasonAt: Instant?
    /// When a pass first saw the feed (one that never finished a release starves since then).
    public var firstSeen: Instant?

    public init(lastRelease: Instant? = nil, lastReleaseFinished: Instant? = nil, lastSuccess: Instant? = nil, lastError: String? = nil,
                missedReason: String? = nil, missedReasonAt: Instant? = nil, firstSeen: Instant? = nil) {
        self.lastRelease = lastRelease
        self.lastReleaseFinished = lastReleaseFinished
        self.lastSuccess = lastSuccess
        self.lastError = lastError
        self.missedReason = missedReason
        self.missedReasonAt = missedReasonAt
        self.firstSeen = firstSeen
    }
}

/// What state.db records of one feed source (SPEC §8).
public struct SourceState: Sendable, Equatable {
    /// The last check, whatever its outcome (nil: never checked: due at once).
    public var lastCheck: Instant?
    /// The last check that applied a copy or got a 304.
    public var lastSuccess: Instant?
    /// Failed checks in a row.
    public var failures = 0
    /// Since when the source is stale (its last check failed, or its feed cannot run).
    public var staleSince: Instant?
    /// Why.
    public var error: String?
    /// When a failed check is retried (the backoff, or its origin's hold's end).
    public var retryAt: Instant?
}
