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

/// One resource of a feed. Compact, as a manifest may list a million: the URL as its text
/// with offsets (`ResourceURL`), the `sha256` as 32 bytes inline with a bit saying whether it
/// is there, `size` and `expires` as plain numbers with a bit each (an `Optional` of a number
/// takes twice its width), the entry's line and column as 32-bit numbers, and what few
/// entries have — mirrors, headers, `max_size`, `not_before` — behind one reference, nil for
/// the rest: 136 bytes a resource, where each field in its own place took 168. A `path`
/// written in the URL too (`path: a/b.mp4` of `https://h/a/b.mp4`, or the default path) is
/// read from the URL's text, not kept a second time (`SharedPath`).
public struct Resource: Sendable {
    /// Where to fetch it from.
    public var url: ResourceURL {
        get { storedURL }
        set {
            let kept = path  // read from the old URL when shared: the path stays what it was
            storedURL = newValue
            path = kept
        }
    }
    /// Where it goes, relative to `CACHE/<feed>/`.
    public var path: String {
        get { sharedPath.isEmpty ? ownPath : sharedPath.text(in: storedURL.text) }
        set {
            sharedPath = SharedPath(newValue, in: storedURL)
            ownPath = sharedPath.isEmpty ? newValue : ""
        }
    }
    /// Whether `path` is read from the URL's text (no string of its own).
    var pathIsShared: Bool { !sharedPath.isEmpty }
    private var storedURL: ResourceURL
    /// The path when it is not read from the URL's text ("" when it is).
    private var ownPath: String
    private var digest: Digest256
    private var sizeValue: UInt64 = 0
    private var expiresValue: Int64 = 0
    private var rare: Rare?
    private var line: UInt32, column: UInt32
    private var sharedPath = SharedPath()
    /// Which values are there: bit 0 `size`, 1 `expires`, 2 the digest.
    private var present: UInt8 = 0
    public var priority: Priority
    /// Its effective `encoding` (SPEC §7): its own, else its feed's, else `refuse`.
    public var encoding: EncodingMode = .refuse

    /// The parts few entries have, shared by copies and copied on change.
    private final class Rare: Sendable {
        let mirrors: [ResourceURL]?
        let headers: [HeaderField]
        let maxSize: UInt64?
        let notBefore: Instant?

        init(mirrors: [ResourceURL]?, headers: [HeaderField], maxSize: UInt64?, notBefore: Instant?) {
            self.mirrors = mirrors; self.headers = headers; self.maxSize = maxSize; self.notBefore = notBefore
        }

        /// nil when every part is absent: the resource then holds no reference.
        static func make(mirrors: [ResourceURL]?, headers: [HeaderField], maxSize: UInt64?, notBefore: Instant?) -> Rare? {
            mirrors == nil && headers.isEmpty && maxSize == nil && notBefore == nil
                ? nil : Rare(mirrors: mirrors, headers: headers, maxSize: maxSize, notBefore: notBefore)
        }
    }

    private mutating func changeRare(mirrors: [ResourceURL]?? = nil, headers: [HeaderField]? = nil,
                                     maxSize: UInt64?? = nil, notBefore: Instant?? = nil) {
        rare = Rare.make(mirrors: mirrors ?? self.mirrors, headers: headers ?? self.headers,
                         maxSize: maxSize ?? self.maxSize, notBefore: notBefore ?? self.notBefore)
    }

    /// Other URLs of the same file, tried in order after `url` (SPEC §8, "Mirrors"); nil
    /// when there are none.
    public var mirrors: [ResourceURL]? {
        get { rare?.mirrors }
        set { changeRare(mirrors: .some(newValue)) }
    }
    /// Request headers of its own (SPEC §1), the feed's merged in.
    public var headers: [HeaderField] {
        get { rare?.headers ?? [] }
        set { changeRare(headers: newValue) }
    }
    /// Exact expected length in bytes.
    public var size: UInt64? {
        get { present & 1 != 0 ? sizeValue : nil }
        set { sizeValue = newValue ?? 0; mark(0, newValue != nil) }
    }
    /// Upper bound when the length is not known exactly.
    public var maxSize: UInt64? {
        get { rare?.maxSize }
        set { changeRare(maxSize: .some(newValue)) }
    }
    /// Never fetched before this instant.
    public var notBefore: Instant? {
        get { rare?.notBefore }
        set { changeRare(notBefore: .some(newValue)) }
    }
    /// Removed from the cache after this instant.
    public var expires: Instant? {
        get { present & 2 != 0 ? Instant(nanoseconds: expiresValue) : nil }
        set { expiresValue = newValue?.nanoseconds ?? 0; mark(1, newValue != nil) }
    }
    /// Where the resource's entry starts in the manifest.
    public var location: SourceLocation {
        get { SourceLocation(line: Int(line), column: Int(column)) }
        set { (line, column) = (UInt32(clamping: newValue.line), UInt32(clamping: newValue.column)) }
    }

