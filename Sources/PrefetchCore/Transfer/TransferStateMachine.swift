import Foundation

/// One resource's transfer, from its start to its end (SPEC §3, §5), in the shape of
/// async-http-client's `HTTPRequestStateMachine`: a private state, one mutating function
/// per event, each returning what to do. Pure — no file, no socket, no clock, no libcurl:
/// `Transfer` tells it what happened (a header line, a body chunk, the exchange's end, a
/// digest, an fsync, a rename) and carries out its answer; `TransferStateMachineTests`
/// drives it event by event without a network. `ResponseRules` (the exhaustive table's
/// subject) judges each response; this machine keeps the order and the bookkeeping — where
/// the partial stands, what is durable, what state.db holds, how many redirects.
///
///     queued ─request→ connecting ─2xx body→ receiving ─end→ verifying ─digest→ syncing ─fsync, rename→ placed
///                      connecting ─other body→ discarding ─end→ (judged like receiving)
///                      connecting ─200 of the cached copy's strong ETag→ resendingCachedCopy ─end→ fresh
///                      connecting/receiving ─end 3xx→ connecting (the next URL) ─end 304→ fresh
///     queued … receiving ─pause→ paused (resumable)          any active state ─failure→ failed
///
/// A complete file being verified or synced is not paused by a stop or a closed window:
/// it is placed (its bytes are all there).
struct TransferStateMachine {
    enum Phase: Sendable, Equatable {
        case queued, connecting, receiving, discarding, verifying, syncing, placed, fresh, paused, failed
    }

    private enum State: Equatable {
        case queued
        case connecting
        case receiving
        case discarding
        /// A 200 to a revalidation that carries the cached copy itself (its strong ETag):
        /// its body is not read, and the copy is kept with these validators.
        case resendingCachedCopy(Validators)
        case verifying
        case syncing
        case placed
        case fresh
        case paused(String)
        case failed(TransferFailure)
    }

    /// Why the body's writer stopped libcurl (CURL_WRITEFUNC_PAUSE); libcurl hands the same
    /// bytes over again when the transfer goes on.
    enum Hold: Sendable, Equatable {
        /// Until state.db holds the partial's record (SPEC §5: before it holds 1 MiB, or
        /// before anything is appended to a partial resumed).
        case record
        /// Until the feed's `max_rate` bucket refills.
        case rate
        /// The feed's metered budget is used: the engine takes the transfer out, resumably.
        case budget
        /// The body would pass `max_cache_size` (SPEC §8): the engine pauses it, resumably.
        case cacheFull
    }

    /// What the next request asks for.
    struct Request: Sendable, Equatable {
        var url: String
        /// The manifest's headers go only to the resource's own origin.
        var sameOrigin: Bool
        /// `Range: bytes=N-` (0: none) and the If-Range guarding it.
        var rangeFrom: UInt64
        var ifRange: String?
        /// If-None-Match / If-Modified-Since of the cached copy (a revalidation).
        var revalidating: Validators?
    }

    /// What to do with a body that begins.
    enum BodyAction: Sendable, Equatable {
        /// Not written (no 2xx; refused: the failure is kept for the end; or the cached copy,
        /// resent whole to a revalidation).
        case discard
        /// Write it: after the bytes kept, or (`restart`) into an emptied partial from byte
        /// 0. `remaining`: the bytes still to come, when known.
        case write(restart: Bool, remaining: UInt64?)
    }

    /// What to do with a chunk of the body.
    enum ChunkAction: Sendable, Equatable {
        case write
        /// Take it and throw it away: a small body that is not written (an error page, a
        /// redirect's page, up to `drainLimit` bytes) is read to its end, so the connection
        /// carries the next request (HTTP/1.1 keep-alive) instead of being closed under it.
        case drop
        /// Stop libcurl until the record is committed (`recordCommitted`).
        case holdForRecord
        /// Take nothing (libcurl ends the exchange with a write error; the end judges it).
        case refuse
    }

    /// What the end of an exchange asks for.
    enum EndAction: Sendable, Equatable {
        /// Ask again at the new URL (already checked: scheme, loop, count).
        case follow(Request)
        /// The cached copy is current (304).
        case keepCachedCopy(Validators)
        /// Take the digest of the partial's bytes (`offset` of them), then `digested`.
        case digest
        case fail(TransferFailure)
    }

