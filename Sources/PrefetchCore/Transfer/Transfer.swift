import Foundation

/// How a transfer's exchange ended.
enum TransferOutcome {
    /// Verified and ready to place: the partial holds exactly the new version.
    case complete(bytes: UInt64, validators: Validators, sha256: String)
    /// 304: the cached copy is current.
    case notModified(Validators)
    /// Ask again at another URL (already checked: scheme, loop, count).
    case redirect(TransferStateMachine.Request)
    case failed(TransferFailure)
}

/// One resource's HTTP exchange, carried out: the libcurl handle and its callbacks, the
/// partial file, the digest taken as bytes arrive. What each event means is decided by
/// `machine` (`TransferStateMachine`); this type does what it answers. Redirects are
/// followed by hand, so manifest headers never reach another origin.
///
/// The partial file is opened only when it is needed: at once when resuming, otherwise
/// when a 2xx body begins. A revalidation answered with 304 touches no file at all.
final class Transfer {
    let job: TransferJob
    let easy: CurlEasy
    let partialName: String
    /// Where the transfer stands, and what each event means. Changed only by `Transfer`'s
    /// own methods (this file and Transfer+Request.swift); the engine reads it.
    var machine: TransferStateMachine
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
    /// SHA-256 of a body written as it comes (small bodies: hashed inline, on this thread);
    /// a gathered body is hashed by its `BodyWriter`. Every placed file's digest is recorded
    /// (SPEC §5), whether or not the manifest gives one to check.
    private var inlineHasher: SHA256?
    /// A zsync resource's body is also SHA-1 hashed as it comes (SPEC §9: the copy's SHA-1 is
    /// what its control file is compared with at the next release), inline or by its `BodyWriter`.
    private var inlineSHA1: SHA1?
    /// The placed body's SHA-1, for a zsync resource (nil for any other).
    private(set) var bodySHA1: String?
    /// The feed's `max_rate` bucket, shared with its other transfers.
    let limiter: RateLimiter?
    /// The feed's `metered_budget` for today, on a metered link.
    private let allowance: MeteredAllowance?
    /// Bytes of the budget reserved for this transfer when it started (known sizes).
    var reservedBudget: UInt64 = 0
    /// The room under `max_cache_size` (SPEC §8), and the file length this transfer holds
    /// room for (from the job's admitted length up, as it takes more).
    private let cacheAllowance: CacheAllowance?
    private var cacheHeld: UInt64
    /// On a real disk, writeback of each few MiB starts as they arrive, so the fsync
    /// before placement waits for little more than the tail (and a big file is not all
    /// dirty in memory at once).
    private let startWriteback: Bool
    private var writebackFrom: UInt64 = 0
    private static let writebackStep: UInt64 = 8 << 20
    /// This boot's id, recorded with the partial (SPEC §5's partial-trust rule).
    let bootID: String
    /// The run's body buffers (for gathered and hashed bodies).
    private let pool: BufferPool
    /// Crash tests' faults (`body-write`), for its body writer.
    private let faults: FaultPoints
    /// The partial file's inode, once it is open.
    private(set) var fileInode: UInt64?
    /// Body bytes received in this run, as they came over the wire (a decoded body counts
    /// its bytes as sent, SPEC §7): throughput, the metered budget and the run's totals.
    private(set) var received: UInt64 = 0
    /// Of a decoded body's bytes on the wire (`CurlEasy.bytesOnWire`), those counted already.
    private var wireCounted: UInt64 = 0
    /// How much of `received` the engine has counted already.
    var counted: UInt64 = 0
    /// The complete file's inode, mtime and size, taken before its rename (recorded with it: SPEC §9).
    var completeFile: FileIdentity?
    let startedAt = Date()
    /// The current request's head and stall clocks (SPEC §7), kept by the engine's loop.
    /// Set by `send` (Transfer+Request.swift): nothing outside `Transfer` should touch it.
    var timer = ResponseTimer(responseTimeout: 0, stallTimeout: 0)
    /// The timeouts of the feed (or the config), for the messages. Set by `send`
    /// (Transfer+Request.swift): nothing outside `Transfer` should touch them.
    var connectTimeout = TimeSpan.zero, responseTimeout = TimeSpan.zero, stallTimeout = TimeSpan.zero

