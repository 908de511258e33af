import Foundation

/// One resource's delta (SPEC §9 "Deltas (zsync)"): the I/O around `DeltaMachine` — the
/// control file asked for, the seeds scanned into the delta partial, the missing blocks
/// fetched as ranges (`DeltaTransfer+Blocks`), the assembled file checked and placed —
/// ending in what the caller records. Runs on the delta round's thread, off the transfer
/// loop; `keepGoing` (a stop, a pause, the window's end) is asked at least every 100 ms.
///
/// Resume: a delta that stops keeps its partial, fsynced, and its control file beside it in
/// the partial folder, with their record in state.db; the next one asks for the control file
/// conditionally (a 304 keeps it) and scans the partial again as a seed.
struct DeltaTransfer {
    /// How the delta ended.
    enum Outcome {
        /// The copy is current (the control file said so).
        case fresh
        /// The file is assembled, checked, fsynced and renamed into place (`folders`: where
        /// it went, and the folders created on the way, to fsync before it is recorded).
        case placed(Placed)
        /// The delta's trouble: fetch the resource whole in this pass.
        case wholeFetch(DeltaRefusal)
        /// The resource's trouble, judged as any transfer's failure (no whole fetch in this pass).
        case failed(TransferFailure)
        /// A stop, a pause or the window's end, in words.
        case interrupted(String)
    }

    struct Placed {
        let length: UInt64
        /// The file's SHA-1 (its control file's).
        let sha1: String
        let reused: UInt64
        let validators: Validators
        let identity: FileIdentity
        let folders: [FileDescriptor]
    }

    let job: TransferJob
    let cache: CacheFolder
    let state: StateStore
    let config: Config
    let environment: [String: String]
    /// Nil to go on, else why the delta must end now.
    let keepGoing: () -> String?
    /// What is left of the feed's metered budget today (SPEC §7), when one applies (nil: none).
    var budget: UInt64?
    /// Faults a test asks for (`delta-write`).
    var faults = FaultPoints.none
    /// The SHA-1 of the control file the delta used at the URL that failed before this one
    /// (SPEC §8, §9 step 3): it goes on here only with a control file of the same.
    var movedWith: String?
    /// The feed's `max_rate` over the delta's ranges (nil: none).
    lazy var pace: RangeFetcher.Pace? = job.feed.limits.maxRate.map { RangeFetcher.Pace(bytesPerSecond: $0.bytes) }
    /// A write failed for want of room (ENOSPC, EDQUOT): the run pauses, as for a transfer (SPEC §7).
    var diskFull = false
    /// Body bytes that came over the wire (control file and ranges).
    var wireBytes: UInt64 = 0

    // The delta's own state, shared with its extension.
    var blocks: DeltaBlocks?
    var control: ZsyncControl?
    /// The control file's URL, and its bytes and validators as last fetched (kept beside the partial).
    var controlURL: ResourceURL?
    var controlBytes: [UInt8] = []
    var controlValidators: Validators?
    /// A delta partial kept by an earlier run (or a URL before this one), with its control file:
    /// always scanned again as a seed; resumed (its control file asked on its validators) only
    /// when it was made from this control file's URL.
    var kept: (record: DeltaPartialRecord, control: ZsyncControl, bytes: [UInt8])?
    var resumes = false
    /// The copy's SHA-1 being read beside the scan (none was recorded).
    var copyDigest: BackgroundSHA1?
    var partial: FileDescriptor?
    /// The strong validator of the delta's 206s (sent as If-Range), and their validators.
    var validator: String?
    var rangeValidators = Validators()
    var reused: UInt64 = 0
    /// A 200's body read as the whole file (its length), and the refusal it came with.
    var wholeBody: UInt64?
    private(set) var refusal: DeltaRefusal?
    var interrupted: String?
    var writeError: String?
    /// The last exchange's failure beyond its words, and its `Retry-After` (the resource's trouble).
    var trouble = SingleExchange.Trouble()
    var retryAfter: String?
    var buffer = [UInt8](repeating: 0, count: 256 * 1024)
    var deltaName: String { CacheLayout.deltaName(feed: job.key.feed, path: job.key.path) }
    var controlName: String { CacheLayout.controlName(feed: job.key.feed, path: job.key.path) }

