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

/// Per resource: the placed copy, the partial, and the failure record.
///
/// Compact, as state.db may hold a million: hashes as 32 bytes inline (`HexText`), the
/// length and times as plain numbers with a bit each saying whether they are there (an
/// `Optional` of a number takes twice its width), the last response inline when it is
/// the usual one (the copy's own validators, its `Date` an interned string), and the parts
/// most records lack — the failure record, the partial, an unusual last response, the other
/// URLs — each behind one reference: 200 bytes a record, and no allocation for most, where
/// the plain fields took 288 and a boxed response 112 more.
public struct ResourceState: Sendable, Equatable {
    private var urlHashText: HexText
    /// SHA-256 of the URL the copy came from (query values are never stored).
    public var urlHash: String {
        get { urlHashText.text }
        set { urlHashText = HexText(newValue) }
    }
    /// Validators of the placed copy; recorded only for a version that passed every check.
    public var validators: Validators {
        get { copyValidators }
        set {
            if present & Self.inlineResponse != 0 { lastResponseBox = lastResponse.map(Box.init); clearInlineResponse() }
            copyValidators = newValue
        }
    }
    private var copyValidators = Validators()
    /// The last response's `Date`, when that response is kept inline (`lastResponse`).
    private var responseDate: String?
    private var sha256Text: HexText?
    public var sha256: String? {
        get { sha256Text?.text }
        set { sha256Text = newValue.map(HexText.init) }
    }
    /// Which of `numbers` are there, bit by bit in their order; then `inlineResponse` and
    /// `inlineRangesNone`.
    private var present: UInt8 = 0
    /// The last response is the copy's validators, `responseDate`, no `Content-Encoding`.
    private static let inlineResponse: UInt8 = 1 << 5
    /// That inline response said `Accept-Ranges: none`.
    private static let inlineRangesNone: UInt8 = 1 << 6
    /// The `encoding` the placed copy was stored under (SPEC §7; `refuse` for a copy placed
    /// before state.db recorded it): an entry that now says another makes it `changed`.
    public var copyEncoding = EncodingMode.refuse
    /// `length`, `placedAt`, `validatedAt`, `lastSuccess`, `lastResponseLength` (after the
    /// bytes above, which fill the padding of `sha256Text`).
    private var numbers: (UInt64, Int64, Int64, Int64, UInt64) = (0, 0, 0, 0, 0)
    private var failureBox: Box<FailureRecord>?
    private var partialBox: Box<PartialState>?
    private var lastResponseBox: Box<ResponseFacts>?
    private var servedByBox: Box<ServedBy>?

    public init(urlHash: String) {
        self.urlHashText = HexText(urlHash)
    }

    /// Whether `urlHash` is the hex of `digest` (a URL's `identityDigest`), with no text made.
    func recordsURL(_ digest: Digest256) -> Bool { urlHashText.isHex(of: digest) }

    /// A record of these hashes as state.db's columns hold them (`SQLiteStatement.hexText`).
    init(urlHash: HexText, sha256: HexText?) {
        self.urlHashText = urlHash
        self.sha256Text = sha256
    }

    /// Length of the placed copy.
    public var length: UInt64? {
        get { present & 1 != 0 ? numbers.0 : nil }
        set { numbers.0 = newValue ?? 0; mark(0, newValue != nil) }
    }
    public var placedAt: Instant? {
        get { present & 2 != 0 ? Instant(nanoseconds: numbers.1) : nil }
        set { numbers.1 = newValue?.nanoseconds ?? 0; mark(1, newValue != nil) }
    }
    /// Last time the copy was confirmed current (placed, or a 304).
    public var validatedAt: Instant? {
        get { present & 4 != 0 ? Instant(nanoseconds: numbers.2) : nil }
        set { numbers.2 = newValue?.nanoseconds ?? 0; mark(2, newValue != nil) }
    }
    public var lastSuccess: Instant? {
        get { present & 8 != 0 ? Instant(nanoseconds: numbers.3) : nil }
        set { numbers.3 = newValue?.nanoseconds ?? 0; mark(3, newValue != nil) }
    }

    private mutating func mark(_ bit: Int, _ isThere: Bool) {
        if isThere { present |= 1 << bit } else { present &= ~(1 << bit) }
    }

