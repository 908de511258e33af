/// Per resource: the placed copy, the partial, and the failure record, as state.db holds
/// them. A state.db may hold a million, so its storage is kept small with the helpers of
/// `Values/Compact/`: the hashes as `HexText` (32 bytes when they are digests), the length
/// and times in one `OptionalWords`, the failure record and the parts few records have each
/// in a `Boxed`, and the last response, when it is the usual one (the copy's own validators),
/// as what else it said. Each field reads and writes as a plain property.
public struct ResourceState: Sendable, Equatable {
    private var urlHashText: HexText
    /// The `encoding` the placed copy was stored under (SPEC §7; `refuse` for a copy placed
    /// before state.db recorded it): an entry that now says another makes it `changed`.
    public var copyEncoding = EncodingMode.refuse
    private var copyValidators = Validators()
    private var response = LastResponse.none
    private var sha256Text: HexText?
    /// `length`, `placedAt`, `validatedAt`, `lastSuccess`, `lastResponseLength`, a word each.
    private var numbers = OptionalWords<5>()
    @Boxed private var failure = FailureRecord.absent
    @Boxed private var rare = Rare.absent

    public init(urlHash: String) {
        self.urlHashText = HexText(urlHash)
    }

    /// A record of these hashes as state.db's columns hold them (`SQLiteStatement.hexText`).
    init(urlHash: HexText, sha256: HexText?) {
        self.urlHashText = urlHash
        self.sha256Text = sha256
    }

    /// SHA-256 of the URL the copy came from (query values are never stored).
    public var urlHash: String {
        get { urlHashText.text }
        set { urlHashText = HexText(newValue) }
    }
    /// Whether `urlHash` is the hex of `digest` (a URL's `identityDigest`), with no text made.
    func recordsURL(_ digest: Digest256) -> Bool { urlHashText.isHex(of: digest) }

    public var sha256: String? {
        get { sha256Text?.text }
        set { sha256Text = newValue.map(HexText.init) }
    }
    /// Validators of the placed copy; recorded only for a version that passed every check.
    public var validators: Validators {
        get { copyValidators }
        set {
            guard case .copysOwn = response else { copyValidators = newValue; return }
            // The last response was kept as the copy's validators: it stays what it was.
            let kept = lastResponse
            copyValidators = newValue
            lastResponse = kept
        }
    }

    /// Length of the placed copy.
    public var length: UInt64? {
        get { numbers[0] }
        set { numbers[0] = newValue }
    }
    public var placedAt: Instant? {
        get { numbers[1] }
        set { numbers[1] = newValue }
    }
    /// Last time the copy was confirmed current (placed, or a 304).
    public var validatedAt: Instant? {
        get { numbers[2] }
        set { numbers[2] = newValue }
    }
    public var lastSuccess: Instant? {
        get { numbers[3] }
        set { numbers[3] = newValue }
    }
    /// The length the last response announced for the whole file (its Content-Length, or the
    /// total of its Content-Range), when it did.
    public var lastResponseLength: UInt64? {
        get { numbers[4] }
        set { numbers[4] = newValue }
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
    /// The manifest entry the failures belong to (`Resource.fingerprint`): failures of an
    /// entry since changed do not count.
    public var failureEntry: String? {
        get { failure.entry }
        set { failure.entry = newValue }
    }

    /// A partial download, if any.
    public var partial: PartialState? {
        get { rare.partial }
        set { rare.partial = newValue }
    }
    /// Whether `partial` is there (asked without copying the rare parts out for most records).
    public var hasPartial: Bool { _rare.isHeld && rare.partial != nil }
    /// Which listed URL served the copy and the other URLs' validators of it (SPEC §8);
    /// nil: the entry's `url` served it and no other URL's validators are known.
    public var servedBy: ServedBy? {
        get { rare.servedBy }
        set { rare.servedBy = newValue }
    }
    /// The last 2xx response of the resource (nil: none recorded, "never fetched"): §6's
    /// deadline rule judges by it whether a cut transfer could resume (`ResumeRule`).
    public var lastResponse: ResponseFacts? {
        get {
            switch response {
            case .none: return nil
            case .copysOwn(let date, let acceptRangesNone):
                return ResponseFacts(etag: copyValidators.etag, lastModifiedText: copyValidators.lastModifiedText, date: date,
                                     acceptRangesNone: acceptRangesNone, contentEncoding: nil)
            case .other: return rare.lastResponse
            }
        }
        set {
            if case .other = response { rare.lastResponse = nil }
            guard let newValue else { response = .none; return }
            if newValue.validators == copyValidators && newValue.contentEncoding == nil {
                response = .copysOwn(date: newValue.date, acceptRangesNone: newValue.acceptRangesNone)
            } else {
                response = .other
                rare.lastResponse = newValue
            }
        }
    }

    public static func == (a: ResourceState, b: ResourceState) -> Bool {
        a.urlHashText == b.urlHashText && a.validators == b.validators && a.sha256Text == b.sha256Text && a.numbers == b.numbers
            && a.copyEncoding == b.copyEncoding && a._failure == b._failure && a.partial == b.partial && a.servedBy == b.servedBy
            && a.lastResponse == b.lastResponse
    }

    /// How the last response is kept: most often it is the copy's own validators (the copy
    /// came from it), and then only what else it said is kept here.
    private enum LastResponse: Sendable, Equatable {
        case none
        /// The copy's validators, no `Content-Encoding`: its `Date` and `Accept-Ranges: none`.
        case copysOwn(date: String?, acceptRangesNone: Bool)
        /// Any other: in `rare.lastResponse`.
        case other
    }

    private struct FailureRecord: Defaulted {
        var permanent = false
        var lastError: String?
        var count = 0
        var release: Instant?
        var nextRetry: Instant?
        var entry: String?

        static let absent = FailureRecord()
    }

    /// What few records have.
    private struct Rare: Defaulted {
        var partial: PartialState?
        var servedBy: ServedBy?
        /// The last response, when it is not the copy's own (`LastResponse.other`).
        var lastResponse: ResponseFacts?

        static let absent = Rare()
    }
}
