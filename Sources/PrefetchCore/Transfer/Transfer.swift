import Foundation
internal import CCurl
internal import CShims

/// What one resource's transfer needs to know before it starts.
struct TransferJob {
    let feed: JobFeed
    let resource: Resource
    let key: ResourceKey
    /// The URL's identity hash, as state.db records it.
    let urlHash: String
    /// The manifest entry's fingerprint (failures count for it only): made when a failure is
    /// recorded, not carried by every job.
    var entry: String { resource.fingerprint(identity: urlHash) }
    /// The release the attempt belongs to (failures count within it).
    let release: Instant
    /// Validators of the cached copy, for a conditional request (revalidation).
    var cachedValidators: Validators?
    /// The cached copy's recorded length: a copy on disk of another length is not revalidated.
    var cachedLength: UInt64?
    /// The partial recorded in state.db, if any (a retry carries the one just synced).
    var partial: PartialState?
    /// Consecutive failures in this release before this attempt.
    var failures: Int
    /// Not started before this instant (a retry within the run).
    var notBefore: Instant = .distantPast
}

extension TransferJob {
    /// The same job with no cached copy to revalidate: the whole file is asked for.
    var withoutCachedCopy: TransferJob {
        var job = self
        job.cachedValidators = nil
        return job
    }
}

/// A feed as its jobs see it: one shared reference, so a job list of thousands does not
/// copy (and retain, and release) a whole manifest entry per job.
final class JobFeed {
    let feed: Feed
    /// When the window this run's transfers of the feed run in closes (nil: it never does):
    /// they are paused then, checked at every look the engine takes, not only every 2 s.
    var windowEnd: Instant?
    var name: String { feed.name }
    var limits: FeedLimits { feed.limits }
    var retry: RetryPolicy { feed.retry }
    var conditions: Conditions { feed.conditions }
    var timeZone: TimeZone { feed.timeZone }

    init(_ feed: Feed) {
        self.feed = feed
    }
}

/// How a transfer ended.
enum TransferOutcome {
    /// Verified and ready to place: the partial holds exactly the new version.
    case complete(bytes: UInt64, validators: Validators, sha256: String?)
    /// 304: the cached copy is current.
    case notModified(Validators)
    /// Follow this redirect (already checked: scheme, loop, count).
    case redirect(String)
    case failed(TransferFailure)
}

/// Why a transfer failed, and what that means for retries (SPEC §5).
struct TransferFailure: Error, Equatable {
    enum Kind: Equatable {
        /// Network error, 5xx, 429, short body: retried with backoff; the partial is kept.
        case transient
        /// 404, 410, 401, 403, TLS, bad redirects: failed until the next release.
        case permanent
        /// size or sha256 mismatch, over the cap: counts as an attempt, not retried in this run.
        case mismatch
        /// The disk is full: pause everything, count no attempt.
        case diskFull
    }

    var kind: Kind
    var message: String
    /// Seconds the server asked to wait (Retry-After), if any.
    var retryAfter: Int64?
    /// Whether the partial must be thrown away.
    var discardPartial: Bool
    var httpStatus: Int?
}

