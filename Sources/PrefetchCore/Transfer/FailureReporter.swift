import Foundation

/// What a failed transfer becomes (`TransferStateMachine.afterFailure`, SPEC §5, §6): the
/// run pauses (a full disk), the job is retried within the run, its origin is held, or the
/// failure is recorded and shown — the one shard's failure reporting, apart from the loop
/// that runs its transfers (`EngineShard`). It writes through the shard's ledger and counts
/// in its summary, which the shard passes in.
struct FailureReporter {
    private let board: RunBoard
    /// Backoff jitter's draws.
    /// (A generator with state, seeded from the system's: ThreadSanitizer's instrumentation
    /// of an `inout` access crashes on the empty `SystemRandomNumberGenerator`.)
    private var random = SplitMix64(seed: UInt64.random(in: 0...UInt64.max))

    init(board: RunBoard) {
        self.board = board
    }

    /// `failure` ended `job`'s exchange (`transfer`: the transfer it ended, nil when none
    /// started); `discarded`: the partial's bytes thrown away because it cannot resume, and why.
    mutating func report(_ job: TransferJob, _ failure: TransferFailure, transfer: Transfer?, discarded: (bytes: UInt64, why: String)?,
                         now: Instant, ledger: inout ShardLedger, summary: inout EngineSummary) {
        var failure = failure
        let refusedResume = transfer?.refusedResume ?? job.refusedResume
        // The run's line says what became of a partial that cannot resume, and of a resume
        // the server refused (the recorded error stays the failure's own).
        var shown = failure.message
        if let discarded { shown += " (\(ByteSize.format(discarded.bytes)) discarded: cannot resume: \(discarded.why))" }
        if refusedResume > 0 { shown += "; " + ResumeRule.refusal(from: refusedResume) }
        if job.mirrorPass != nil, failure.kind != .diskFull {
            guard let ended = nextURL(job, &failure, shown: shown, transfer: transfer, discarded: discarded, now: now, ledger: &ledger) else { return }
            return finish(ended.job, failure, shown: failure.message, origin: nil, hold: nil, heldUntil: ended.heldUntil, transfer: transfer,
                          discarded: discarded, refusedResume: refusedResume, now: now, ledger: &ledger, summary: &summary)
        }
        let origin = failure.holdsOrigin.map { _ in job.url.origin }
        var heldUntil: Instant?
        var hold: OriginHold?
        if let origin, let cause = failure.holdsOrigin {
            // The whole origin is held (SPEC §6); this resource's retry is the probe, at the hold's end.
            let (held, wait, forTheRun) = board.holdOrigin(origin, cause: cause, retryAfter: failure.retryAfter, policy: job.feed.retry,
                                                           startedAt: transfer.map { Instant($0.startedAt) } ?? now, now: now,
                                                           failed: job.key, using: &random)
            ledger.originHeld(held)
            failure.retryAfter = wait
            if forTheRun { heldUntil = held.until }
            hold = held
        }
        finish(job, failure, shown: shown, origin: origin, hold: hold, heldUntil: heldUntil, transfer: transfer, discarded: discarded,
               refusedResume: refusedResume, now: now, ledger: &ledger, summary: &summary)
    }