    private mutating func mark(_ bit: Int, _ isThere: Bool) {
        if isThere { present |= 1 << bit } else { present &= ~(1 << bit) }
    }

    /// Expected SHA-256, lowercase hex.
    public var sha256: String? { present & 4 != 0 ? digest.hex : nil }

    /// How many URLs it lists: `url` and its mirrors.
    public var urlCount: Int { 1 + (mirrors?.count ?? 0) }

    /// The listed URL at `index`: 0 is `url`, then the mirrors in order.
    public func url(at index: Int) -> ResourceURL { index == 0 ? url : mirrors![index - 1] }

    /// Every listed URL in order: `url`, then the mirrors.
    public var urls: [ResourceURL] { [url] + (mirrors ?? []) }

    /// A resource; `digest` is its `sha256`.
    init(url: ResourceURL, path: String, digest: Digest256?, size: UInt64?, maxSize: UInt64?, notBefore: Instant?, expires: Instant?,
         priority: Priority, headers: [HeaderField], location: SourceLocation, encoding: EncodingMode = .refuse,
         mirrors: [ResourceURL]? = nil) {
        self.storedURL = url
        self.sharedPath = SharedPath(path, in: url)
        self.ownPath = sharedPath.isEmpty ? path : ""
        self.digest = digest ?? Digest256.zero
        self.priority = priority
        self.rare = Rare.make(mirrors: mirrors, headers: headers, maxSize: maxSize, notBefore: notBefore)
        (line, column) = (UInt32(clamping: location.line), UInt32(clamping: location.column))
        self.encoding = encoding
        if digest != nil { present |= 4 }
        self.size = size
        self.expires = expires
    }
}

/// Where a resource's path is found in its URL's text, as byte offsets `start..<end`; empty
/// when the path is kept as a string of its own. A path is shared only when its bytes are
/// exactly those of the URL's path where it ends (`/a/b.mp4` of `a/b.mp4`, query or not), or
/// of the text's end, and when it is longer than 15 bytes: a shorter string is held inline
/// anyway (no allocation to save). Reading a shared path makes a string of its bytes.
struct SharedPath: Sendable, Equatable {
    private var start: UInt16 = 0, end: UInt16 = 0

    init() {}

    init(_ path: String, in url: ResourceURL) {
        let count = path.utf8.count
        guard count > 15, url.text.utf8.count <= Int(UInt16.max) else { return }
        var path = path, text = url.text
        let pathEnd = url.pathBytes.upperBound
        let found: Int? = text.withUTF8 { text in
            path.withUTF8 { path in
                func endsAt(_ end: Int) -> Bool { end >= count && memcmp(text.baseAddress! + (end - count), path.baseAddress!, count) == 0 }
                return endsAt(pathEnd) ? pathEnd - count : endsAt(text.count) ? text.count - count : nil
            }
        }
        if let found { (start, end) = (UInt16(found), UInt16(found + count)) }
    }

    var isEmpty: Bool { end == 0 }

    func text(in urlText: String) -> String {
        var urlText = urlText
        return urlText.withUTF8 { String(decoding: UnsafeBufferPointer(rebasing: $0[Int(start)..<Int(end)]), as: UTF8.self) }
    }
}

extension Resource {
    /// The manifest entry as far as a cached copy and its failures depend on it: the URL's
    /// identity (no query), `sha256`, `size` and `encoding` (only when not the default
    /// `refuse`, so fingerprints recorded before the key existed still match). A failure
    /// recorded for another fingerprint is of an entry since changed: its attempts start
    /// afresh (SPEC §5). Plain text, not hashed again: it is made for every job of a run, and
    /// stored only with a failure.
    public var fingerprint: String { fingerprint(identity: "") }

    /// The fingerprint, given the URL's identity hash when the caller has it ("" when not).
    public func fingerprint(identity: String) -> String {
        (identity.isEmpty ? url.identityHash : identity) + ":" + (sha256 ?? "") + ":" + (size.map(String.init) ?? "")
            + (encoding == .refuse ? "" : ":" + encoding.rawValue)
    }

    /// The bytes its transfer moves over the wire, when known before it starts: `size`,
    /// except with `decode`, whose `size` counts the decoded bytes; what comes over the wire
    /// (what the metered budget counts, SPEC §7) is known only as it arrives.
    var sizeOnWire: UInt64? { encoding == .decode ? nil : size }
}
