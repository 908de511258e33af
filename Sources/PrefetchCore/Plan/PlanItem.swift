/// One resource's row in the plan, as its readers see it: its feed's name, its resource's
/// path and URL (the manifest's URL; a path read from the URL's text is made as a string of
/// its own), its texts, and its numbers (`Values`). A feed's rows keep only the numbers and
/// indexes into the feed's texts (`PlanRows`); a `PlanItem` is made when a row is read.
public struct PlanItem: Sendable, Equatable {
    public let feed: String
    public let path: String
    /// The URL, shown with its query values elided (made when asked).
    let source: ResourceURL
    /// The URL with query values elided.
    public var url: String { source.redacted }
    /// Its effective `zsync` (SPEC §9) as `plan --json` shows it: `auto`, the control file's URL, or nil.
    public let zsync: String?
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
        self.zsync = resource.zsync.jsonValue
        self.reason = reason
        self.values = Values(status: status, priority: resource.priority, row: UInt32(truncatingIfNeeded: row))
        self.bytes = bytes
        self.remaining = remaining
    }

    init(feed: String, resource: Resource, values: Values, reason: String, error: String?, server: Server) {
        self.feed = feed
        self.path = resource.path
        self.source = resource.url
        self.zsync = resource.zsync.jsonValue
        self.reason = reason
        self.error = error
        self.server = server
        self.values = values
    }

    /// The local source a due row is placed from (SPEC §9), as `FEED/PATH`, read from its
    /// reason `in cache (FEED/PATH)`; nil otherwise.
    public var localSource: String? {
        guard status == .due, reason.hasPrefix(Planner.localSourcePrefix), reason.hasSuffix(")") else { return nil }
        return String(reason.dropFirst(Planner.localSourcePrefix.count).dropLast())
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