    init(job: TransferJob, cache: CacheFolder, state: StateStore, config: Config, environment: [String: String],
         keepGoing: @escaping () -> String?) {
        self.job = job
        self.cache = cache
        self.state = state
        self.config = config
        self.environment = environment
        self.keepGoing = keepGoing
    }

    mutating func run() -> Outcome {
        guard MD4.isAvailable else { return end(.wholeFetch(.noMD4)) }
        guard let url = job.resource.zsync.controlURL(for: job.url) else { return end(.wholeFetch(.controlUnusable("no control file URL"))) }
        controlURL = url
        let seed = cache.openFinal(feed: job.key.feed, path: job.key.path)
        kept = keptPartial()
        resumes = kept?.record.controlURL == url.text
        // Its 206s' validator is sent as If-Range again only at the URL they came from: a
        // control file of the resource's own URL (`auto`), or a resource of one URL (SPEC §8:
        // a partial moves to another URL without If-Range).
        if resumes, movedWith == nil, job.resource.mirrors == nil || job.resource.zsync == .auto { validator = kept?.record.ifRange }
        // The control file stands in for the copy's revalidation, conditionally on its own
        // validators while their SHA-1 is the copy's (SPEC §9); a changed entry asks without;
        // a kept partial's control file is asked for on its own validators. A delta moved here
        // from another URL has revalidated already: a new version is known.
        // (A current copy due for revalidation: its job carries validators — at a mirror that
        // never answered for it none, but then the other URLs' are known.)
        let revalidates = seed != nil && movedWith == nil && (job.cachedValidators != nil || job.validatorsByURL != nil)
        // The budget in two steps (SPEC §9): first the control file (its last length, else its bound)…
        let known = try? state.controlFile(url.text)
        if let budget, budget < known.map({ $0.length }) ?? ZsyncControl.bound(size: job.resource.size) {
            return end(.interrupted(MeteredAllowance.pausedReason))
        }
        // The copy's SHA-1: as recorded at placement, else read once from the file (a copy
        // placed before the entry had `zsync`) and recorded (SPEC §9) — before the control
        // file for a revalidation, which it decides; for a changed entry, beside the scan.
        let copySHA1 = seed.flatMap { sha1(of: $0, now: revalidates) }
        if resumes, let kept {
            controlValidators = kept.record.validators
        } else if revalidates, let known, known.sha1 == copySHA1 {
            controlValidators = known.validators
        }
        var machine = DeltaMachine(.init(revalidates: revalidates, conditional: controlValidators != nil, copySHA1: copySHA1,
                                         resumes: resumes, movedWith: movedWith))
        var action = machine.first
        while true {
            switch action {
            case .askControl(let conditional):
                let answer = askControl(conditional: conditional)
                if let interrupted { return end(.interrupted(interrupted)) }  // a stop or a pause, not a failure (SPEC §8: no next URL)
                action = machine.handle(.control(answer))
            case .scan:
                guard let matched = scan(seed) else { return end(interrupted.map { .interrupted($0) } ?? .failed(.local(writeError ?? ""))) }
                action = machine.handle(.scanned(missing: matched.missing, length: matched.length, copyMatches: copyMatchesControl()))
                // … then the ranges, only when what is left covers the bytes still missing.
                if case .askRanges = action, let budget, budget < wireBytes + matched.missing {
                    return end(.interrupted(MeteredAllowance.pausedReason))
                }
            case .askRanges:
                let answer = askRanges()
                if let interrupted { return end(.interrupted(interrupted)) }
                if let writeError { return end(.failed(.local(writeError))) }
                action = machine.handle(.ranges(answer))
            case .check, .checkWhole:
                if case .checkWhole = action { refusal = .rangesIgnored }
                switch check(whole: machine.whole) {
                case .success(let placed): return end(.placed(placed))
                case .failure(.mismatch(let detail)): action = machine.handle(.checked(mismatch: detail))
                case .failure(.cannotWrite(let detail)): return end(.failed(.local(detail)))
                }
            case .place:
                preconditionFailure("placed by check")
            case .fresh:
                return end(.fresh)
            case .wholeFetch(let refused):
                return end(.wholeFetch(refused))
            case .fail(let message, let status):
                return end(.failed(resourceFailure(message, status: status)))
            }
        }
    }

