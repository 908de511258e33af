import Foundation

/// What one shard writes to state.db: each outcome as a named record, gathered during a
/// loop and handed to the `RunBoard` together (one lock for a loop's worth of outcomes,
/// not one per write), which commits them in its group transaction.
struct ShardLedger {
    private let board: RunBoard
    private var writes: [RunBoard.StateWrite] = []

    init(board: RunBoard) {
        self.board = board
    }

    /// A state write for the next commit; `folders` received files and are fsynced before it.
    mutating func record(placedIn folders: [FileDescriptor] = [], _ body: @escaping (StateStore) throws -> Void) {
        writes.append(RunBoard.StateWrite(placedIn: folders, body: body))
    }

    /// Passes the writes on; the board commits them when its transaction is due (or now).
    /// Returns why a commit made now failed, if it did.
    @discardableResult
    mutating func commit(force: Bool) -> (any Error)? {
        let failure = board.write(writes, force: force)
        writes.removeAll(keepingCapacity: true)
        return failure
    }

    // MARK: Outcomes

    /// One exchange with the origin, whatever its outcome (`attempts` table).
    mutating func attempt(_ transfer: Transfer, outcome: String, error: String?, status: Int?, at now: Instant) {
        record { [key = transfer.job.key, startedAt = Instant(transfer.startedAt), bytes = transfer.received] state in
            try state.recordAttempt(key, startedAt: startedAt, finishedAt: now, bytes: bytes, httpStatus: status, outcome: outcome, error: error)
        }
    }

    /// The copy was confirmed (304) or replaced (`placed`, with its length and SHA-256,
    /// written after the folders that received it are fsynced).
    /// `response`: the 2xx response of a placed copy (the resource's last, §6's deadline rule).
    mutating func validated(_ transfer: Transfer, validators: Validators, length: UInt64?, sha256: String?, placedIn folders: [FileDescriptor]?,
                            response: ResponseFacts?, at now: Instant) {
        record(placedIn: folders ?? []) { [job = transfer.job, clearPartial = transfer.partialRecorded, file = transfer.completeFile] state in
            try state.recordValidated(job.key, urlHash: job.urlHash, validators: validators, length: length, sha256: sha256,
                                      placed: folders != nil, encoding: job.resource.encoding, at: now, clearPartial: clearPartial,
                                      response: response, answeredBy: job.answeringURL, file: folders == nil ? nil : file,
                                      keepingReplaced: folders != nil && job.feed.feed.consistency == .release)
        }
    }

    /// The resource's last 2xx response, of a transfer that did not place its file.
    mutating func response(_ job: TransferJob, _ response: ResponseFacts, length: UInt64?, at now: Instant) {
        record { [key = job.key, urlHash = job.urlHash] state in
            try state.recordResponse(key, urlHash: urlHash, response, length: length, at: now)
        }
    }

    mutating func failure(_ job: TransferJob, _ failure: TransferFailure, nextRetry: Instant?, at now: Instant) {
        record { state in
            try state.recordFailure(job.key, urlHash: job.urlHash, entry: job.entry, release: job.release, error: failure.message,
                                    permanent: failure.kind == .permanent, nextRetry: nextRetry, at: now)
        }
    }

    mutating func partial(_ key: ResourceKey, _ partial: PartialState) {
        record { state in try state.recordPartial(key, partial) }
    }

    mutating func partialRemoved(_ key: ResourceKey) {
        record { state in try state.deletePartial(key) }
    }

    mutating func originHeld(_ hold: OriginHold) {
        record { state in try state.holdOrigin(hold) }
    }

    mutating func originCleared(_ origin: String) {
        record { state in try state.clearOrigin(origin) }
    }

    mutating func meteredBytes(_ day: MeteredDay, _ count: UInt64) {
        record { state in try state.addMeteredBytes(day, count) }
    }
}