/// One resource's HTTP exchange (following redirects by hand so manifest headers never
/// reach another origin), writing into its partial file and hashing as bytes arrive.
///
/// The partial file is opened only when it is needed: at once when resuming, otherwise
/// when a 2xx body begins. A revalidation answered with 304 touches no file at all.
final class Transfer {
    let job: TransferJob
    let easy: CurlEasy
    let partialName: String
    /// The partial, once opened (see `openFile`).
    private(set) var file: FileDescriptor?
    /// Creates the partial afresh (empty) when a new body begins.
    private let createFile: () -> Result<FileDescriptor, Errno>
    /// Gathers a large or hashed body into big writes (and hashes it); nil while the body
    /// is written as it comes (small files, and before a body begins).
    private var body: BodyWriter?
    /// Bodies at least this long (or of unknown length) are gathered; smaller ones arrive in
    /// a callback or two and are written at once.
    private static let gatherFrom: UInt64 = 1 << 20
    /// The feed's `max_rate` bucket, shared with its other transfers.
    private let limiter: RateLimiter?
    /// Paused by the write callback until the bucket refills (the engine resumes it).
    private(set) var pausedForRate = false
    /// The feed's `metered_budget` for today, on a metered link.
    private let allowance: MeteredAllowance?
    /// Bytes of the budget reserved for this transfer when it started (known sizes).
    var reservedBudget: UInt64 = 0
    /// Paused by the write callback because the metered budget ran out (the engine then
    /// takes it out of the run, resumably).
    private(set) var pausedForBudget = false
    /// On a real disk, writeback of each few MiB starts as they arrive, so the fsync
    /// before placement waits for little more than the tail (and a big file is not all
    /// dirty in memory at once).
    private let startWriteback: Bool
    private var writebackFrom: UInt64 = 0
    private static let writebackStep: UInt64 = 8 << 20
    /// SHA-256 of a body written as it comes (small bodies: hashed inline, on this thread);
    /// a gathered body is hashed by its `BodyWriter`. Every placed file's digest is recorded
    /// (SPEC §5), whether or not the manifest gives one to check.
    private var inlineHasher: SHA256?
    /// Bytes in the partial (and hashed).
    private(set) var offset: UInt64 = 0
    /// Where the current request's Range starts (0: the whole body).
    private(set) var requestedFrom: UInt64 = 0
    /// Bytes known to be on disk (after an fsync), recorded in state.db.
    var syncedOffset: UInt64 = 0
    /// Whether state.db may hold a partial record for this resource (to clear on success).
    lazy var partialRecorded = job.partial != nil
    /// This boot's id, recorded with the partial (SPEC §5's partial-trust rule).
    let bootID: String
    /// The run's body buffers (for gathered and hashed bodies).
    private let pool: BufferPool
    /// The partial file's inode, once it is open.
    private(set) var fileInode: UInt64?
    /// Whether state.db holds the record of the body being received (its validators, this
    /// boot, this inode): the engine commits it (`needsRecord`) before the file holds 1 MiB
    /// — or, resuming, before anything is appended — and the write callback pauses until then.
    var recordCommitted = false
    /// The engine has taken the record to commit.
    var recordRequested = false
    /// Paused by the write callback until the record is committed.
    private(set) var pausedForRecord = false
    let cap: UInt64
    let capName: String
    private(set) var url: String
    private var visited: Set<String> = []
    private(set) var redirects = 0
    private var conditional = false
    private var ifRange: String?
    /// Body bytes received in this run (for throughput and metered budgets).
    private(set) var received: UInt64 = 0
    /// How much of `received` the engine has counted already.
    var counted: UInt64 = 0
    /// Validators of the response that produced the partial's bytes.
    private(set) var partialValidators = Validators()
    private(set) var expectedTotal: UInt64?
    /// The last byte a 206 said it carries (its Content-Range), while its body is received.
    private var rangeEnd: UInt64?
    let startedAt = Date()

    /// What the current request asked for and what the client holds (the rules' input).
    private var asked = ResponseRules.Request()

    // The response being received.
    /// The response's head as it arrives (the status line resets it: redirects, 100-continue).
    private var head = ResponseRules.Head(status: 0)
    private var status: Int { head.status }
    private var decided = false
    private var callbackFailure: TransferFailure?

