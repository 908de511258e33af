import Foundation

/// One resource's transfer, from its start to its end (SPEC §3, §5), in the shape of
/// async-http-client's `HTTP1ConnectionStateMachine`: a private state whose cases carry
/// what exists only in them (`State`), one mutating function per event, each returning the
/// `Action` to carry out. Pure — no file, no socket, no clock, no libcurl: `Transfer` tells
/// it what happened (a header line, a body chunk, the exchange's end, a digest, an fsync, a
/// rename) and carries out its answer; `TransferStateMachineTests` drives it event by event
/// without a network. `ResponseRules` (the exhaustive table's subject) judges each response;
/// this machine keeps the order and the bookkeeping — where the partial stands, what is
/// durable, what state.db holds, how many redirects.
///
///     queued ─request→ connecting ─2xx body→ receiving ─end→ verifying ─digest→ syncing ─fsync, rename→ placed
///                      connecting ─other body→ discarding ─end→ (judged like receiving)
///                      connecting ─200 of the cached copy's strong ETag→ resendingCachedCopy ─end→ fresh
///                      connecting/discarding ─end 3xx→ connecting (the next URL) ─end 304→ fresh
///     queued … resendingCachedCopy ─pause→ paused (resumable)     any active state ─failure→ failed
///
/// A complete file being verified or synced is not paused by a stop or a closed window:
/// it is placed (its bytes are all there).
struct TransferStateMachine {
    private var state = State.queued
    /// What the transfer is for, where the partial stands, the redirects followed: every
    /// state shares them (TransferStateMachine+Shared.swift).
    private let inputs: Inputs
    private var partial: Partial
    private var chain: RedirectChain
    /// Whether the next request revalidates the cached copy.
    private var conditional: Bool
    /// The last 2xx response whose body began (nil: none yet): the resource's record keeps
    /// it for §6's deadline rule.
    private(set) var lastResponse: ResponseFacts?
    /// Where a resume asked from, when the server answered it with the whole file (a 200 to
    /// a Range): the run's line says so (SPEC §7 "Run summary").
    private(set) var refusedResume: UInt64 = 0

    init(url: ResourceURL, size: UInt64?, maxSize: UInt64?, globalCap: UInt64, sha256: String?, encoding: EncodingMode = .refuse,
         offered: [String] = [], cachedValidators: Validators?, partial: PartialState?, partialAtAnotherURL: Bool = false) {
        inputs = Inputs(url: url, size: size, maxSize: maxSize, globalCap: globalCap, sha256: sha256, encoding: encoding, offered: offered,
                        cachedValidators: cachedValidators, partial: partial, partialAtAnotherURL: partialAtAnotherURL)
        self.partial = Partial(recorded: partial != nil)
        chain = RedirectChain(from: url.text)
        conditional = inputs.canRevalidate
    }

    // MARK: What the caller reads

    var phase: Phase { state.phase }
    /// The failure that ended the transfer, once it failed.
    var failure: TransferFailure? { state.failure }
    /// Whether the transfer has ended (placed, fresh, paused or failed).
    var isOver: Bool { state.isOver }
    /// The response's head: as it arrives while connecting, whole while its body is read or
    /// dropped; in any other state, the last response's status only.
    var head: ResponseRules.Head { state.head }
    /// Whether the final head arrived whole (its blank line, a body, or a clean end): until
    /// then no response came (SPEC §6, §7), and later lines are a body's trailers.
    var headComplete: Bool { state.headComplete }
    /// Whether the response's body is decoded on its way to the partial (`encoding: decode`,
    /// and it is labelled): its bytes on the wire are then counted apart (SPEC §7).
    var decodesBody: Bool { state.decodesBody }
    /// Whether a body beginning now is the first of this response.
    var awaitsBody: Bool { state.awaitsBody }
    /// Why libcurl is stopped, if it is (only a body being written is held).
    var hold: Hold? { state.receivingBody?.hold }
    /// Whether state.db holds the record of the body being written (its validators, this
    /// boot, this inode), and whether the engine took it to commit.
    var recordCommitted: Bool { state.receivingBody?.recordCommitted ?? false }
    var recordRequested: Bool { state.receivingBody?.recordRequested ?? false }
    /// Bytes of a body that is not written (`drop`) taken so far.
    var dropped: UInt64 { state.dropped }