    /// What a failure means now (after `RetryDecision`).
    enum FailureAction: Sendable, Equatable {
        /// The disk is full: every transfer pauses; no attempt is counted.
        case pauseEverything
        /// Again within this run at `at`, keeping the partial's durable bytes when `keep`.
        case retry(at: Instant, wait: Int64, keep: PartialState?, discard: Bool)
        /// Failed for now; a later run may try again at `nextRetry`.
        case report(nextRetry: Instant?)
    }

    private var state = State.queued

    // What the transfer is for.
    private let resourceURL: ResourceURL
    /// The partial it was given began at another of the resource's URLs (SPEC §8): it
    /// resumes only with a `sha256`, without `If-Range`.
    private let partialAtAnotherURL: Bool
    private let size: UInt64?
    private let sha256: String?
    /// The transfer's `encoding` mode (§7's resumable rule reads it).
    let encoding: EncodingMode
    /// With `decode`, the content codings offered (`ContentCodings.offered`).
    private let offered: [String]
    private let cachedValidators: Validators?
    /// The partial state.db recorded for this resource, if any.
    private let recordedPartial: PartialState?
    /// The most bytes the file may have (`size`, else `max_size`, else the global cap).
    let cap: UInt64
    let capName: String

    // Where the request stands.
    private(set) var url: String
    private var visited: Set<String> = []
    private(set) var redirects = 0
    private var ifRange: String?
    /// Whether the next request revalidates the cached copy.
    private var conditional = false
    /// What the current request asked for and what the client holds (the rules' input).
    private var asked = ResponseRules.Request()
    /// The response's head as it arrives (a status line starts a new one).
    private(set) var head = ResponseRules.Head(status: 0)
    /// Whether the final head arrived whole (its blank line, a body, or a clean end): until
    /// then no response came (SPEC §6, §7), and later lines are a body's trailers.
    private(set) var headComplete = false

    // Where the partial stands.
    /// Bytes in the partial (written, or gathering in the writer's buffer).
    private(set) var offset: UInt64 = 0
    /// Where the current request's Range starts (0: the whole body).
    private(set) var requestedFrom: UInt64 = 0
    /// Bytes known to be on disk (after an fsync), as state.db records them.
    private(set) var syncedOffset: UInt64 = 0
    /// Counts the partial's restarts from zero: an fsync begun before one says nothing of
    /// the bytes written after it (`synced`).
    private(set) var epoch = 0
    /// What the response that began the partial's bytes said (§7's resumable rule).
    private(set) var partialResponse = ResponseFacts()
    /// Validators of the response that produced the partial's bytes.
    var partialValidators: Validators { partialResponse.validators }
    /// The last 2xx response whose body began (nil: none yet): the resource's record keeps
    /// it for §6's deadline rule.
    private(set) var lastResponse: ResponseFacts?
    /// Where a resume asked from, when the server answered it with the whole file (a 200 to
    /// a Range): the run's line says so (SPEC §7 "Run summary").
    private(set) var refusedResume: UInt64 = 0
    private(set) var expectedTotal: UInt64?
    /// The last byte a 206 being appended may write (its Content-Range's end): nothing past
    /// it reaches the partial.
    private var appendEnd: UInt64?
    /// Whether state.db may hold a partial record for this resource (to clear at the end).
    private(set) var partialRecorded: Bool
    /// Whether state.db holds the record of the body being received (its validators, this
    /// boot, this inode), and whether the engine took it to commit.
    private(set) var recordCommitted = false
    private(set) var recordRequested = false
    /// Why libcurl is stopped, if it is.
    private(set) var hold: Hold?
    /// Bytes of a body that is not written (`drop`) taken so far.
    private(set) var dropped: UInt64 = 0
    /// The most of a body that is not written read to its end (`drop`); past it the exchange
    /// stops, and its connection with it. Error pages are a few hundred bytes (nginx's are
    /// under 600); 64 KiB costs less than a new connection even on a slow link.
    static let drainLimit: UInt64 = 64 * 1024