    /// `existing` is the partial already on disk, opened, with its size: only passed when
    /// state.db records a partial for this resource (nothing else could be resumed).
    init(job: TransferJob, easy: CurlEasy, partialName: String, existing: (file: FileDescriptor, size: UInt64, inode: UInt64)?,
         globalCap: UInt64, bootID: String, pool: BufferPool, limiter: RateLimiter? = nil, allowance: MeteredAllowance? = nil, startWriteback: Bool = false,
         createFile: @escaping () -> Result<FileDescriptor, Errno>) {
        self.bootID = bootID
        self.pool = pool
        self.fileInode = existing?.inode
        self.limiter = limiter
        self.allowance = allowance
        self.startWriteback = startWriteback
        self.job = job
        self.easy = easy
        self.file = existing?.file
        self.partialName = partialName
        self.createFile = createFile
        url = job.resource.url.text
        if let size = job.resource.size {
            cap = size
            capName = "size \(size) bytes"
        } else if let maxSize = job.resource.maxSize, maxSize < globalCap {
            cap = maxSize
            capName = "max_size \(ByteSize.format(maxSize))"
        } else {
            cap = globalCap
            capName = "the global max_size \(ByteSize.format(globalCap))"
        }
        prepareResume(existing: existing.map { ($0.size, $0.inode) })
    }

    /// FAULTS 2, 3, 7, 8: a partial is trusted as `PartialTrust` says (its whole length in the
    /// boot that wrote it, else its fsynced offset), resumed with If-Range on a strong ETag
    /// (never a weak one), else Last-Modified, else only when a sha256 will check the result;
    /// anything else restarts from zero.
    private func prepareResume(existing: (size: UInt64, inode: UInt64)?) {
        var resume: UInt64 = 0
        if let partial = job.partial,
           let trusted = PartialTrust.trustedLength(record: partial, urlHash: job.urlHash, file: existing, bootID: bootID) {
            let plan = ResponseRules.resume(trusted: trusted, validators: partial.validators, sha256Given: job.resource.sha256 != nil)
            resume = plan.from
            ifRange = plan.ifRange
            if resume > 0 { partialValidators = partial.validators }
        }
        if resume > 0, primeHash(upTo: resume) {
            offset = resume
            requestedFrom = resume
            writebackFrom = resume
            // Durable for certain: what an fsync recorded, not more (the rest is trusted only in this boot).
            syncedOffset = min(resume, job.partial?.syncedOffset ?? 0)
        } else {
            ifRange = nil
            restartFromZero()
            file = nil  // any old partial is replaced when a body begins
            syncedOffset = 0
        }
        // Revalidate a cached copy only when not resuming: a 304 is never "complete" for a partial (FAULTS 11).
        conditional = requestedFrom == 0 && job.cachedValidators.map { $0.etag != nil || $0.lastModified != nil } == true
    }