    /// `existing` is the partial already on disk, opened, with its size: only passed when
    /// state.db records a partial for this resource (nothing else could be resumed).
    init(job: TransferJob, easy: CurlEasy, partialName: String, existing: (file: FileDescriptor, size: UInt64, inode: UInt64)?,
         globalCap: UInt64, bootID: String, pool: BufferPool, limiter: RateLimiter? = nil, allowance: MeteredAllowance? = nil, startWriteback: Bool = false,
         faults: FaultPoints = .none, cacheAllowance: CacheAllowance? = nil, createFile: @escaping () -> Result<FileDescriptor, Errno>) {
        self.cacheAllowance = cacheAllowance
        cacheHeld = job.cacheAdmitted
        self.bootID = bootID
        self.pool = pool
        self.faults = faults
        self.fileInode = existing?.inode
        self.limiter = limiter
        self.allowance = allowance
        self.startWriteback = startWriteback
        self.job = job
        self.easy = easy
        self.file = existing?.file
        self.partialName = partialName
        self.createFile = createFile
        machine = TransferStateMachine(url: job.url, size: job.resource.size, maxSize: job.resource.maxSize, globalCap: globalCap,
                                       sha256: job.resource.sha256, encoding: job.resource.encoding, offered: ContentCodings.offered,
                                       cachedValidators: job.cachedValidators, partial: job.partial,
                                       partialAtAnotherURL: job.partial.map { $0.servedBy != job.urlKey } ?? false)
        let trusted = job.partial.flatMap { partial in
            PartialTrust.trustedLength(record: partial, urlHash: job.urlHash, file: existing.map { ($0.size, $0.inode) }, bootID: bootID)
        }
        var kept = false
        if case .resume(let keep) = machine.resume(trusted: trusted) {
            kept = primeHash(upTo: keep)
            if kept { writebackFrom = keep } else { machine.resumeFailed() }
        }
        if !kept {
            forgetBody()
            file = nil  // any old partial is replaced (created empty) when a body begins
        }
    }

    // What the engine reads.
    var offset: UInt64 { machine.offset }
    var syncedOffset: UInt64 { machine.syncedOffset }
    var requestedFrom: UInt64 { machine.requestedFrom }
    var expectedTotal: UInt64? { machine.expectedTotal }
    var partialValidators: Validators { machine.partialValidators }
    var partialRecorded: Bool { machine.partialRecorded }
    /// Whether the partial could resume once this transfer stops (§7's one rule).
    var resumeVerdict: ResumeRule.Verdict { machine.resumeVerdict }
    /// The last 2xx response whose body began, if any.
    var lastResponse: ResponseFacts? { machine.lastResponse }
    /// Where a resume asked from, when the server answered it with the whole file (0: none).
    var refusedResume: UInt64 { max(machine.refusedResume, job.refusedResume) }
    var pausedForRate: Bool { machine.hold == .rate }
    var pausedForBudget: Bool { machine.hold == .budget }
    var pausedForCacheFull: Bool { machine.hold == .cacheFull }
    /// The file length this transfer holds room for under `max_cache_size`.
    var cacheRoomHeld: UInt64 { cacheHeld }
    /// Whether a response's body has begun (before: connecting or waiting for the answer).
    var receiving: Bool { machine.phase == .receiving || machine.phase == .discarding }

    /// Its figures for a progress line.
    var progress: TransferProgress {
        let seconds = max(0.001, Date().timeIntervalSince(startedAt))
        return TransferProgress(key: job.key, bytes: offset, total: expectedTotal ?? job.resource.size, rate: Double(received) / seconds,
                                receiving: receiving)
    }