    var encoding: EncodingMode { inputs.encoding }
    var cap: UInt64 { inputs.cap }
    var capName: String { inputs.capName }
    /// The URL asked now, and the redirects followed to it.
    var url: String { chain.url }
    var redirects: Int { chain.count }
    var offset: UInt64 { partial.offset }
    var requestedFrom: UInt64 { partial.requestedFrom }
    var syncedOffset: UInt64 { partial.syncedOffset }
    var epoch: Int { partial.epoch }
    var expectedTotal: UInt64? { partial.expectedTotal }
    var partialRecorded: Bool { partial.recorded }
    /// Validators of the response that produced the partial's bytes.
    var partialValidators: Validators { partial.response.validators }

    /// Whether the origin gave a whole answer that says it is up (SPEC §6: it ends the
    /// origin's hold): the final head came, valid, and not with a status that holds.
    var originAnswered: Bool { state.originAnswered }

    /// Whether the partial being written (or kept) could resume after this transfer stops
    /// (§7's one rule, on the response that began it).
    var resumeVerdict: ResumeRule.Verdict { ResumeRule.judge(partial.response, sha256Given: inputs.sha256 != nil, encoding: inputs.encoding) }

    // MARK: Starting

    /// FAULTS 2, 3, 7, 8: of the partial found, `trusted` bytes may be kept (`PartialTrust`);
    /// they are resumed when the partial is resumable (`ResumeRule`: If-Range on its strong
    /// validator, or none when a sha256 will check the result). `.resume(from:)` the bytes
    /// to keep, which the caller reads into the digest (`resumeFailed` when it cannot), or
    /// `.nothing`: the partial is replaced when a body begins.
    mutating func resume(trusted: UInt64?) -> Action {
        guard case .queued = state else { preconditionFailure("resume(trusted:) while \(state)") }
        guard let trusted, trusted > 0, let recorded = inputs.recordedPartial else { return .nothing }
        guard case .resume(let guardedBy) = ResumeRule.judge(recorded.response, sha256Given: inputs.sha256 != nil, encoding: inputs.encoding,
                                                             atAnotherURL: inputs.partialAtAnotherURL) else { return .nothing }
        partial.resume(trusted, of: recorded, ifRange: guardedBy, atAnotherURL: inputs.partialAtAnotherURL)
        // A partial is resumed, not revalidated: a 304 is never "complete" for it (FAULTS 11).
        conditional = false
        return .resume(from: trusted)
    }

    /// The kept bytes could not be read back: the transfer starts from zero.
    mutating func resumeFailed() {
        guard case .queued = state else { preconditionFailure("resumeFailed() while \(state)") }
        partial.restartFromZero()
        conditional = inputs.canRevalidate
    }

    /// `.send` the request to send now: the first, or the same again while connecting.
    mutating func request() -> Action {
        switch state {
        case .queued, .connecting: return .send(nextRequest())
        default: preconditionFailure("request() while \(state)")
        }
    }

    /// The request for the chain's URL, its exchange begun.
    private mutating func nextRequest() -> Request {
        let from = partial.requestedFrom
        let revalidating = from == 0 && conditional ? inputs.cachedValidators : nil
        let asked = ResponseRules.Request(resumeFrom: from, partialValidators: partialValidators,
                                          partialTotal: from > 0 ? inputs.recordedPartial?.totalLength : nil,
                                          revalidating: revalidating, size: inputs.size, cap: inputs.cap, capName: inputs.capName,
                                          encoding: inputs.encoding, offered: inputs.offered,
                                          partialEncoding: from > 0 ? partial.response.contentEncoding : nil)
        state = .connecting(Exchange(asked: asked))
        return Request(url: chain.url, sameOrigin: isSameOrigin(chain.url), rangeFrom: from, ifRange: from > 0 ? partial.ifRange : nil,
                       revalidating: revalidating)
    }

    private func isSameOrigin(_ text: String) -> Bool {
        if text == inputs.url.text { return true }  // the first request: no parse
        guard let other = try? ResourceURL.parse(text) else { return false }
        return other.origin == inputs.url.origin
    }

    // MARK: The response

    /// A line of the response's head: `.refuse` when the exchange must stop (SPEC §7: a head
    /// over 256 KiB, an invalid final head, a redirect to a Location over 8 KiB; the failure
    /// is kept for the end), else `.nothing`. After the head (a chunked body's trailers) the
    /// line changes nothing.
    @discardableResult
    mutating func headerLine(_ bytes: UnsafeRawBufferPointer) -> Action {
        guard case .connecting = state, case .connecting(var exchange) = takeState() else { return headComplete ? .nothing : .refuse }
        if let failure = exchange.take(line: bytes) {
            state = .failed(failure, exchange.reply)
            return .refuse
        }
        state = .connecting(exchange)
        return .nothing
    }