    init(url: ResourceURL, size: UInt64?, maxSize: UInt64?, globalCap: UInt64, sha256: String?, encoding: EncodingMode = .refuse,
         offered: [String] = [], cachedValidators: Validators?, partial: PartialState?, partialAtAnotherURL: Bool = false) {
        resourceURL = url
        self.partialAtAnotherURL = partialAtAnotherURL
        self.encoding = encoding
        self.offered = encoding == .decode ? offered : []
        self.url = url.text
        self.size = size
        self.sha256 = sha256
        self.cachedValidators = cachedValidators
        recordedPartial = partial
        partialRecorded = partial != nil
        if let size {
            cap = size
            capName = "size \(size) bytes"
        } else if let maxSize, maxSize < globalCap {
            cap = maxSize
            capName = "max_size \(ByteSize.format(maxSize))"
        } else {
            cap = globalCap
            capName = "the global max_size \(ByteSize.format(globalCap))"
        }
        conditional = Self.canRevalidate(cachedValidators)
    }

    var phase: Phase {
        switch state {
        case .queued: .queued
        case .connecting: .connecting
        case .receiving: .receiving
        case .discarding, .resendingCachedCopy: .discarding
        case .verifying: .verifying
        case .syncing: .syncing
        case .placed: .placed
        case .fresh: .fresh
        case .paused: .paused
        case .failed: .failed
        }
    }

    /// The failure that ended the transfer, once it failed.
    var failure: TransferFailure? { if case .failed(let failure) = state { failure } else { nil } }

    private static func canRevalidate(_ validators: Validators?) -> Bool {
        validators.map { $0.etag != nil || $0.lastModified != nil } == true
    }

    // MARK: Starting

    /// FAULTS 2, 3, 7, 8: of the partial found, `trusted` bytes may be kept (`PartialTrust`);
    /// they are resumed when the partial is resumable (`ResumeRule`: If-Range on its strong
    /// validator, or none when a sha256 will check the result). Returns the bytes to keep
    /// (0: the partial is replaced when a body begins); the caller reads them into the
    /// digest and calls `resumeFailed` when it cannot.
    mutating func resume(trusted: UInt64?) -> UInt64 {
        precondition(state == .queued)
        guard let trusted, trusted > 0, let partial = recordedPartial else { return 0 }
        guard case .resume(let guardedBy) = ResumeRule.judge(partial.response, sha256Given: sha256 != nil, encoding: encoding,
                                                             atAnotherURL: partialAtAnotherURL) else { return 0 }
        ifRange = guardedBy
        partialResponse = partial.response
        if partialAtAnotherURL {
            // Another URL's validators say nothing here (SPEC §8): the `sha256` checks the
            // result, and the 206 that continues it gives the partial this URL's own.
            partialResponse.etag = nil
            partialResponse.lastModified = nil
        }
        offset = trusted
        requestedFrom = trusted
        // Durable for certain: what an fsync recorded, not more (the rest is trusted only in this boot).
        syncedOffset = min(trusted, partial.syncedOffset)
        // A partial is resumed, not revalidated: a 304 is never "complete" for it (FAULTS 11).
        conditional = false
        return trusted
    }

    /// Whether the partial being written (or kept) could resume after this transfer stops
    /// (§7's one rule, on the response that began it).
    var resumeVerdict: ResumeRule.Verdict {
        ResumeRule.judge(partialResponse, sha256Given: sha256 != nil, encoding: encoding)
    }

    /// The kept bytes could not be read back: the transfer starts from zero.
    mutating func resumeFailed() {
        precondition(state == .queued)
        restartFromZero()
        conditional = Self.canRevalidate(cachedValidators)
    }

    /// The request to send now (the first, or after a redirect).
    mutating func request() -> Request {
        precondition(state == .queued || state == .connecting)
        state = .connecting
        head = ResponseRules.Head(status: 0)
        headComplete = false
        appendEnd = nil
        let revalidating = requestedFrom == 0 && conditional ? cachedValidators : nil
        asked = ResponseRules.Request(resumeFrom: requestedFrom, partialValidators: partialValidators,
                                      partialTotal: requestedFrom > 0 ? recordedPartial?.totalLength : nil,
                                      revalidating: revalidating, size: size, cap: cap, capName: capName, encoding: encoding,
                                      offered: offered,
                                      partialEncoding: requestedFrom > 0 ? partialResponse.contentEncoding : nil)
        return Request(url: url, sameOrigin: isSameOrigin(url), rangeFrom: requestedFrom, ifRange: requestedFrom > 0 ? ifRange : nil,
                       revalidating: revalidating)
    }