    /// A permanent error (404, 410, 401, 403, TLS, redirect loop): failed until the next release.
    public var permanentFailure: Bool {
        get { failure.permanent }
        set { failure.permanent = newValue }
    }
    public var lastError: String? {
        get { failure.lastError }
        set { failure.lastError = newValue }
    }
    /// Consecutive failures since the last success, within `failureRelease`.
    public var failures: Int {
        get { failure.count }
        set { failure.count = newValue }
    }
    /// The release the failures belong to; attempts start again at each release.
    public var failureRelease: Instant? {
        get { failure.release }
        set { failure.release = newValue }
    }
    public var nextRetry: Instant? {
        get { failure.nextRetry }
        set { failure.nextRetry = newValue }
    }
    /// The manifest entry the failures belong to (`ManifestEntry.fingerprint`): failures of
    /// an entry since changed do not count.
    public var failureEntry: String? {
        get { failure.entry }
        set { failure.entry = newValue }
    }

    /// What `failures` and its neighbours say; no reference at all while it says nothing.
    private var failure: FailureRecord {
        get { failureBox?.value ?? FailureRecord() }
        set { failureBox = newValue == FailureRecord() ? nil : Box(newValue) }
    }

    /// A partial download, if any.
    /// Whether `partial` is there (without copying it out).
    public var hasPartial: Bool { partialBox != nil }
    public var partial: PartialState? {
        get { partialBox?.value }
        set { partialBox = newValue.map(Box.init) }
    }
    /// The last 2xx response of the resource (nil: none recorded, "never fetched"): §6's
    /// deadline rule judges by it whether a cut transfer could resume (`ResumeRule`).
    public var lastResponse: ResponseFacts? {
        get {
            if let box = lastResponseBox { return box.value }
            guard present & Self.inlineResponse != 0 else { return nil }
            return ResponseFacts(etag: copyValidators.etag, lastModifiedText: copyValidators.lastModifiedText, date: responseDate,
                                 acceptRangesNone: present & Self.inlineRangesNone != 0, contentEncoding: nil)
        }
        set {
            lastResponseBox = nil
            clearInlineResponse()
            guard let newValue else { return }
            if newValue.validators == copyValidators && newValue.contentEncoding == nil {
                responseDate = newValue.date
                present |= Self.inlineResponse | (newValue.acceptRangesNone ? Self.inlineRangesNone : 0)
            } else {
                lastResponseBox = Box(newValue)
            }
        }
    }
    /// The length that response announced for the whole file (its Content-Length, or the
    /// total of its Content-Range), when it did.
    public var lastResponseLength: UInt64? {
        get { present & 16 != 0 ? numbers.4 : nil }
        set { numbers.4 = newValue ?? 0; mark(4, newValue != nil) }
    }

    private mutating func clearInlineResponse() {
        responseDate = nil
        present &= ~(Self.inlineResponse | Self.inlineRangesNone)
    }

    /// Which listed URL served the copy and the other URLs' validators of it (SPEC §8);
    /// nil: the entry's `url` served it and no other URL's validators are known.
    public var servedBy: ServedBy? {
        get { servedByBox?.value }
        set { servedByBox = newValue.map(Box.init) }
    }

    public static func == (a: ResourceState, b: ResourceState) -> Bool {
        a.urlHashText == b.urlHashText && a.validators == b.validators && a.sha256Text == b.sha256Text && a.length == b.length
            && a.placedAt == b.placedAt && a.validatedAt == b.validatedAt && a.lastSuccess == b.lastSuccess
            && a.copyEncoding == b.copyEncoding && a.failureBox == b.failureBox && a.partialBox == b.partialBox
            && a.lastResponse == b.lastResponse && a.lastResponseLength == b.lastResponseLength && a.servedByBox == b.servedByBox
    }

    private struct FailureRecord: Sendable, Equatable {
        var permanent = false
        var lastError: String?
        var count = 0
        var release: Instant?
        var nextRetry: Instant?
        var entry: String?
    }

    /// An immutable value behind a reference: an optional part that takes one word when absent.
    private final class Box<Value: Sendable & Equatable>: Sendable, Equatable {
        let value: Value
        init(_ value: Value) { self.value = value }
        static func == (a: Box, b: Box) -> Bool { a === b || a.value == b.value }
    }
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