    /// Cuts the partial back to `length` and hashes those bytes once (FAULTS 2).
    private func primeHash(upTo length: UInt64) -> Bool {
        guard let file, case .success = file.truncate(to: length), case .success = file.seek(to: 0) else { return false }
        let hasher = BodyWriter(pool: pool, sha1: job.resource.triesDelta)
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

    /// Empties the partial (when open) and forgets its digest: a body from byte 0 follows.
    /// False when the file could not be emptied (the transfer then fails: a shorter body
    /// over the old bytes would leave them at its end).
    private func emptyPartial() -> Bool {
        if let file {
            let emptied = faults.reach(.truncate).map { Result<Void, Errno>.failure($0) } ?? file.truncate(to: 0).flatMap { file.seek(to: 0) }
            if case .failure(let error) = emptied {
                machine.cannotWrite(error)
                return false
            }
        }
        forgetBody()
        return true
    }

    /// Forgets what was gathered and hashed of a body.
    private func forgetBody() {
        body = nil
        inlineHasher = nil
        inlineSHA1 = nil
        writebackFrom = 0
    }

    // MARK: Callbacks (on the engine's thread, inside curl_multi_perform)

    /// libcurl's body callback, which `send` (Transfer+Request.swift) sets: nothing else
    /// should call it.
    static let onBody: CurlDataCallback = { data, size, count, user in
        Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue().receive(UnsafeRawBufferPointer(start: data, count: size * count))
    }

    /// A header line; 0 stops the exchange (libcurl then ends it with CURLE_WRITE_ERROR).
    /// Set by `send` (Transfer+Request.swift): nothing else should call it.
    static let onHeader: CurlDataCallback = { data, size, count, user in
        Unmanaged<Transfer>.fromOpaque(user!).takeUnretainedValue().machine.headerLine(UnsafeRawBufferPointer(start: data, count: size * count))
            == .refuse ? 0 : size * count
    }

    private func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        if machine.awaitsBody { beginBody() }
        switch machine.bodyChunk(bytes.count) {
        case .write: break
        case .drop: return bytes.count  // an error page read to its end, unwritten: the connection stays
        case .holdForRecord: return CurlEasy.pauseWriting  // libcurl keeps these bytes and hands them over again
        default: return 0  // refused
        }
        let decodes = machine.decodesBody
        if let cacheAllowance, !holdsCacheRoom(for: bytes.count, decodes: decodes, in: cacheAllowance) {
            machine.held(.cacheFull)
            return CurlEasy.pauseWriting
        }
        // What the chunk moved over the wire: itself, or for a decoded body the bytes libcurl
        // read since the last chunk counted (the first chunk of a read carries the read; the
        // others none, and are not held for rate or budget again).
        let moved = decodes ? easy.bytesOnWire - min(wireCounted, easy.bytesOnWire) : UInt64(bytes.count)
        if let limiter, moved > 0 || !decodes, !limiter.take(Int(moved), for: self) {
            machine.held(.rate)
            return CurlEasy.pauseWriting
        }
        // After the rate check, so a chunk handed over again after a rate pause is counted once.
        if let allowance, moved > 0 || !decodes, !allowance.take(Int(moved), reservations: reservedBudget == 0) {
            machine.held(.budget)
            return CurlEasy.pauseWriting
        }
        guard let file else { return 0 }  // a body being written has its file
        if let body {
            // Gathered and written a buffer at a time (and hashed off this thread): BodyWriter.
            if let error = body.append(bytes, to: file, at: offset) {
                machine.cannotWrite(error)
                return 0
            }
        } else if case .failure(let error) = file.write(bytes) {
            machine.cannotWrite(error)
            return 0
        } else {
            inlineHasher?.update(bytes)
            inlineSHA1?.update(bytes)
        }
        machine.wrote(bytes.count)
        received += moved
        if decodes { wireCounted += moved }
        let written = writtenOffset
        if startWriteback, written >= writebackFrom + Self.writebackStep {
            file.startWriteback(from: writebackFrom, count: written - writebackFrom)
            writebackFrom = written
        }
        return bytes.count
    }

