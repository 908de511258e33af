import Foundation

// MARK: Pausing and durability

/// How an `EngineShard` keeps what it received: pausing a transfer (its partial synced and
/// kept, or discarded when it cannot resume), the periodic and final fsyncs of partials,
/// the records of new partials committed before they grow, and the byte counts.
extension EngineShard {
    /// Pauses a running transfer: a resumable partial is fsynced and kept (its record says
    /// where the next run resumes), one that cannot resume (§7's one rule) is discarded.
    func pause(_ transfer: Transfer, reason: String) {
        guard transfer.pause(reason) else { return }
        takeOut(transfer, reusable: false)
        board.probeEnded(transfer.job.url)  // a paused probe says nothing of its origin
        countMetered(transfer)
        recordResponse(transfer)
        let fate: PartialFate
        if transfer.offset == 0 {
            fate = .none
        } else if case .restart(let obstacle) = nextPassVerdict(transfer) {
            fate = .discarded(transfer.offset, because: obstacle.description)
            cache.removePartial(transfer.partialName)
            ledger.partialRemoved(transfer.job.key)
        } else {
            sync(transfer)
            fate = .kept(transfer.syncedOffset)
        }
        attempt(transfer, outcome: "paused", error: reason)
        summary.count(.paused, feed: transfer.job.feed.name)
        board.emit(.paused(transfer.job.key, reason: reason, partial: fate, refusedResume: transfer.refusedResume))
    }

    /// §7's verdict on a paused transfer's partial, judged at the URL the resource's next
    /// pass asks first (SPEC §8): one begun at another of its URLs goes on there only with a
    /// `sha256`, so without one it is not kept for a resume that cannot happen.
    func nextPassVerdict(_ transfer: Transfer) -> ResumeRule.Verdict {
        let verdict = transfer.resumeVerdict
        let job = transfer.job
        guard verdict.isResumable, job.mirrorPass != nil,
              job.urlKey != job.servedIndex.flatMap({ $0 == 0 ? nil : job.resource.url(at: $0).identityHash }) else { return verdict }
        return ResumeRule.judge(transfer.lastResponse ?? ResponseFacts(), sha256Given: job.resource.sha256 != nil,
                                encoding: job.resource.encoding, atAnotherURL: true)
    }

    /// The periodic fsync of a running transfer's partial, off the loop; the offset is
    /// recorded when it is durable (`handleSynced`).
    func syncInBackground(_ transfer: Transfer) {
        guard !syncs.inline else { return sync(transfer) }
        // What is still gathering is written first: a slow transfer's partial on disk lags
        // by one sync interval, not by a whole buffer.
        let written = transfer.settledOffset()
        guard let file = transfer.file, written > transfer.syncedOffset,
              !syncs.isSyncingPartial(of: transfer) else { return }
        syncs.awaitPartial(file, .init(transfer: transfer, offset: written, epoch: transfer.machine.epoch, validators: transfer.partialValidators,
                                       total: transfer.expectedTotal))
    }

    /// fsync the partial, then record the offset: a crash never trusts unsynced bytes (FAULTS 2).
    func sync(_ transfer: Transfer) {
        let written = transfer.settledOffset()  // after what is still gathering is written
        guard written > 0, written != transfer.syncedOffset else { return }
        guard let file = transfer.file, faults.reach(.partialFsync) == nil, case .success = file.sync(),
              transfer.noteSynced(written, epoch: transfer.machine.epoch, validators: transfer.partialValidators) else { return }
        ledger.partial(transfer.job.key, transfer.partialRecord(syncedOffset: transfer.syncedOffset, at: clock()))
    }

    /// Commits the record of every body that began since the last loop and may come to hold
    /// 1 MiB (or continues a recorded partial), then lets those paused for it go on: a
    /// `kill -9` from then on loses nothing the kernel accepted (SPEC §5). One commit for
    /// all of them; a body that stays small is never waited for. A record that cannot be
    /// committed fails its transfer (a full disk pauses the run), so no partial grows
    /// beyond 1 MiB that a later run could not trust.
    func recordNewPartials() {
        guard active.values.contains(where: \.needsRecord) else { return }  // the common case: no allocation
        let starting = active.values.filter(\.needsRecord)
        let now = clock()
        for transfer in starting {
            ledger.partial(transfer.job.key, transfer.takeRecord(at: now))
            recordResponse(transfer)  // a kill -9 from now on leaves the resource's last 2xx response known
        }
        let failure: (any Error)? = faults.reach(.partialRecord).map { SQLiteError(code: $0.code == ENOSPC ? 13 : 10, message: "\($0)") }
            ?? ledger.commit(force: true)
        for transfer in starting {
            if let failure {
                takeOut(transfer, reusable: false)
                let full = (failure as? SQLiteError)?.code == 13  // SQLITE_FULL
                fail(transfer, TransferFailure(kind: full ? .diskFull : .transient,
                                               message: full ? "disk full" : "cannot record the partial in state.db: \(failure)",
                                               retryAfter: nil, discardPartial: !full, httpStatus: nil))
            } else {
                transfer.recordCommitted()
            }
        }
    }

    /// Counts the bytes a transfer received since it was last counted (run totals, metered budget).
    func countMetered(_ transfer: Transfer) {
        let new = transfer.received - transfer.counted
        transfer.counted = transfer.received
        summary.countBody(new, feed: transfer.job.feed.name)
        guard metered, new > 0 else { return }
        let day = LocalDay.label(clock(), clock: ZoneClock(transfer.job.feed.timeZone))
        ledger.meteredBytes(MeteredDay(feed: transfer.job.feed.name, day: day), new)
    }

    func attempt(_ transfer: Transfer, outcome: String, error: String?, status: Int? = nil) {
        ledger.attempt(transfer, outcome: outcome, error: error, status: status, at: clock())
    }
}