    /// Ends with `outcome`: a delta that stopped or failed keeps its partial and control file
    /// (fsynced, recorded) for the next run; any other end removes them and their record.
    private mutating func end(_ outcome: Outcome) -> Outcome {
        copyDigest?.cancel()
        switch outcome {
        case .failed(let failure) where failure.httpStatus == 200:
            break  // a 200's whole body that failed its checks: thrown away, as a whole fetch's
        case .interrupted, .failed:
            if partial == nil, kept != nil { return outcome }  // stopped before it was opened: kept as it was
            if keep() { return outcome }
        case .fresh, .placed, .wholeFetch:
            break
        }
        if partial != nil || kept != nil { cache.removePartial(deltaName) }
        cache.removePartial(controlName)
        try? state.deleteDeltaPartial(job.key)
        return outcome
    }

    /// The copy's SHA-1 as recorded, while the copy is the file recorded; else read once from
    /// it and recorded — `now`, or on a thread of its own beside the scan (`copyDigest`).
    private mutating func sha1(of seed: FileDescriptor, now: Bool) -> String? {
        guard case .success(let info) = seed.status() else { return nil }
        if let recorded = try? state.copySHA1(job.key, file: FileIdentity(info)) { return recorded }
        guard now else {
            copyDigest = BackgroundSHA1(seed)
            return nil
        }
        guard let computed = try? CacheFolder.sha1(seed, buffer: &buffer).get() else { return nil }
        try? state.recordCopySHA1(job.key, computed)
        return computed
    }

    /// Whether the copy's SHA-1 read beside the scan is the control file's (it is recorded).
    private mutating func copyMatchesControl() -> Bool {
        guard let digest = copyDigest else { return false }
        copyDigest = nil
        guard let computed = digest.result() else { return false }
        try? state.recordCopySHA1(job.key, computed)
        return computed == control?.sha1
    }

    /// The resource's trouble as any transfer's failure (SPEC §9 "Whose trouble", judged as
    /// §5–§8 say): a 200's whole body that failed its checks is a mismatch; a 429, 502, 503 or
    /// 504 holds the origin for what its `Retry-After` says; a connection libcurl could not
    /// make or that broke before a head, or a head that did not come in time, holds it too;
    /// TLS is permanent; the rest is transient.
    private func resourceFailure(_ message: String, status: Int?) -> TransferFailure {
        switch status {
        case 200?:
            return TransferFailure(kind: .mismatch, message: message, retryAfter: nil, discardPartial: false, httpStatus: 200)
        case let status?:
            let holds = [429, 502, 503, 504].contains(status)
            return TransferFailure(kind: .transient, message: message, retryAfter: holds ? ResponseRules.retryAfter(retryAfter, now: Date()) : nil,
                                   discardPartial: false, httpStatus: status, holdsOrigin: holds ? "HTTP \(status)" : nil)
        case nil:
            return TransferFailure(kind: trouble.tls ? .permanent : .transient, message: message, retryAfter: nil, discardPartial: false,
                                   httpStatus: nil, holdsOrigin: trouble.holdsOrigin)
        }
    }

    // MARK: The control file