    /// Whether the file, once this chunk is written, stays within the room it holds under
    /// `max_cache_size`, taking more when it does not (SPEC §8): the length its
    /// `Content-Length` announces counts from the first chunk (a decoded body's counts the
    /// wire, so there only what is written), else what is written. Asked again for a chunk
    /// handed over again after a pause, it takes nothing twice.
    private func holdsCacheRoom(for count: Int, decodes: Bool, in allowance: CacheAllowance) -> Bool {
        let announced = decodes ? 0 : machine.expectedTotal ?? 0
        let end = max(offset + UInt64(count), announced)
        guard end > cacheHeld else { return true }
        guard allowance.take(end - cacheHeld) else { return false }
        cacheHeld = end
        return true
    }

    /// A body begins: the machine says whether and where it is written.
    private func beginBody() {
        guard case .writeBody(let restart, let remaining) = machine.bodyBegins() else { return }
        wireCounted = 0
        if restart, !emptyPartial() { return }
        if file == nil {
            switch createFile() {
            case .success(let opened):
                file = opened
                if case .success(let info) = opened.status() { fileInode = UInt64(info.st_ino) }
            case .failure(let error):
                machine.cannotWrite(error, creating: true)
                return
            }
        }
        if body == nil, inlineHasher == nil {
            if remaining ?? .max >= Self.gatherFrom {
                body = BodyWriter(pool: pool, hashing: true, sha1: job.resource.triesDelta, faults: faults)
            } else {
                inlineHasher = SHA256()
                inlineSHA1 = job.resource.triesDelta ? SHA1() : nil
            }
        }
    }

    // MARK: The clocks

    /// What the clocks end.
    enum ClockEnd {
        /// The exchange fails so.
        case failed(TransferFailure)
        /// A body that is not written (an error page being read to its end) stalled: the
        /// exchange ends there, judged by the head that came (its status).
        case dropStalled
    }

    /// The head and stall clocks at `now` (monotonic seconds): what ends the exchange, when
    /// something does. Looks at libcurl's progress only until the request is out.
    func checkClocks(now: Double) -> ClockEnd? {
        let phase = machine.phase
        guard phase == .connecting || phase == .receiving || phase == .discarding else { return nil }
        let sent = timer.awaitsSend && easy.requestSent
        switch timer.check(now: now, sent: sent, headComplete: machine.headComplete, bytes: received + machine.dropped, held: machine.hold != nil) {
        case .goOn: return nil
        case .headTimedOut: return .failed(.headTimeout(responseTimeout))
        case .stalled: return phase == .discarding ? .dropStalled : .failed(.stalled(stallTimeout, status: machine.head.status))
        }
    }

    // MARK: Pauses and the record

    /// Resumes a transfer paused for its feed's `max_rate` (libcurl may hand over the
    /// held-back bytes from inside this call).
    func resumeAfterRateLimit() {
        machine.released()
        easy.unpause()
    }

    /// Whether the body being received needs its record committed now: it may come to hold
    /// 1 MiB, or it continues (or replaces) a partial state.db already knows of.
    var needsRecord: Bool { file != nil && machine.needsRecord }

    /// The record the engine takes to commit.
    func takeRecord(at time: Instant) -> PartialState {
        machine.recordTaken()
        return partialRecord(syncedOffset: syncedOffset, at: time)
    }

    /// The record is committed: a transfer paused for it goes on.
    func recordCommitted() {
        if machine.recordCommittedNow() == .unpause { easy.unpause() }
    }