    private func isSameOrigin(_ text: String) -> Bool {
        if text == resourceURL.text { return true }  // the first request: no parse
        guard let other = try? ResourceURL.parse(text) else { return false }
        return other.origin == resourceURL.origin
    }

    // MARK: The response

    /// A line of the response's head (a status line starts a new head: redirects, 100-continue).
    /// Returns false when the exchange must stop (SPEC §7: a head over 256 KiB, an invalid
    /// final head, a redirect to a Location over 8 KiB); the failure is kept for the end.
    @discardableResult
    mutating func headerLine(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard state == .connecting else { return headComplete }  // after the head: a chunked body's trailers
        if headComplete {
            // Before any body, only another response can follow a whole head (a proxy's CONNECT
            // answer, should libcurl pass it on): a status line starts it; nothing else counts.
            guard bytes.starts(with: "HTTP/".utf8) else { return true }
            headComplete = false
        }
        let ended = head.take(line: bytes)
        return headLineJudged(ended: ended)
    }

    /// `ResponseRules.onHeadLine` on the head so far; a final head that ended is complete.
    private mutating func headLineJudged(ended: Bool) -> Bool {
        if let failure = ResponseRules.onHeadLine(head, ended: ended) {
            state = .failed(failure)
            return false
        }
        if ended, !(100..<200).contains(head.status) { headComplete = true }
        return true
    }

    /// Whether the origin gave a whole answer that says it is up (SPEC §6: it ends the
    /// origin's hold): the final head came, valid, and not with a status that holds.
    var originAnswered: Bool {
        guard headComplete else { return false }
        guard let failure else { return true }
        return failure.holdsOrigin == nil && !failure.invalidResponse
    }

    /// Whether a body beginning now is the first of this response.
    var awaitsBody: Bool { state == .connecting }

    /// Whether the response's body is decoded on its way to the partial (`encoding: decode`,
    /// and it is labelled): its bytes on the wire are then counted apart (SPEC §7).
    var decodesBody: Bool { ResponseRules.decodes(asked, head) }

    /// Whether an exchange ending now (`cleanly`) had an empty 2xx body, which calls no write
    /// callback: it begins at the end (`bodyBegins`, before `ended`) — a 200 to a ranged
    /// request still means "the file is now this, from zero", and its partial is created empty.
    func bodyBeginsAtEnd(cleanly: Bool) -> Bool {
        state == .connecting && cleanly && (200..<300).contains(head.status)
    }

    /// The response's body begins (its first chunk, or the end of an empty 2xx body):
    /// `ResponseRules.onHead` says whether it is written, after the partial (a 206
    /// continuing it) or from zero (FAULTS 5, 6: never appended otherwise).
    mutating func bodyBegins() -> BodyAction {
        precondition(state == .connecting)
        // A body follows a whole head (libcurl gives the blank line first; a test may not).
        if !headComplete, !headLineJudged(ended: true) { return .discard }
        let restart: Bool
        let decision = ResponseRules.onHead(asked, head)
        if (200..<300).contains(head.status) {
            if case .cachedCopy = decision {} else { lastResponse = head.facts }
        }
        switch decision {
        case .noBody:
            state = .discarding
            dropped = 0
            return .discard
        case .refuse(let failure):
            state = .failed(failure)
            return .discard
        case .cachedCopy(let validators):
            state = .resendingCachedCopy(validators)
            return .discard
        case .append(let total, let rangeEnd):
            expectedTotal = total
            appendEnd = rangeEnd
            restart = false
        case .restart(let total):
            restart = requestedFrom > 0 || offset > 0
            if requestedFrom > 0 { refusedResume = requestedFrom }  // a 200 to a Range: the server refused the resume
            if restart { restartFromZero() }
            expectedTotal = total
        }
        state = .receiving
        // A new version starts: its validators (and what §7's rule reads) belong to the partial (SPEC §5).
        if head.status != 206 || partialValidators == Validators() {
            partialResponse = head.facts
        }
        // A body begins: its record (these validators, this boot) is written before it grows.
        recordCommitted = false
        recordRequested = false
        return .write(restart: restart, remaining: expectedTotal.map { $0 > offset ? $0 - offset : 0 })
    }

