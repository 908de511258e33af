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
