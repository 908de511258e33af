/// One resource of a feed (SPEC §1): where to fetch it from, where it goes, and what it
/// must be. A manifest may list a million, so its storage is kept small with the helpers of
/// `Values/Compact/`: its optional numbers and digest in one `OptionalWords`, the parts few
/// entries have in one `Boxed` `Rare`, and a `path` that its URL's text already holds read
/// from there (`SharedPath`). Each field reads and writes as a plain property.
///
/// A new optional key: a field in `Rare` (with its accessor here) when few entries give it,
/// or a slot in `numbers` when most do; then its decoding (`ResourceDecoder`) and its test.
public struct Resource: Sendable {
    /// The parts few entries have: none of them stored for an entry that has none.
    struct Rare: Defaulted {
        var mirrors: [ResourceURL]? = nil
        var headers: [HeaderField] = []
        var maxSize: UInt64? = nil
        var notBefore: Instant? = nil
        var zsync: ZsyncSetting = .none

        static let absent = Rare()
    }

    private var storedURL: ResourceURL
    /// The path when it is not read from the URL's text ("" when it is).
    private var ownPath: String
    @Boxed private var rare = Rare.absent
    /// `size` at word 0, `expires` at word 1, the `sha256` digest at words 2 to 5.
    private var numbers = OptionalWords<6>()
    public var priority: Priority
    /// Its effective `encoding` (SPEC §7): its own, else its feed's, else `refuse`.
    public var encoding: EncodingMode = .refuse
    private var sharedPath = SharedPath()
    /// Where its entry starts in the manifest (`location`).
    private var line: UInt32, column: UInt32

    /// A resource; `digest` is its `sha256`.
    init(url: ResourceURL, path: String, digest: Digest256?, size: UInt64?, maxSize: UInt64?, notBefore: Instant?, expires: Instant?,
         priority: Priority, headers: [HeaderField], location: SourceLocation, encoding: EncodingMode = .refuse,
         mirrors: [ResourceURL]? = nil) {
        storedURL = url
        sharedPath = SharedPath(path, in: url)
        ownPath = sharedPath.isEmpty ? path : ""
        self.priority = priority
        self.encoding = encoding
        (line, column) = (UInt32(clamping: location.line), UInt32(clamping: location.column))
        rare = Rare(mirrors: mirrors, headers: headers, maxSize: maxSize, notBefore: notBefore)
        numbers[0] = size
        numbers[1] = expires
        numbers[2] = digest
    }

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
        get { sharedPath.isEmpty ? ownPath : sharedPath.text(in: storedURL) }
        set {
            sharedPath = SharedPath(newValue, in: storedURL)
            ownPath = sharedPath.isEmpty ? newValue : ""
        }
    }
    /// Whether `path` is read from the URL's text (no string of its own).
    var pathIsShared: Bool { !sharedPath.isEmpty }

    /// Exact expected length in bytes.
    public var size: UInt64? {
        get { numbers[0] }
        set { numbers[0] = newValue }
    }
    /// Removed from the cache after this instant.
    public var expires: Instant? {
        get { numbers[1] }
        set { numbers[1] = newValue }
    }
    /// Expected SHA-256.
    var digest: Digest256? {
        get { numbers[2] }
        set { numbers[2] = newValue }
    }
    /// Expected SHA-256, lowercase hex.
    public var sha256: String? { digest?.hex }

    /// Other URLs of the same file, tried in order after `url` (SPEC §8, "Mirrors"); nil
    /// when there are none.
    public var mirrors: [ResourceURL]? {
        get { rare.mirrors }
        set { rare.mirrors = newValue }
    }
    /// Request headers of its own (SPEC §1), the feed's merged in.
    public var headers: [HeaderField] {
        get { rare.headers }
        set { rare.headers = newValue }
    }
    /// Upper bound when the length is not known exactly.
    public var maxSize: UInt64? {
        get { rare.maxSize }
        set { rare.maxSize = newValue }
    }
    /// Never fetched before this instant.
    public var notBefore: Instant? {
        get { rare.notBefore }
        set { rare.notBefore = newValue }
    }

    /// Its effective `zsync` (SPEC §9): its own, else its feed's, else `none`.
    public var zsync: ZsyncSetting {
        get { rare.zsync }
        set { rare.zsync = newValue }
    }
    /// Whether a delta may be tried for it: a control file, and an effective `encoding` of
    /// `refuse` (with `keep` or `decode` the bytes on the wire are not the file's: a warning).
    var triesDelta: Bool { rare.zsync != .none && encoding == .refuse }

    /// Where the resource's entry starts in the manifest.
    public var location: SourceLocation {
        get { SourceLocation(line: Int(line), column: Int(column)) }
        set { (line, column) = (UInt32(clamping: newValue.line), UInt32(clamping: newValue.column)) }
    }

    /// How many URLs it lists: `url` and its mirrors.
    public var urlCount: Int { 1 + (mirrors?.count ?? 0) }

    /// The listed URL at `index`: 0 is `url`, then the mirrors in order.
    public func url(at index: Int) -> ResourceURL { index == 0 ? url : mirrors![index - 1] }

    /// Every listed URL in order: `url`, then the mirrors.
    public var urls: [ResourceURL] { [url] + (mirrors ?? []) }
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
        let count = path.utf8.count, textCount = url.text.utf8.count
        guard count > 15, textCount <= Int(UInt16.max) else { return }
        func endsAt(_ end: Int) -> Bool { end >= count && SameBytes.equal(url.text, at: end - count, path) }
        let pathEnd = url.pathBytes.upperBound
        guard let end = endsAt(pathEnd) ? pathEnd : endsAt(textCount) ? textCount : nil else { return }
        (start, self.end) = (UInt16(end - count), UInt16(end))
    }

    var isEmpty: Bool { end == 0 }

    func text(in url: ResourceURL) -> String { SameBytes.text(url.text, bytes: Int(start)..<Int(end)) }
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