    private mutating func restartFromZero() {
        epoch += 1
        recordCommitted = false
        offset = 0
        requestedFrom = 0
        syncedOffset = 0
        partialResponse = ResponseFacts()
    }

    /// A chunk of `count` body bytes arrived. The record comes first (SPEC §5), then the cap,
    /// enforced as bytes arrive, chunked or not (FAULTS 13). Rate and budget are the
    /// caller's to check after `.write` (`held`), so a chunk handed over again after a
    /// pause is counted once.
    mutating func bodyChunk(_ count: Int) -> ChunkAction {
        guard state == .receiving else {
            // Error pages never land (FAULTS 14); a short one is read to its end, unwritten.
            guard state == .discarding, dropped + UInt64(count) <= Self.drainLimit else { return .refuse }
            dropped += UInt64(count)
            return .drop
        }
        let after = offset + UInt64(count)
        if !recordCommitted, after > (requestedFrom > 0 ? requestedFrom : PartialTrust.recordBefore), bodyIsRecorded {
            hold = .record
            return .holdForRecord
        }
        if after > cap {
            // A decoded body is held to the cap as it is decoded: a decompression bomb stops here.
            let body = decodesBody ? "the decoded body" : "the body"
            state = .failed(TransferFailure(kind: .mismatch, message: "\(body) is longer than \(capName); cut off and discarded",
                                            retryAfter: nil, discardPartial: true, httpStatus: head.status))
            return .refuse
        }
        if let appendEnd, after > appendEnd + 1 {  // as the end would judge it (`ResponseRules.complete`), before the bytes land
            state = .failed(TransferFailure(kind: .transient, message: "the 206 sent more than the bytes to \(appendEnd + 1) of its Content-Range",
                                            retryAfter: nil, discardPartial: true, httpStatus: head.status))
            return .refuse
        }
        return .write
    }

    /// The caller stopped libcurl for the feed's rate or budget.
    mutating func held(_ reason: Hold) {
        hold = reason
    }

    /// libcurl goes on after a hold.
    mutating func released() {
        hold = nil
    }

    /// `count` bytes of the chunk were taken by the writer.
    mutating func wrote(_ count: Int) {
        offset += UInt64(count)
    }

    /// The partial could not be created or written (a full disk pauses everything).
    mutating func cannotWrite(_ error: Errno, creating: Bool = false) {
        guard !isOver else { return }
        let full = error.code == ENOSPC || error.code == EDQUOT
        state = .failed(TransferFailure(kind: full ? .diskFull : .transient,
                                        message: full ? "disk full" : "cannot \(creating ? "open" : "write") the partial: \(error)",
                                        retryAfter: nil, discardPartial: false, httpStatus: head.status == 0 ? nil : head.status))
    }

    // MARK: The record (SPEC §5)

    /// A body that may come to hold 1 MiB, or that continues or replaces a recorded partial.
    /// A decoded body never resumes (§7): nothing would trust its record, and it is not held
    /// for one (a pause mid-read keeps the read's decoded bytes in libcurl's memory).
    private var bodyIsRecorded: Bool {
        guard encoding != .decode else { return false }
        return requestedFrom > 0 || partialRecorded || (expectedTotal ?? .max) > PartialTrust.recordBefore
    }

    /// Whether the body being received needs its record committed now.
    var needsRecord: Bool {
        state == .receiving && !recordCommitted && !recordRequested && bodyIsRecorded
    }

    /// The engine took the record to commit.
    mutating func recordTaken() {
        recordRequested = true
        partialRecorded = true
    }

    /// The record is in state.db; returns whether libcurl was held for it (to let it go on).
    mutating func recordCommittedNow() -> Bool {
        recordCommitted = true
        guard hold == .record else { return false }
        hold = nil
        return true
    }

    /// `offset` bytes of the partial as it was at `epoch`, written with these validators,
    /// were fsynced: the record may say so. False when the partial moved on since (another
    /// version, a restart) or the offset is not newer.
    mutating func synced(_ offset: UInt64, epoch: Int, validators: Validators) -> Bool {
        guard epoch == self.epoch, offset > syncedOffset, validators == partialValidators, offset <= self.offset else { return false }
        syncedOffset = offset
        partialRecorded = true
        return true
    }