    /// SPEC §8: a failure at one of a resource's URLs moves its pass on to the next URL,
    /// asked at once, with no attempt counted (nil is returned); its origin is held as §6
    /// says, without counting the resource with the hold. When the pass is over (every URL
    /// failed, or is held), `failure` becomes the pass's outcome (`MirrorOrder.outcome`) and
    /// the job to go on with (its next pass fresh) is returned, with the hold's end when
    /// every URL is held for the rest of the run.
    private mutating func nextURL(_ job: TransferJob, _ failure: inout TransferFailure, shown: String, transfer: Transfer?,
                                  discarded: (bytes: UInt64, why: String)?, now: Instant,
                                  ledger: inout ShardLedger) -> (job: TransferJob, heldUntil: Instant?)? {
        guard var pass = job.mirrorPass else { return (job, nil) }
        if let cause = failure.holdsOrigin {
            let (held, _, _) = board.holdOrigin(job.url.origin, cause: cause, retryAfter: failure.retryAfter, policy: job.feed.retry,
                                                startedAt: transfer.map { Instant($0.startedAt) } ?? now, now: now, failed: job.key,
                                                counted: false, using: &random)
            ledger.originHeld(held)
        }
        pass.failed(.init(index: job.urlIndex, transient: failure.kind == .transient || failure.holdsOrigin != nil,
                          message: failure.message, retryAfter: failure.retryAfter))
        var moved = job
        moved.mirrorPass = pass
        if case .request(let next) = board.nextURL(moved, now: now) {
            var again = moved.at(next)
            again.notBefore = now
            again.refusedResume = transfer?.refusedResume ?? job.refusedResume
            // Its bytes go along (a `sha256` lets them resume there, §7); else it restarts there.
            if failure.discardPartial || discarded != nil {
                again.partial = nil
            } else if let transfer, transfer.syncedOffset > 0 {
                again.partial = transfer.partialRecord(syncedOffset: transfer.syncedOffset, at: now)
            }
            board.retry(again)
            board.emit(.nextURL(job.key, message: shown, url: again.url.redacted))
            return nil
        }
        let outcome = pass.outcome(heldCause: { board.heldCause(moved, $0, now: now) }, shown: { job.resource.url(at: $0).redacted })
        failure = TransferFailure(kind: outcome.transient ? .transient : .permanent, message: outcome.message, retryAfter: outcome.retryAfter,
                                  discardPartial: failure.discardPartial, httpStatus: failure.httpStatus)
        let fresh = MirrorOrder(count: job.resource.urlCount, servedBy: job.servedIndex)
        var ended = moved.at(fresh.order[0])
        ended.mirrorPass = fresh
        if failure.discardPartial || discarded != nil {
            ended.partial = nil
        }
        return (ended, board.heldForTheRun(job, first: pass.order[0], now: now))
    }

    /// What a failure comes to once it counts: the job is retried within the run, or the
    /// failure is recorded and shown (`origin`, `hold`: the origin it held, §6).
    private mutating func finish(_ job: TransferJob, _ failure: TransferFailure, shown: String, origin: String?, hold: OriginHold?,
                                 heldUntil: Instant?, transfer: Transfer?, discarded: (bytes: UInt64, why: String)?, refusedResume: UInt64,
                                 now: Instant, ledger: inout ShardLedger, summary: inout EngineSummary) {
        let durable = discarded != nil ? nil
            : transfer.flatMap { $0.syncedOffset > 0 ? $0.partialRecord(syncedOffset: $0.syncedOffset, at: now) : nil }
        var action = TransferStateMachine.afterFailure(failure, failures: job.failures, policy: job.feed.retry, durable: durable,
                                                       now: now, using: &random)
        // Held for the rest of the run: no probe follows in it; the resource waits for the hold's end.
        if let heldUntil, case .retry = action { action = .report(nextRetry: heldUntil) }
        let nextRetry: Instant?
        switch action {
        case .pauseEverything:
            summary.diskFull = true
            board.diskFull = true
            summary.count(.paused, feed: job.feed.name)
            let fate: PartialFate = discarded.map { .discarded($0.bytes, because: $0.why) }
                ?? (transfer.map { $0.syncedOffset > 0 ? .kept($0.syncedOffset) : .none } ?? job.partial.map { .kept($0.syncedOffset) } ?? .none)
            board.emit(.paused(job.key, reason: "disk full", partial: fate, refusedResume: refusedResume))
            return
        case .retry(let at, _, _, _): nextRetry = at
        case .report(let at): nextRetry = at
        }
        // A permanent error is recorded as such; exhausted attempts are failures without a next retry.
        ledger.failure(job, failure, nextRetry: nextRetry, at: now)
        if case .retry(let at, let wait, let keep, let discard) = action {
            var again = job
            again.failures = job.failures + 1
            again.notBefore = at
            again.refusedResume = refusedResume
            if let keep {
                again.partial = keep
            } else if discard || discarded != nil {
                again.partial = nil
            }
            board.retry(again)
            // A held origin's request: its retry is the hold's probe (SPEC §7), so it says held.
            if let hold {
                board.emit(.heldWithOrigin(job.key, message: shown, origin: hold.origin, until: hold.until, after: wait))
            } else {
                board.emit(.retrying(job.key, message: shown, after: wait))
            }
            return
        }
        if let origin { board.holdForTheRun(origin) }  // no further probe in this run
        summary.count(.failed, feed: job.feed.name)
        summary.failures.append((job.key, failure.message))
        summary.changedFeeds.insert(job.feed.name)
        board.emit(.failed(job.key, message: shown, retryAt: nextRetry, origin: origin))
    }
}