    /// Cuts the partial back to `length` and hashes those bytes once (FAULTS 2).
    private func primeHash(upTo length: UInt64) -> Bool {
        guard let file, case .success = file.truncate(to: length), case .success = file.seek(to: 0) else { return false }
        let hasher = BodyWriter(pool: pool)
        self.body = hasher
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var remaining = length
        while remaining > 0 {
            let want = Int(min(UInt64(buffer.count), remaining))
            let got = buffer.withUnsafeMutableBytes { file.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want])) }
            guard case .success(let n) = got, n > 0 else { return false }
            buffer.withUnsafeBytes { hasher.hashOnly(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            remaining -= UInt64(n)
        }
        return true
    }

    private func restartFromZero() {
        if let file {
            _ = file.truncate(to: 0)
            _ = file.seek(to: 0)
        }
        recordCommitted = false
        body = nil
        inlineHasher = nil
        writebackFrom = 0
        offset = 0
        requestedFrom = 0
        syncedOffset = 0
        partialValidators = Validators()
    }

    // MARK: Request

    /// Configures the easy handle for the current URL. Throws for a missing `${VAR}`.
    func configure(config: Config, environment: [String: String]) throws(TransferFailure) {
        head = ResponseRules.Head(status: 0)
        rangeEnd = nil
        decided = false
        var lines = ["Accept-Encoding: identity"]  // ranges must refer to the stored bytes (FAULTS 15)
        if isSameOrigin(url) {
            for header in job.resource.headers {
                do {
                    lines.append("\(header.name): \(try header.value.resolve(environment))")
                } catch {
                    throw TransferFailure(kind: .permanent, message: "header \(header.name) needs the environment variable \(error.name), which is not set",
                                          retryAfter: nil, discardPartial: false, httpStatus: nil)
                }
            }
        }
        if requestedFrom > 0 {
            lines.append("Range: bytes=\(requestedFrom)-")
            if let ifRange { lines.append("If-Range: \(ifRange)") }
        } else if conditional, let validators = job.cachedValidators {
            if let etag = validators.etag { lines.append("If-None-Match: \(etag)") }
            if let lastModified = validators.lastModified { lines.append("If-Modified-Since: \(lastModified)") }
        }
        asked = ResponseRules.Request(resumeFrom: requestedFrom, partialValidators: partialValidators,
                                      partialTotal: requestedFrom > 0 ? job.partial?.totalLength : nil,
                                      revalidating: requestedFrom == 0 && conditional ? job.cachedValidators : nil,
                                      size: job.resource.size, cap: cap, capName: capName)
        do {
            if !easy.configured {
                // Options that are the same for every transfer of a run: set once per handle
                // (the engine reuses handles; every other option is set on each request).
                try easy.set(CURLOPT_PROTOCOLS_STR, "http,https", "protocols")
                try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https", "redirect protocols")
                try easy.set(CURLOPT_FOLLOWLOCATION, 0, "follow location")  // redirects are followed by hand (headers, loops)
                try easy.set(CURLOPT_NOSIGNAL, 1, "no signal")
                try easy.set(CURLOPT_LOW_SPEED_LIMIT, 1024, "low speed limit")
                try easy.set(CURLOPT_SSL_VERIFYPEER, 1, "verify peer")
                try easy.set(CURLOPT_SSL_VERIFYHOST, 2, "verify host")
                if let caFile = config.caFile { try easy.set(CURLOPT_CAINFO, caFile, "ca_file") }
                try easy.set(CURLOPT_USERAGENT, Self.userAgent, "user agent")
                try easy.set(CURLOPT_WRITEFUNCTION, callback: { data, size, count, user in
                    let transfer = Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue()
                    return transfer.receive(UnsafeRawBufferPointer(start: data, count: size * count))
                })
                try easy.set(CURLOPT_HEADERFUNCTION, callback: { data, size, count, user in
                    let transfer = Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue()
                    transfer.header(UnsafeRawBufferPointer(start: data, count: size * count))
                    return size * count
                })
                easy.configured = true
            }
            try easy.set(CURLOPT_URL, url, "url")
            easy.clearError()
            try easy.setHeaders(lines)
            try easy.set(CURLOPT_CONNECTTIMEOUT, Int((job.feed.limits.connectTimeout ?? config.connectTimeout).seconds), "connect timeout")
            try easy.set(CURLOPT_LOW_SPEED_TIME, Int((job.feed.limits.stallTimeout ?? config.stallTimeout).seconds), "stall timeout")
            try easy.setBufferSize(Self.bufferSize(job, limiter: limiter))
            let me = Unmanaged.passUnretained(self).toOpaque()
            try easy.set(CURLOPT_WRITEDATA, pointer: me)
            try easy.set(CURLOPT_HEADERDATA, pointer: me)
        } catch {
            // libcurl refused an option: a fault of this handle, not of the resource. The
            // handle is dropped (the engine does not reuse it) and the transfer is retried.
            throw TransferFailure(kind: .transient, message: "libcurl: \(error.message)", retryAfter: nil, discardPartial: false, httpStatus: nil)
        }
    }

    /// Large reads mean fewer callbacks and writes; a capped feed reads less at a time: about
    /// an eighth of a second of one transfer's share of the rate, so shares stay even.
    static func bufferSize(_ job: TransferJob, limiter: RateLimiter?) -> Int {
        guard limiter != nil else { return 512 * 1024 }
        return RateLimiter.bufferSize(for: (job.feed.limits.maxRate?.bytes ?? 0) / UInt64(max(1, job.feed.limits.concurrency)))
    }

    private static let userAgent = "prefetch/\(ProgramVersion.text)"

    /// Resumes a transfer paused for its feed's `max_rate` (libcurl may hand over the
    /// held-back bytes from inside this call).
    func resumeAfterRateLimit() {
        pausedForRate = false
        easy.unpause()
    }

    /// Whether a response's body has begun (before: connecting or waiting for the answer).
    var receiving: Bool { decided }

    /// Lets a transfer paused for its record go on, once the record is committed.
    func resumeAfterRecord() {
        guard pausedForRecord else { return }
        pausedForRecord = false
        easy.unpause()
    }

    /// Whether the body being received needs its record committed now: it may come to hold
    /// 1 MiB, or it continues (or replaces) a partial state.db already knows of.
    var needsRecord: Bool {
        guard decided, (200..<300).contains(status), callbackFailure == nil, file != nil, !recordCommitted, !recordRequested else {
            return false
        }
        return bodyIsRecorded
    }

    /// A body that may come to hold 1 MiB, or that continues or replaces a recorded partial.
    private var bodyIsRecorded: Bool {
        requestedFrom > 0 || partialRecorded || (expectedTotal ?? .max) > PartialTrust.recordBefore
    }

    /// The partial's record with `offset` known durable: validators, this boot, this inode.
    func partialRecord(syncedOffset offset: UInt64, validators: Validators? = nil, total: UInt64?? = nil, at time: Instant) -> PartialState {
        PartialState(urlHash: job.urlHash, validators: validators ?? partialValidators, totalLength: total ?? expectedTotal,
                     syncedOffset: offset, updatedAt: time, bootID: bootID, inode: fileInode)
    }

    private func isSameOrigin(_ text: String) -> Bool {
        if text == job.resource.url.text { return true }  // the first request: no parse
        guard let other = try? ResourceURL.parse(text) else { return false }
        return other.origin == job.resource.url.origin
    }

    // MARK: Callbacks (on the engine's thread, inside curl_multi_perform)

    /// The response headers prefetch reads, in `ResponseRules.Head.set`'s order; others are
    /// skipped without building strings.
    private static let wantedHeaders: [[UInt8]] =
        ["content-length", "content-range", "etag", "last-modified", "location", "retry-after", "content-encoding"].map { Array($0.utf8) }

    private func header(_ bytes: UnsafeRawBufferPointer) {
        // Trim CR/LF as bytes: in a Swift String "\r\n" is one Character, so hasSuffix("\n") misses it.
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        if end >= 5, bytes[0] == 0x48, bytes[1] == 0x54, bytes[2] == 0x54, bytes[3] == 0x50, bytes[4] == 0x2F {  // "HTTP/"
            // A status line (one per response, redirects and 100-continue included).
            var index = 5
            while index < end, bytes[index] != 0x20 { index += 1 }
            while index < end, bytes[index] == 0x20 { index += 1 }
            var code = 0, digits = 0
            while index < end, digits < 3, (0x30...0x39).contains(bytes[index]) {
                code = code * 10 + Int(bytes[index] - 0x30)
                index += 1
                digits += 1
            }
            head = ResponseRules.Head(status: digits == 3 ? code : 0)
            return
        }
        var colon = 0
        while colon < end, bytes[colon] != 0x3A { colon += 1 }
        guard colon < end else { return }
        for (index, name) in Self.wantedHeaders.enumerated() where name.count == colon {
            var same = true
            for i in 0..<colon where name[i] != bytes[i] | 0x20 { same = false; break }  // ASCII case-insensitive
            guard same else { continue }
            var start = colon + 1, stop = end
            while start < stop, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while stop > start, bytes[stop - 1] == 0x20 || bytes[stop - 1] == 0x09 { stop -= 1 }
            head.set(index, String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<stop]), as: UTF8.self))
            return
        }
    }

    private func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        if !decided {
            decided = true
            decideOnFirstByte()
        }
        if callbackFailure != nil { return 0 }
        guard (200..<300).contains(status) else { return 0 }  // error pages never land (FAULTS 14)
        // The record comes first (SPEC §5): before the file holds 1 MiB, and before anything is
        // appended to a partial resumed. First of the checks, so a chunk handed over again
        // after this pause is counted once by the others.
        if !recordCommitted, offset + UInt64(bytes.count) > (requestedFrom > 0 ? requestedFrom : PartialTrust.recordBefore), bodyIsRecorded {
            pausedForRecord = true  // libcurl keeps these bytes and hands them over again on resume
            return Int(CURL_WRITEFUNC_PAUSE)
        }
        if let limiter, !limiter.take(bytes.count, for: self) {
            pausedForRate = true  // libcurl keeps these bytes and hands them over again on resume
            return Int(CURL_WRITEFUNC_PAUSE)
        }
        // After the rate check, so a chunk handed over again after a rate pause is counted once.
        if let allowance, !allowance.take(bytes.count, reservations: reservedBudget == 0) {
            pausedForBudget = true
            return Int(CURL_WRITEFUNC_PAUSE)
        }
        // The cap is enforced as bytes arrive, chunked or not (FAULTS 13).
        if offset + UInt64(bytes.count) > cap {
            callbackFailure = TransferFailure(kind: .mismatch, message: "the body is longer than \(capName); cut off and discarded",
                                              retryAfter: nil, discardPartial: true, httpStatus: status)
            return 0
        }
        guard let file else { return 0 }  // not opened: `callbackFailure` says why
        if let body {
            // Gathered and written a buffer at a time (and hashed off this thread): BodyWriter.
            if let error = body.append(bytes, to: file, at: offset) {
                callbackFailure = Self.writeFailure(error, status: status)
                return 0
            }
        } else if case .failure(let error) = file.write(bytes) {
            callbackFailure = Self.writeFailure(error, status: status)
            return 0
        } else {
            inlineHasher?.update(bytes)
        }
        offset += UInt64(bytes.count)
        received += UInt64(bytes.count)
        let written = writtenOffset
        if startWriteback, written >= writebackFrom + Self.writebackStep {
            file.startWriteback(from: writebackFrom, count: written - writebackFrom)
            writebackFrom = written
        }
        return bytes.count
    }

    private static func writeFailure(_ error: Errno, status: Int?) -> TransferFailure {
        let full = error.code == ENOSPC || error.code == EDQUOT
        return TransferFailure(kind: full ? .diskFull : .transient, message: full ? "disk full" : "cannot write the partial: \(error)",
                               retryAfter: nil, discardPartial: false, httpStatus: status)
    }

    /// Bytes of the partial that reached the file (the last few may still be gathering in
    /// `body`'s buffer): what an fsync now makes durable.
    var writtenOffset: UInt64 {
        offset - UInt64(body?.pending ?? 0)
    }

    /// Writes what is gathered, then `writtenOffset` (less, when that write fails).
    func settledOffset() -> UInt64 {
        _ = body?.flush()
        return writtenOffset
    }

    /// A 2xx body begins: `ResponseRules.onHead` says whether it is written, after the
    /// partial (a 206 continuing it) or from zero (FAULTS 5, 6: never appended otherwise).
    private func decideOnFirstByte() {
        switch ResponseRules.onHead(asked, head) {
        case .noBody:
            return
        case .refuse(let failure):
            callbackFailure = failure
            return
        case .append(let total, let end):
            expectedTotal = total
            rangeEnd = end
        case .restart(let total):
            rangeEnd = nil
            if requestedFrom > 0 || offset > 0 { restartFromZero() }
            expectedTotal = total
        }
        if file == nil, !openFile() { return }
        if body == nil, inlineHasher == nil {
            if expectedTotal.map({ $0 > offset ? $0 - offset : 0 }) ?? .max >= Self.gatherFrom {
                body = BodyWriter(pool: pool, hashing: true)
            } else {
                inlineHasher = SHA256()
            }
        }
        // A new version starts: its validators belong to the partial (SPEC §5).
        if status != 206 || partialValidators == Validators() {
            partialValidators = Validators(etag: head.etag, lastModified: head.lastModified)
        }
        // A body begins: its record (these validators, this boot) is written before it grows.
        recordCommitted = false
        recordRequested = false
    }

    /// Creates the partial for a body starting at byte 0 (replacing any stale one).
    private func openFile() -> Bool {
        switch createFile() {
        case .success(let opened):
            file = opened
            if case .success(let info) = opened.status() { fileInode = UInt64(info.st_ino) }
            return true
        case .failure(let error):
            let full = error.code == ENOSPC || error.code == EDQUOT
            callbackFailure = TransferFailure(kind: full ? .diskFull : .transient, message: full ? "disk full" : "cannot open the partial: \(error)",
                                              retryAfter: nil, discardPartial: false, httpStatus: status)
            return false
        }
    }

    // MARK: Completion

    /// Classifies the finished exchange: libcurl's result when no response came, else
    /// `ResponseRules.onEnd` (the status, the bytes on disk, the manifest's checks).
    func finish(curlCode: Int32, maxRedirects: Int) -> TransferOutcome {
        // An empty 2xx body calls no write callback: decide on it here (a 200 to a ranged
        // request still means "the file is now this, from zero"; its partial is created empty).
        if !decided, (200..<300).contains(status), curlCode == CurlGlobal.ok {
            decided = true
            decideOnFirstByte()
        }
        if let failure = callbackFailure { return .failed(failure) }
        if status == 0 {
            if CurlGlobal.tlsErrors.contains(curlCode) {
                return .failed(permanent("TLS: \(easy.describe(curlCode))", nil))
            }
            return .failed(TransferFailure(kind: .transient, message: easy.describe(curlCode), retryAfter: nil,
                                           discardPartial: false, httpStatus: nil))
        }
        if let error = body?.flush() { return .failed(Self.writeFailure(error, status: status)) }
        switch ResponseRules.onEnd(asked, head, onDisk: offset, cleanly: curlCode == CurlGlobal.ok, cut: easy.describe(curlCode), now: Date()) {
        case .redirect:
            guard let target = easy.redirectURL ?? head.location else {
                return .failed(permanent("HTTP \(status) without a usable Location", status))
            }
            return followRedirect(to: target, status: status, maxRedirects: maxRedirects)
        case .notModified(let validators):
            return .notModified(validators)
        case .failed(let failure):
            return .failed(failure)
        case .finalize(let total):
            expectedTotal = total
            let digest = SHA256.hex(body.map { $0.finish() } ?? inlineHasher?.finish() ?? SHA256().finish())
            body = nil
            inlineHasher = nil
            if let failure = ResponseRules.checkDigest(digest, expected: job.resource.sha256, status: status) { return .failed(failure) }
            return .complete(bytes: offset, validators: partialValidators, sha256: digest)
        }
    }

    private func permanent(_ message: String, _ status: Int?) -> TransferFailure {
        TransferFailure(kind: .permanent, message: message, retryAfter: nil, discardPartial: false, httpStatus: status)
    }

    /// FAULTS 18: only http/https, bounded, loops refused.
    private func followRedirect(to target: String, status: Int, maxRedirects: Int) -> TransferOutcome {
        let parsed: ResourceURL
        do {
            parsed = try ResourceURL.parse(target)
        } catch {
            let scheme = target.split(separator: ":").first.map(String.init) ?? target
            return .failed(permanent("redirect to \(scheme):// refused: only http and https are followed", status))
        }
        visited.insert(url)
        if visited.contains(parsed.text) {
            return .failed(permanent("redirect loop at \(parsed.redacted)", status))
        }
        redirects += 1
        if redirects > maxRedirects {
            return .failed(permanent("more than \(maxRedirects) redirects", status))
        }
        url = parsed.text
        return .redirect(parsed.text)
    }

}