    /// Whether an exchange ending now (`cleanly`) had an empty 2xx body, which calls no write
    /// callback: it begins at the end (`bodyBegins`, before `ended`) — a 200 to a ranged
    /// request still means "the file is now this, from zero", and its partial is created empty.
    func bodyBeginsAtEnd(cleanly: Bool) -> Bool { cleanly && state.awaitsBody && (200..<300).contains(state.head.status) }

    /// The response's body begins (its first chunk, or the end of an empty 2xx body):
    /// `ResponseRules.onHead` says whether it is written (`.writeBody`), after the partial (a
    /// 206 continuing it) or from zero (FAULTS 5, 6: never appended otherwise), or not
    /// (`.discardBody`).
    mutating func bodyBegins() -> Action {
        guard case .connecting = state, case .connecting(var exchange) = takeState() else { preconditionFailure("bodyBegins() while \(state)") }
        // A body follows a whole head (libcurl gives the blank line first; a test may not).
        if !exchange.headComplete, let failure = exchange.judgeHead(ended: true) {
            state = .failed(failure, exchange.reply)
            return .discardBody
        }
        let head = exchange.head
        let decision = ResponseRules.onHead(exchange.asked, head)
        if (200..<300).contains(head.status) {
            if case .cachedCopy = decision {} else { lastResponse = head.facts }
        }
        let restart: Bool
        var appendEnd: UInt64?
        switch decision {
        case .noBody:
            state = .discarding(exchange, dropped: 0)
            return .discardBody
        case .refuse(let failure):
            state = .failed(failure, exchange.reply)
            return .discardBody
        case .cachedCopy(let validators):
            state = .resendingCachedCopy(validators, exchange.reply)
            return .discardBody
        case .append(let total, let rangeEnd):
            partial.expectedTotal = total
            appendEnd = rangeEnd
            restart = false
        case .restart(let total):
            restart = partial.requestedFrom > 0 || partial.offset > 0
            if partial.requestedFrom > 0 { refusedResume = partial.requestedFrom }  // a 200 to a Range: the server refused the resume
            if restart { partial.restartFromZero() }
            partial.expectedTotal = total
        }
        // A new version starts: its validators (and what §7's rule reads) belong to the partial (SPEC §5).
        if head.status != 206 || partialValidators == Validators() {
            partial.response = head.facts
        }
        // A body begins: its record (these validators, this boot) is written before it grows.
        state = .receiving(exchange, Receiving(appendEnd: appendEnd, decodesBody: exchange.decodesBody))
        return .writeBody(restart: restart, remaining: partial.expectedTotal.map { $0 > partial.offset ? $0 - partial.offset : 0 })
    }

    /// A chunk of `count` body bytes arrived (for every chunk libcurl hands over: the state's
    /// data is read, or changed in place, never copied). The record comes first (SPEC §5: `.holdForRecord`), then
    /// the cap, enforced as bytes arrive, chunked or not (FAULTS 13: `.refuse`); else
    /// `.write`. Rate and budget are the caller's to check after `.write` (`held`), so a
    /// chunk handed over again after a pause is counted once. Of a body that is not written,
    /// a short one is dropped (`.drop`), the rest refused.
    mutating func bodyChunk(_ count: Int) -> Action {
        switch state {
        case .receiving(_, let receiving):
            let after = partial.offset + UInt64(count)
            let recordBefore = partial.requestedFrom > 0 ? partial.requestedFrom : PartialTrust.recordBefore
            if !receiving.recordCommitted, after > recordBefore, bodyIsRecorded {
                held(.record)
                return .holdForRecord
            }
            if after > inputs.cap {
                fail(.overCap(inputs.capName, decoded: receiving.decodesBody, status: head.status))
                return .refuse
            }
            if let appendEnd = receiving.appendEnd, after > appendEnd + 1 {
                fail(.pastRange(end: appendEnd + 1, status: head.status))
                return .refuse
            }
            return .write
        case .discarding(_, let dropped):
            // Error pages never land (FAULTS 14); a short one is read to its end, unwritten.
            guard dropped + UInt64(count) <= Self.drainLimit,
                  case .discarding(let exchange, _) = takeState() else { return .refuse }
            state = .discarding(exchange, dropped: dropped + UInt64(count))
            return .drop
        default:
            return .refuse
        }
    }