    /// The partial's record with `offset` durable.
    func partialRecord(urlHash: String, syncedOffset offset: UInt64, validators: Validators? = nil, total: UInt64?? = nil,
                       bootID: String, inode: UInt64?, at time: Instant) -> PartialState {
        PartialState(urlHash: urlHash, validators: validators ?? partialValidators, totalLength: total ?? expectedTotal,
                     syncedOffset: offset, updatedAt: time, bootID: bootID, inode: inode, date: partialResponse.date,
                     acceptRangesNone: partialResponse.acceptRangesNone, contentEncoding: partialResponse.contentEncoding)
    }

    // MARK: The end

    /// The exchange ended with libcurl's `curlCode` (`describe` gives its words). Classifies
    /// it: libcurl's error when no response came, else `ResponseRules.onEnd` (the status,
    /// the bytes on disk, the manifest's checks).
    /// `connectionFailure`: the cause, when libcurl says the origin could not be reached
    /// (`CurlGlobal.connectionFailure`): such a failure holds the origin (SPEC §6).
    /// `malformed`: libcurl refused the response itself (not HTTP, a negative length, a
    /// header line too long for it), in words: an invalid response (SPEC §7).
    /// `onWire`: the body's bytes as sent (read only for a decoded body, `decodesBody`).
    mutating func ended(cleanly: Bool, tlsError: Bool, connectionFailure: String? = nil, malformed: String? = nil, describe: () -> String,
                        redirectURL: () -> String?, onWire: () -> UInt64 = { 0 }, maxRedirects: Int, now: Date) -> EndAction {
        if let failure { return .fail(failure) }
        if case .resendingCachedCopy(let validators) = state {
            state = .fresh  // its body was not read: how the connection ended says nothing of the copy
            return .keepCachedCopy(validators)
        }
        precondition(state == .receiving || state == .discarding || (state == .connecting && !bodyBeginsAtEnd(cleanly: cleanly)))
        // libcurl finished the exchange, so its head was whole (a test may not say the blank line).
        if !headComplete, cleanly, head.status >= 200, !headLineJudged(ended: true), let failure { return .fail(failure) }
        if !headComplete {
            if let malformed {
                return fail(TransferFailure(kind: .transient, message: "invalid response: \(malformed)", retryAfter: nil, discardPartial: false,
                                            httpStatus: head.status == 0 ? nil : head.status, invalidResponse: true))
            }
            // No whole response came: the connection failed before one, or inside its head.
            return fail(TransferFailure(kind: tlsError ? .permanent : .transient, message: tlsError ? "TLS: \(describe())" : describe(),
                                        retryAfter: nil, discardPartial: false, httpStatus: nil,
                                        holdsOrigin: tlsError ? nil : connectionFailure))
        }
        switch ResponseRules.onEnd(asked, head, onDisk: offset, onWire: decodesBody ? onWire() : nil, cleanly: cleanly, cut: describe(), now: now) {
        case .redirect:
            guard let target = redirectURL() ?? head.location else {
                return fail(permanent("HTTP \(head.status) without a usable Location"))
            }
            return follow(target, maxRedirects: maxRedirects)
        case .notModified(let validators):
            state = .fresh
            return .keepCachedCopy(validators)
        case .failed(let failure):
            return fail(failure)
        case .finalize(let total):
            expectedTotal = total
            state = .verifying
            return .digest
        }
    }

    /// FAULTS 18: only http/https, bounded, loops refused.
    private mutating func follow(_ target: String, maxRedirects: Int) -> EndAction {
        let parsed: ResourceURL
        do {
            parsed = try ResourceURL.parse(target)
        } catch {
            let scheme = target.split(separator: ":").first.map(String.init) ?? target
            return fail(permanent("redirect to \(scheme):// refused: only http and https are followed"))
        }
        visited.insert(url)
        if visited.contains(parsed.text) { return fail(permanent("redirect loop at \(parsed.redacted)")) }
        redirects += 1
        if redirects > maxRedirects { return fail(permanent("more than \(maxRedirects) redirects")) }
        url = parsed.text
        state = .connecting
        return .follow(request())
    }