    /// `offset` bytes as of `epoch` are durable; returns whether that is news to record.
    func noteSynced(_ offset: UInt64, epoch: Int, validators: Validators) -> Bool {
        machine.synced(offset, epoch: epoch, validators: validators) == .recordSynced
    }

    /// The partial's record with `offset` known durable: validators, this boot, this inode.
    func partialRecord(syncedOffset offset: UInt64, validators: Validators? = nil, total: UInt64?? = nil, at time: Instant) -> PartialState {
        var record = machine.partialRecord(urlHash: job.urlHash, syncedOffset: offset, validators: validators, total: total, bootID: bootID,
                                           inode: fileInode, at: time)
        record.servedBy = job.urlKey
        return record
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

    /// Pauses the transfer (resumably); false when it is past pausing (complete, or over).
    func pause(_ reason: String) -> Bool {
        machine.pause(reason) == .paused
    }

    /// Ends the transfer with a failure from outside the exchange.
    func fail(_ failure: TransferFailure) {
        machine.fail(failure)
    }

    // MARK: Completion

    /// The exchange ended with libcurl's `curlCode`: what it means (`TransferStateMachine.ended`).
    func finish(curlCode: Int32, maxRedirects: Int) -> TransferOutcome {
        if machine.bodyBeginsAtEnd(cleanly: curlCode == CurlGlobal.ok) { beginBody() }
        if machine.failure == nil, let error = body?.flush() { machine.cannotWrite(error) }
        let easy = easy
        var cause = CurlGlobal.connectionFailure(curlCode, osErrno: easy.osErrno)
        var words: String?
        if curlCode == CurlGlobal.operationTimedOut {
            // libcurl's only timeout here is connect_timeout's: the TCP connect, or the TLS handshake after it.
            let limit = connectTimeout
            if easy.connected, !easy.tlsEstablished, machine.url.hasPrefix("https:") {
                cause = "TLS handshake timeout"
                words = "the TLS handshake did not finish within \(limit) (connect_timeout)"
            } else if !easy.connected {
                cause = "connect timeout"
                words = "cannot connect within \(limit) (connect_timeout)"
            }
        }
        if machine.decodesBody, easy.bytesOnWire > wireCounted {
            // The last read of a chunked decoded body is counted after its bytes were handed over.
            received += easy.bytesOnWire - wireCounted
            wireCounted = easy.bytesOnWire
        }
        switch machine.ended(cleanly: curlCode == CurlGlobal.ok, tlsError: CurlGlobal.tlsErrors.contains(curlCode), connectionFailure: cause,
                             malformed: CurlGlobal.malformedResponse(curlCode).map { "\($0) (\(easy.describe(curlCode)))" },
                             describe: { words ?? easy.describe(curlCode) }, redirectURL: { easy.redirectURL }, onWire: { easy.bytesOnWire },
                             maxRedirects: maxRedirects, now: Date()) {
        case .follow(let request):
            return .redirect(request)
        case .keepCachedCopy(let validators):
            return .notModified(validators)
        case .fail(let failure):
            return .failed(failure)
        case .digest:
            let digest = SHA256.hex(body.map { $0.finish() } ?? inlineHasher?.finish() ?? SHA256().finish())
            bodySHA1 = body?.finishSHA1() ?? inlineSHA1?.finishHex()
            body = nil
            inlineHasher = nil
            inlineSHA1 = nil
            if let failure = machine.digested(digest).failure { return .failed(failure) }
            return .complete(bytes: offset, validators: partialValidators, sha256: digest)
        case let action:
            preconditionFailure("the exchange's end answered \(action)")
        }
    }

    /// The complete file's fsync ended; the failure, when it failed.
    func fileSynced(_ result: Result<Void, Errno>) -> TransferFailure? {
        machine.fileSynced(result).failure
    }

    /// The rename into place ended (`failure`: why it failed); the failure, when it failed.
    func renamed(_ failure: PlacementError?) -> TransferFailure? {
        machine.renamed(failure).failure
    }
}