    /// Changes the receiving state's data in place (nil in any other state): the state is
    /// `.modifying` meanwhile, so nothing is copied while it holds the data too.
    @discardableResult
    private mutating func changeReceiving<Answer>(_ change: (inout Receiving) -> Answer) -> Answer? {
        guard case .receiving = state, case .receiving(let exchange, var receiving) = takeState() else { return nil }
        let answer = change(&receiving)
        state = .receiving(exchange, receiving)
        return answer
    }

    /// The state, taken out with its data (`.modifying` left in its place): moved, not copied,
    /// so a case's data changed and put back is never held twice.
    private mutating func takeState() -> State {
        var taken = State.modifying
        swap(&taken, &state)
        return taken
    }

    /// The caller stopped libcurl for the feed's rate or budget (or the cache's room).
    mutating func held(_ reason: Hold) {
        changeReceiving { $0.hold = reason }
    }

    /// libcurl goes on after a hold.
    mutating func released() {
        changeReceiving { $0.hold = nil }
    }

    /// `count` bytes of the chunk were taken by the writer.
    mutating func wrote(_ count: Int) {
        partial.offset += UInt64(count)
    }

    /// The partial could not be created or written (a full disk pauses everything).
    mutating func cannotWrite(_ error: Errno, creating: Bool = false) {
        guard !isOver else { return }
        fail(.cannotWrite(error, creating: creating, status: state.reply.status))
    }

    // MARK: The record (SPEC §5)

    /// A body that may come to hold 1 MiB, or that continues or replaces a recorded partial.
    /// A decoded body never resumes (§7): nothing would trust its record, and it is not held
    /// for one (a pause mid-read keeps the read's decoded bytes in libcurl's memory).
    private var bodyIsRecorded: Bool {
        guard inputs.encoding != .decode else { return false }
        return partial.requestedFrom > 0 || partial.recorded || (partial.expectedTotal ?? .max) > PartialTrust.recordBefore
    }

    /// Whether the body being received needs its record committed now.
    var needsRecord: Bool {
        guard let receiving = state.receivingBody else { return false }
        return !receiving.recordCommitted && !receiving.recordRequested && bodyIsRecorded
    }

    /// The engine took the record to commit.
    mutating func recordTaken() {
        partial.recorded = true
        changeReceiving { $0.recordRequested = true }
    }

    /// The record is in state.db: `.unpause` when libcurl was held for it, else `.nothing`.
    mutating func recordCommittedNow() -> Action {
        let wasHeld = changeReceiving { receiving -> Bool in
            receiving.recordCommitted = true
            guard receiving.hold == .record else { return false }
            receiving.hold = nil
            return true
        }
        return wasHeld == true ? .unpause : .nothing
    }

    /// `offset` bytes of the partial as it was at `epoch`, written with these validators,
    /// were fsynced: `.recordSynced`, the record may say so (`Partial.synced`), or `.nothing`.
    mutating func synced(_ offset: UInt64, epoch: Int, validators: Validators) -> Action {
        partial.synced(offset, epoch: epoch, validators: validators) ? .recordSynced : .nothing
    }

    /// The partial's record with `offset` durable.
    func partialRecord(urlHash: String, syncedOffset offset: UInt64, validators: Validators? = nil, total: UInt64?? = nil,
                       bootID: String, inode: UInt64?, at time: Instant) -> PartialState {
        partial.record(urlHash: urlHash, syncedOffset: offset, validators: validators, total: total, bootID: bootID, inode: inode, at: time)
    }

    // MARK: The end