    private mutating func askControl(conditional: Bool) -> DeltaMachine.ControlAnswer {
        let resource = job.resource
        guard let url = controlURL else { return .unusable("no control file URL") }
        let ownOrigin = url.origin == job.url.origin
        let headers: [String]
        do { headers = ownOrigin ? try resource.headerLines(environment: environment) : [] } catch {
            return .failed(error.message, ownOrigin: true)
        }
        // §9's bound: 64 KiB and 20 bytes a block of the smallest size, for the most the file may be.
        let most = resource.size ?? min(resource.maxSize ?? config.maxSize.bytes, config.maxSize.bytes)
        let limit = ZsyncControl.headerLimit + Int(clamping: 20 * ((most + 255) / 256))
        let fetcher = SourceFetcher(config: config)
        var request = SourceRequest(url: url, headers: headers, validators: conditional ? controlValidators : nil, limit: limit,
                                    limitName: "the control file's limit", what: "control file", allowsDowngrade: false,
                                    clientCertificate: config.clientCertificate)
        // Its header says how long it is: no byte past that (or past 64 KiB without a header) is read (SPEC §7).
        request.refineLimit = ZsyncControl.declaredLength
        request.timeouts = SingleExchange.Timeouts(job.feed.limits, config: config)  // the feed's, as for its transfers
        let response = fetcher.fetch(request, stopRequested: { keepGoing() != nil })
        wireBytes += fetcher.bodyBytes
        (trouble, retryAfter) = (fetcher.trouble, fetcher.retryAfter)
        switch response {
        case .notModified:
            if resumes, let kept { (control, controlBytes) = (kept.control, kept.bytes) }
            return .notModified
        case .failed(let message):
            if let reason = keepGoing() {
                interrupted = reason
                return .failed(reason, ownOrigin: true)
            }
            let status = fetcher.status
            if status == 0 { return .failed(message, ownOrigin: ownOrigin) }
            if status != 200 { return .status(status, ownOrigin: ownOrigin) }
            return .unusable(message)
        case .body(let bytes, let validators):
            do {
                let read = try ZsyncControl(parsing: bytes, maxSize: config.maxSize.bytes, size: resource.size)
                (control, controlBytes, controlValidators) = (read, bytes, validators)
                try? state.recordControlFile(url.text, validators: validators, sha1: read.sha1, length: UInt64(bytes.count))
                return .file(sha1: read.sha1)
            } catch {
                return .unusable(error.detail)
            }
        }
    }

    // MARK: The check

    enum CheckFailure: Error { case mismatch(String), cannotWrite(String) }

    /// fsyncs the delta partial, checks its SHA-1 (and `sha256`, `size`), and renames it into
    /// place; a 200's `whole` body is judged as any whole fetch: its `sha256` and `size`.
    private mutating func check(whole: Bool) -> Result<Placed, CheckFailure> {
        guard let control, let file = partial else { return .failure(.cannotWrite("no delta partial")) }
        if case .failure(let error) = file.sync() { return .failure(.cannotWrite("cannot fsync the delta partial: \(error)")) }
        let digests: (sha1: String, sha256: String, length: UInt64, identity: FileIdentity)
        switch CacheFolder.digests(file, buffer: &buffer) {
        case .failure(let error): return .failure(.cannotWrite("cannot read the delta partial: \(error)"))
        case .success(let found): digests = found
        }
        if !whole, digests.sha1 != control.sha1 { return .failure(.mismatch("SHA-1 \(digests.sha1), the control file says \(control.sha1)")) }
        if let expected = job.resource.sha256, digests.sha256 != expected {
            return .failure(.mismatch(whole ? "sha256 mismatch: got \(digests.sha256.prefix(12))…, expected \(expected.prefix(12))…"
                                      : "sha256 \(digests.sha256), the entry says \(expected)"))
        }
        if let size = job.resource.size, digests.length != size { return .failure(.mismatch("\(digests.length) bytes, the entry says \(size)")) }
        var folders: [String: FileDescriptor] = [:]
        switch cache.place(partial: deltaName, feed: job.key.feed, path: job.key.path, folders: &folders) {
        case .failure(let error): return .failure(.cannotWrite(error.description))
        case .success(let (folder, createdIn)):
            partial = nil
            return .success(Placed(length: digests.length, sha1: digests.sha1, reused: whole ? 0 : reused, validators: rangeValidators,
                                   identity: digests.identity, folders: [folder] + createdIn))
        }
    }
}
