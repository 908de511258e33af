import Foundation

/// What one resource's transfer needs to know before it starts. A revalidation `run` queues
/// one per resource, so what only a resource with mirrors needs sits in one `Boxed` part,
/// the partial in another, and the resource itself is read from its feed by position.
struct TransferJob {
    let feed: JobFeed
    /// The release the attempt belongs to (failures count within it).
    let release: Instant
    /// Validators of the cached copy, for a conditional request (revalidation).
    var cachedValidators: Validators?
    /// The partial recorded in state.db, if any (a retry carries the one just synced).
    @Boxed var partial: PartialState? = nil
    /// Under `max_cache_size` (SPEC §8): the file's length the plan admitted it at (its
    /// expected size, else the bytes of its partial already counted); writing past it takes
    /// room from the run's `CacheAllowance`.
    var cacheAdmitted: UInt64 = 0
    /// Not started before this instant (a retry within the run).
    var notBefore: Instant = .distantPast
    /// Where an earlier attempt of this run asked to resume, when the server answered with
    /// the whole file (0: none): the line the resource ends with says so.
    var refusedResume: UInt64 = 0
    @Boxed private var mirrorParts = MirrorParts.absent
    /// The URL's identity hash (`ResourceURL.identityDigest`), as state.db records it.
    let urlDigest: Digest256
    /// The cached copy's recorded length: a copy on disk of another length is not revalidated.
    var cachedLength: UInt64?
    /// The resource's place in its feed's `resources`.
    private let position: UInt32
    private var failureCount: UInt32 = 0
    private var urlPosition: UInt32 = 0

    var resource: Resource { feed.feed.resources[Int(position)] }
    /// Its feed's name and its path: made from the two (they share their strings), not kept.
    var key: ResourceKey { ResourceKey(feed: feed.feed.name, path: resource.path) }
    var urlHash: String { urlDigest.hex }
    /// The manifest entry's fingerprint (failures count for it only): made when a failure is
    /// recorded, not carried by every job.
    var entry: String { resource.fingerprint(identity: urlHash) }
    /// Consecutive failures in this release before this attempt.
    var failures: Int {
        get { Int(failureCount) }
        set { failureCount = UInt32(clamping: newValue) }
    }
    /// The listed URL this request goes to (0: `url`, then the mirrors; SPEC §8).
    var urlIndex: Int {
        get { Int(urlPosition) }
        set { urlPosition = UInt32(newValue) }
    }
    /// For a resource with mirrors: the pass over its URLs (nil for one without).
    var mirrorPass: MirrorOrder? {
        get { mirrorParts.pass }
        set { mirrorParts.pass = newValue }
    }
    /// For a resource with mirrors: which listed URL served the cached copy (nil: none
    /// listed now), and, when that copy is revalidated, each listed URL's validators of it
    /// (nil: none known there).
    var servedIndex: Int? {
        get { mirrorParts.servedIndex }
        set { mirrorParts.servedIndex = newValue }
    }
    var validatorsByURL: [Validators?]? {
        get { mirrorParts.validatorsByURL }
        set { mirrorParts.validatorsByURL = newValue }
    }

    /// The job of `feed`'s resource at `position`.
    init(feed: JobFeed, position: Int, urlDigest: Digest256, release: Instant, cachedValidators: Validators?,
         cachedLength: UInt64? = nil, partial: PartialState?, failures: Int, notBefore: Instant = .distantPast) {
        self.feed = feed
        precondition(position < feed.feed.resources.count && position <= Int(UInt32.max), "no resource at \(position)")
        self.position = UInt32(position)
        self.urlDigest = urlDigest
        self.release = release
        self.cachedValidators = cachedValidators
        self.cachedLength = cachedLength
        self.notBefore = notBefore
        self.partial = partial
        self.failures = failures
    }

    /// What only a resource with mirrors needs.
    private struct MirrorParts: Defaulted {
        var pass: MirrorOrder?
        var servedIndex: Int?
        var validatorsByURL: [Validators?]?

        static let absent = MirrorParts()
    }
}

extension TransferJob {
    /// The URL this request goes to.
    var url: ResourceURL { urlIndex == 0 ? resource.url : resource.url(at: urlIndex) }

    /// How state.db names the URL a partial began at: nil for `url`, else its identity hash.
    var urlKey: String? { urlIndex == 0 ? nil : url.identityHash }

    /// The same job, its next request going to listed URL `index`: the validators sent
    /// there are that URL's own (SPEC §8).
    func at(_ index: Int) -> TransferJob {
        var job = self
        job.urlIndex = index
        if let byURL = validatorsByURL { job.cachedValidators = byURL[index] }
        return job
    }

    /// The job's URLs as SPEC §8 says, from what state.db recorded of the copy (`revalidates`:
    /// the copy is current and would be revalidated): for a resource with mirrors, its first
    /// pass (the URL that served the copy first) and each URL's own validators; for one
    /// without, a copy a mirror served (mirrors since dropped) is revalidated only with
    /// `url`'s own validators.
    mutating func listURLs(recorded: ResourceState?, revalidates: Bool) {
        let served = recorded?.servedBy
        guard resource.mirrors != nil else {
            if let hash = served?.hash, hash != urlHash, revalidates { cachedValidators = served?.validators[urlHash] }
            return
        }
        let hashes = (0..<resource.urlCount).map { $0 == 0 ? urlHash : resource.url(at: $0).identityHash }
        let servedHash = served?.hash ?? urlHash
        servedIndex = hashes.firstIndex(of: servedHash)
        let pass = MirrorOrder(count: hashes.count, servedBy: servedIndex)
        mirrorPass = pass
        if revalidates, let recorded {
            validatorsByURL = hashes.indices.map { index in
                index == servedIndex ? recorded.validators : served?.validators[hashes[index]]
            }
        }
        self = at(pass.order[0])
    }

    /// What state.db records of the URL that answered, for a resource with mirrors.
    var answeringURL: MirrorURL? {
        guard mirrorPass != nil else { return nil }
        return MirrorURL(hash: urlIndex == 0 ? urlHash : url.identityHash, shown: urlIndex == 0 ? nil : url.redacted,
                         servedCopy: servedIndex == urlIndex)
    }
}

extension TransferJob {
    /// The same job with no cached copy to revalidate: the whole file is asked for.
    var withoutCachedCopy: TransferJob {
        var job = self
        job.cachedValidators = nil
        return job
    }
}