    /// The digest of the partial's bytes: against the manifest's `sha256` (FAULTS 14); a file
    /// that passes is fsynced next (`fileSynced`).
    mutating func digested(_ digest: String) -> TransferFailure? {
        precondition(state == .verifying)
        if let failure = ResponseRules.checkDigest(digest, expected: sha256, status: head.status) {
            state = .failed(failure)
            return failure
        }
        state = .syncing
        return nil
    }

    /// The complete file's fsync ended; returns the failure when it failed (the file is not placed).
    mutating func fileSynced(_ result: Result<Void, Errno>) -> TransferFailure? {
        precondition(state == .syncing)
        if case .failure(let error) = result {
            // After a failed fsync the kernel may have dropped the file's dirty pages: none of
            // the partial is trusted again (it is removed and fetched anew).
            return fail(Self.fsyncFailed(error)).failure
        }
        return nil
    }

    /// An fsync of the partial failed: transient, and the partial is not trusted again.
    static func fsyncFailed(_ error: Errno) -> TransferFailure {
        TransferFailure(kind: .transient, message: "fsync: \(error)", retryAfter: nil, discardPartial: true, httpStatus: nil)
    }

    /// The rename into place ended; returns the failure when it failed. The partial is
    /// removed either way; a path the cache cannot hold is not fetched again this release, a
    /// full disk pauses the run, any other error is retried.
    mutating func renamed(_ failure: PlacementError?) -> TransferFailure? {
        precondition(state == .syncing)
        switch failure {
        case .unsafePath(let message)?:
            return fail(TransferFailure(kind: .permanent, message: message, retryAfter: nil, discardPartial: true, httpStatus: nil)).failure
        case .failed(_, let error)?:
            let full = error.code == ENOSPC || error.code == EDQUOT
            return fail(TransferFailure(kind: full ? .diskFull : .transient, message: full ? "disk full" : failure!.description, retryAfter: nil,
                                        discardPartial: true, httpStatus: nil)).failure
        case nil: break
        }
        state = .placed
        return nil
    }

    // MARK: Pausing and failing

    /// Whether the transfer has ended (placed, fresh, paused or failed).
    var isOver: Bool {
        switch state {
        case .placed, .fresh, .paused, .failed: true
        default: false
        }
    }

    /// A stop, a closed window, lost conditions or a used budget: returns whether the
    /// transfer pauses (resumably). A complete file being verified or synced does not.
    mutating func pause(_ reason: String) -> Bool {
        switch state {
        case .queued, .connecting, .receiving, .discarding, .resendingCachedCopy:
            state = .paused(reason)
            return true
        default:
            return false
        }
    }

    /// Ends the transfer with `failure` (from anywhere outside the machine: an option
    /// libcurl refused, a missing environment variable, a record not committed). A transfer
    /// that failed already keeps its first failure.
    @discardableResult
    mutating func fail(_ failure: TransferFailure) -> EndAction {
        if case .failed(let earlier) = state { return .fail(earlier) }
        state = .failed(failure)
        return .fail(failure)
    }

    /// `fail`, returning the failure (to throw it).
    mutating func failing(_ failure: TransferFailure) -> TransferFailure {
        fail(failure).failure ?? failure
    }

    /// What a failure means, given the release's earlier `failures` and the feed's policy
    /// (SPEC §5). A retry keeps the partial's `durable` bytes (FAULTS 4; curl's --retry
    /// throws them away) unless the failure discards them.
    static func afterFailure(_ failure: TransferFailure, failures: Int, policy: RetryPolicy, durable: PartialState?, now: Instant,
                             using random: inout some RandomNumberGenerator) -> FailureAction {
        if failure.kind == .diskFull { return .pauseEverything }
        let decision = RetryDecision.after(failure, failures: failures + 1, policy: policy, now: now, using: &random)
        guard decision.inRun, let at = decision.nextRetry else { return .report(nextRetry: decision.nextRetry) }
        return .retry(at: at, wait: decision.wait, keep: failure.discardPartial ? nil : durable, discard: failure.discardPartial)
    }

    private func permanent(_ message: String) -> TransferFailure {
        TransferFailure(kind: .permanent, message: message, retryAfter: nil, discardPartial: false, httpStatus: head.status)
    }
}

extension TransferStateMachine.EndAction {
    fileprivate var failure: TransferFailure? { if case .fail(let failure) = self { failure } else { nil } }
}
