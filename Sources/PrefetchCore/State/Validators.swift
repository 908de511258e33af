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
