import Foundation

/// One feed manifest, checked and with every default applied (SPEC §1, §5).
public struct Feed: Sendable {
    /// The feed's name, also its folder in the cache.
    public var name: String
    /// The manifest file as the user named it.
    public var file: String
    /// Where the name was given (`name:`'s value), or 1:1 when it comes from the file name.
    public var nameLocation: SourceLocation
    /// When a new run is released; nil when the manifest has no `schedule`.
    public var schedule: CronExpression?
    /// The zone that schedule, windows, days and bare dates are read in.
    public var timeZone: TimeZone
    /// The zone's IANA name as written (or the system zone's name).
    public var timeZoneName: String
    /// Daily windows when transfers may run; empty means always.
    public var windows: [TimeWindow]
    /// Days a window opens on; nil means every day.
    public var days: Set<Weekday>?
    /// Deterministic per-machine delay after each release and window opening.
    public var jitter: TimeSpan
    /// What must hold before and while transfers run.
    public var conditions: Conditions
    /// A cached copy younger than this is not rechecked.
    public var refresh: TimeSpan
    /// How failed transfers are retried.
    public var retry: RetryPolicy
    /// Per-feed transfer limits; nil fields take the config's defaults.
    public var limits: FeedLimits
    /// Remove cached files that are no longer listed.
    public var prune: Bool
    /// What readers see while a release is fetched (SPEC §6).
    public var consistency: Consistency = .file
    /// What to fetch.
    public var resources: [Resource]
}

/// What a feed's readers see while a release is fetched (SPEC §6, "All-or-nothing releases").
public enum Consistency: String, Sendable {
    /// Each file is replaced atomically on its own, as it arrives.
    case file
    /// The whole previous set or the whole new set: generation folders, one symlink switch.
    case release
}

/// Conditions that defer a feed's transfers (SPEC §1).
public struct Conditions: Sendable, Hashable {
    /// Which links a feed may use.
    public enum Network: String, Sendable { case any, unmetered }
    /// Which power source a feed needs.
    public enum Power: String, Sendable { case any, ac }

    public var network: Network = .any
    public var power: Power = .any
    /// Battery percentage needed when on battery (0 = any).
    public var minBattery: Int = 0
    /// Free space to keep on the cache filesystem.
    public var minFreeSpace: ByteSize?
    /// At most this many bytes per day over metered links.
    public var meteredBudget: ByteRate?

    public init() {}
}

/// Retry policy: exponential backoff between `backoff` and `maxBackoff`.
public struct RetryPolicy: Sendable, Hashable {
    /// Consecutive failures allowed since the last success, per release.
    public var attempts: Int = 5
    /// The first wait.
    public var backoff: TimeSpan = TimeSpan(seconds: 30)
    /// The longest wait.
    public var maxBackoff: TimeSpan = .hours(1)

    public init() {}
}

/// Per-feed limits; a nil field means "the config's default".
public struct FeedLimits: Sendable, Hashable {
    /// Transfers of this feed at once.
    public var concurrency: Int = 4
    /// Cap on the feed's total transfer rate, in bytes per second.
    public var maxRate: ByteRate?
    public var connectTimeout: TimeSpan?
    public var stallTimeout: TimeSpan?
    public var maxRedirects: Int?
    /// How long a response head may take after its request is sent (SPEC §7).
    public var responseTimeout: TimeSpan?

    public init() {}
}

/// How urgent a resource is; due work is ordered high → low.
public enum Priority: String, Sendable, Hashable, Comparable, CaseIterable {
    case high, normal, low

    private var rank: Int { self == .high ? 0 : self == .normal ? 1 : 2 }
    public static func < (a: Priority, b: Priority) -> Bool { a.rank < b.rank }
}
