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

/// HTTP validators of one version of a resource.
public struct Validators: Sendable, Equatable {
    public var etag: String?
    /// As sent; an IMF-fixdate is held as its seconds (`DateText`: no allocation a record).
    public var lastModified: String? {
        get { lastModifiedText?.text }
        set { lastModifiedText = newValue.map(DateText.init) }
    }
    private(set) var lastModifiedText: DateText?

    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModifiedText = lastModified.map(DateText.init)
    }

    init(etag: String?, lastModifiedText: DateText?) {
        self.etag = etag
        self.lastModifiedText = lastModifiedText
    }

    /// The same validators byte for byte (an ETag is its octets, RFC 9110 §8.8.3).
    public static func == (a: Validators, b: Validators) -> Bool {
        a.lastModifiedText == b.lastModifiedText && (a.etag == nil) == (b.etag == nil) && SameBytes.equal(a.etag ?? "", b.etag ?? "")
    }
}

/// What a 2xx response said that decides whether a partial of it can resume (SPEC §7's
/// one rule, `ResumeRule`): its validators, its `Date`, `Accept-Ranges` and
/// `Content-Encoding`, as sent. Recorded with the partial it began, and with the resource
/// (of its last 2xx response: §6's deadline rule is judged on it).
public struct ResponseFacts: Sendable, Equatable {
    public var etag: String?
    /// As sent; an IMF-fixdate is held as its seconds (`DateText`).
    public var lastModified: String? {
        get { lastModifiedText?.text }
        set { lastModifiedText = newValue.map(DateText.init) }
    }
    private(set) var lastModifiedText: DateText?
    /// The response's `Date` (nil: none was sent, or the record predates state.db version 3).
    public var date: String?
    /// The response said `Accept-Ranges: none`.
    public var acceptRangesNone: Bool
    /// Its `Content-Encoding` (nil: none, or identity).
    public var contentEncoding: String?

    public init(etag: String? = nil, lastModified: String? = nil, date: String? = nil, acceptRangesNone: Bool = false,
                contentEncoding: String? = nil) {
        self.etag = etag
        self.lastModifiedText = lastModified.map(DateText.init)
        self.date = date
        self.acceptRangesNone = acceptRangesNone
        self.contentEncoding = contentEncoding
    }

    /// As state.db's columns hold it (`SQLiteStatement.dateText`): no date parsed again.
    init(etag: String?, lastModifiedText: DateText?, date: String?, acceptRangesNone: Bool, contentEncoding: String?) {
        self.init(etag: etag, date: date, acceptRangesNone: acceptRangesNone, contentEncoding: contentEncoding)
        self.lastModifiedText = lastModifiedText
    }

    /// Its validators.
    public var validators: Validators { Validators(etag: etag, lastModifiedText: lastModifiedText) }
}

/// An in-progress download in `.prefetch/partial/`.
public struct PartialState: Sendable, Equatable {
    public var urlHash: String
    /// The partial's own validators, for `If-Range`.
    public var validators: Validators
    public var totalLength: UInt64?
    /// Bytes known to be on disk (recorded after an fsync).
    public var syncedOffset: UInt64
    public var updatedAt: Instant
    /// The kernel's boot id of the run that wrote the partial (nil: recorded by version 1,
    /// which trusted only `syncedOffset`).
    public var bootID: String?
    /// The partial file's inode: another file under its name is not this partial.
    public var inode: UInt64?
    /// What else the response that began the partial said, for §7's resumable rule: its
    /// `Date` (nil: none, or recorded before state.db version 3), `Accept-Ranges: none`,
    /// its `Content-Encoding`.
    public var date: String?
    public var acceptRangesNone: Bool
    public var contentEncoding: String?
    /// The URL it was begun at (SPEC §8): nil for the entry's `url`, else that mirror's
    /// identity hash. At another URL it resumes only with a `sha256`.
    public var servedBy: String?

    public init(urlHash: String, validators: Validators, totalLength: UInt64?, syncedOffset: UInt64, updatedAt: Instant,
                bootID: String? = nil, inode: UInt64? = nil, date: String? = nil, acceptRangesNone: Bool = false,
                contentEncoding: String? = nil, servedBy: String? = nil) {
        self.urlHash = urlHash
        self.validators = validators
        self.totalLength = totalLength
        self.syncedOffset = syncedOffset
        self.updatedAt = updatedAt
        self.bootID = bootID
        self.inode = inode
        self.date = date
        self.acceptRangesNone = acceptRangesNone
        self.contentEncoding = contentEncoding
        self.servedBy = servedBy
    }

    /// The response that began the partial, as §7's rule reads it (`ResumeRule`).
    public var response: ResponseFacts {
        ResponseFacts(etag: validators.etag, lastModified: validators.lastModified, date: date, acceptRangesNone: acceptRangesNone,
                      contentEncoding: contentEncoding)
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