    /// The exchange ended with libcurl's `curlCode` (`describe` gives its words): `.follow`
    /// the redirect, `.keepCachedCopy`, `.digest` the complete file, or `.fail`, as its
    /// exchange judges it (`Exchange.end`: libcurl's error when no response came, else
    /// `ResponseRules.onEnd` on the status, the bytes on disk, the manifest's checks).
    /// `connectionFailure`: the cause, when libcurl says the origin could not be reached
    /// (`CurlGlobal.connectionFailure`): such a failure holds the origin (SPEC §6).
    /// `malformed`: libcurl refused the response itself (not HTTP, a negative length, a
    /// header line too long for it), in words: an invalid response (SPEC §7).
    /// `onWire`: the body's bytes as sent (read only for a decoded body, `decodesBody`).
    mutating func ended(cleanly: Bool, tlsError: Bool, connectionFailure: String? = nil, malformed: String? = nil, describe: () -> String,
                        redirectURL: () -> String?, onWire: () -> UInt64 = { 0 }, maxRedirects: Int, now: Date) -> Action {
        if let failure { return .fail(failure) }
        var exchange: Exchange
        switch state {
        case .resendingCachedCopy(let validators, _):
            state = .fresh  // its body was not read: how the connection ended says nothing of the copy
            return .keepCachedCopy(validators)
        case .receiving(let current, _), .discarding(let current, _):
            exchange = current
        case .connecting(let current) where !bodyBeginsAtEnd(cleanly: cleanly):
            exchange = current
        default:
            preconditionFailure("ended(cleanly: \(cleanly)) while \(state)")
        }
        let end = exchange.end(cleanly: cleanly, tlsError: tlsError, connectionFailure: connectionFailure, malformed: malformed,
                               describe: describe, onDisk: partial.offset, onWire: onWire, now: now)
        let reply = exchange.reply
        switch end {
        case .redirect:
            guard let target = redirectURL() ?? exchange.head.location else {
                return fail(.redirectRefused("HTTP \(reply.status) without a usable Location", status: reply.status), reply)
            }
            if let refused = chain.follow(target, maxRedirects: maxRedirects) { return fail(.redirectRefused(refused, status: reply.status), reply) }
            return .follow(nextRequest())
        case .notModified(let validators):
            state = .fresh
            return .keepCachedCopy(validators)
        case .failed(let failure):
            return fail(failure, reply)
        case .finalize(let total):
            partial.expectedTotal = total
            state = .verifying(reply)
            return .digest
        }
    }

    /// The digest of the partial's bytes: against the manifest's `sha256` (FAULTS 14): a
    /// file that passes is fsynced next (`.fsync`), else `.fail`.
    mutating func digested(_ digest: String) -> Action {
        guard case .verifying(let reply) = state else { preconditionFailure("digested(_:) while \(state)") }
        if let failure = ResponseRules.checkDigest(digest, expected: inputs.sha256, status: reply.status) {
            return fail(failure, reply)
        }
        state = .syncing(reply)
        return .fsync
    }

    /// The complete file's fsync ended: `.rename` it into place, or `.fail` (not placed).
    mutating func fileSynced(_ result: Result<Void, Errno>) -> Action {
        guard case .syncing = state else { preconditionFailure("fileSynced(_:) while \(state)") }
        if case .failure(let error) = result {
            // After a failed fsync the kernel may have dropped the file's dirty pages: none of
            // the partial is trusted again (it is removed and fetched anew).
            return fail(.fsyncFailed(error))
        }
        return .rename
    }

    /// The rename into place ended (`failure`: why it failed): `.recordPlaced`, or `.fail`
    /// (`TransferFailure.notPlaced`).
    mutating func renamed(_ failure: PlacementError?) -> Action {
        guard case .syncing = state else { preconditionFailure("renamed(_:) while \(state)") }
        if let failure { return fail(.notPlaced(failure)) }
        state = .placed
        return .recordPlaced
    }

    // MARK: Pausing and failing

    /// A stop, a closed window, lost conditions or a used budget: `.paused` (resumably), or
    /// `.nothing` for a complete file being verified or synced, or a transfer over.
    mutating func pause(_ reason: String) -> Action {
        switch state {
        case .queued, .connecting, .receiving, .discarding, .resendingCachedCopy:
            state = .paused(reason: reason, state.reply)
            return .paused
        default:
            return .nothing
        }
    }

    /// Ends the transfer with `failure` (from anywhere outside the machine: an option
    /// libcurl refused, a missing environment variable, a record not committed): `.fail`,
    /// with the failure kept — a transfer that failed already keeps its first one.
    @discardableResult
    mutating func fail(_ failure: TransferFailure) -> Action {
        if case .failed(let earlier, _) = state { return .fail(earlier) }
        return fail(failure, state.reply)
    }

    /// Fails with `reply`, what is still read of the last response (the state may not say it).
    private mutating func fail(_ failure: TransferFailure, _ reply: Reply) -> Action {
        state = .failed(failure, reply)
        return .fail(failure)
    }

    /// `fail`, returning the failure (to throw it).
    mutating func failing(_ failure: TransferFailure) -> TransferFailure {
        fail(failure).failure ?? failure
    }
}
