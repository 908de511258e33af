import Foundation

/// One thread's part of a run (`TransferEngine`): its own libcurl multi handle and the
/// transfers on it, within its share of the connection limits. It takes jobs from the
/// `RunBoard`, and writes state and sends events through it.
final class EngineShard: @unchecked Sendable {
    private let index: Int
    private let board: RunBoard
    private let cache: CacheFolder
    private let config: Config
    private let environment: [String: String]
    private let clock: () -> Instant
    /// This boot's id, recorded with every partial.
    private let bootID: String
    /// The run's body buffers.
    private let pool: BufferPool
    /// Backoff jitter's draws.
    private var random = SystemRandomNumberGenerator()
    private let multi: CurlMulti
    /// This shard's share of `concurrency` and of `per_host`, and which of `shards` it is
    /// (a feed's `limits.concurrency` is shared out the same way): the shares add up to
    /// the limits.
    private let concurrency: Int
    private let perHost: Int
    private let shards: Int
    private var active: [CurlEasy.ID: Transfer] = [:]
    private(set) var summary = EngineSummary()
    /// Feeds whose metered bytes count toward their budget.
    private let metered: Bool
    /// Each budgeted feed's allowance for this run, when the link is metered, and each
    /// capped feed's token bucket (`max_rate`): only ever on a run's single shard.
    private let allowances: [String: MeteredAllowance]
    private let limiters: [String: RateLimiter]

    init(index: Int, of shards: Int, multi: CurlMulti, concurrency: Int, perHost: Int, board: RunBoard, cache: CacheFolder, config: Config,
         environment: [String: String], metered: Bool, allowances: [String: MeteredAllowance], limiters: [String: RateLimiter], pool: BufferPool,
         bootID: String, clock: @escaping () -> Instant) {
        self.index = index
        self.pool = pool
        self.bootID = bootID
        self.shards = shards
        self.concurrency = concurrency
        self.perHost = perHost
        self.board = board
        self.cache = cache
        self.config = config
        self.environment = environment
        self.metered = metered
        self.allowances = allowances
        self.limiters = limiters
        self.clock = clock
        self.multi = multi
        syncsInline = cache.syncIsFree
        syncer = Syncer(maxWorkers: 8, onFinished: { [waker = multi.waker] in waker.wake() })
    }

    // MARK: fsync off the loop

    /// On tmpfs and ramfs fsync does nothing: files are placed at once (a partial kept for
    /// resume is still fsynced, in place, before its offset is recorded); elsewhere fsync
    /// goes to `syncer`.
    private let syncsInline: Bool
    private let syncer: Syncer
    private var nextSyncID = 0
    /// Complete files waiting for their fsync before the rename.
    private var awaitingPlacement: [Int: (transfer: Transfer, bytes: UInt64, validators: Validators, sha256: String?)] = [:]
    /// Periodic partial fsyncs in flight: the offset and validators to record once durable.
    private var awaitingPartialSync: [Int: (transfer: Transfer, offset: UInt64, epoch: Int, validators: Validators, total: UInt64?)] = [:]
    /// Complete files may wait for fsync only up to this many; then new transfers wait (each holds a descriptor).
    private var placementBacklog: Int { max(32, 2 * concurrency) }

    private func submitSync(_ file: FileDescriptor) -> Int {
        nextSyncID += 1
        syncer.submit(id: nextSyncID, file: file)
        return nextSyncID
    }

    /// Everything that ended since the last loop. Its state writes join the board's
    /// transaction, committed at most `RunBoard.commitInterval` later (group commit).
    private func finishBatch(completed: [(CurlEasy.ID, Int32)]) {
        let synced = syncsInline ? [] : syncer.takeFinished()
        handleCompleted(completed)
        handleSynced(synced)
        commit(force: false)
    }

    /// Continues what waited for an fsync: placements, and partial offsets to record.
    private func handleSynced(_ finished: [Syncer.Finished]) {
        for done in finished {
            if let waiting = awaitingPlacement.removeValue(forKey: done.id) {
                place(waiting.transfer, bytes: waiting.bytes, validators: waiting.validators, sha256: waiting.sha256, synced: done.result)
            } else if let partial = awaitingPartialSync.removeValue(forKey: done.id) {
                let transfer = partial.transfer
                // Only for a transfer still running: one that ended has recorded its own outcome.
                guard case .success = done.result, active[transfer.easy.id] === transfer,
                      transfer.noteSynced(partial.offset, epoch: partial.epoch, validators: partial.validators) else { continue }
                let synced = transfer.partialRecord(syncedOffset: partial.offset, validators: partial.validators, total: partial.total, at: clock())
                record { [key = transfer.job.key] state in try state.recordPartial(key, synced) }
            }
        }
    }

    /// Starts jobs from the board until none is left, and returns when its own transfers
    /// have ended. `stopRequested` is asked every loop (a signal).
    func run(stopRequested: () -> Bool) {
        var lastPauseCheck = Date.distantPast
        var lastSync = Date()
        var lastProgress = Date.distantPast
        var busySince: Date?
        while true {
            if stopRequested() || board.diskFull {
                let reason = board.diskFull ? "disk full" : "stopped"
                for transfer in Array(active.values) { pause(transfer, reason: reason) }
                break
            }
            if Date().timeIntervalSince(lastPauseCheck) >= 0.25 {  // window ends each look, conditions every 2 s
                lastPauseCheck = Date()
                let stopped = board.stoppedFeeds(now: lastPauseCheck, clock: clock())
                if !stopped.isEmpty {
                    for transfer in Array(active.values) {
                        if let reason = stopped[transfer.job.feed.name] { pause(transfer, reason: reason) }
                    }
                }
            }
            let now = clock()
            // Jobs start in plan order; a job held back by a limit keeps its place.
            while active.count < concurrency, awaitingPlacement.count < placementBacklog,
                  let job = board.next(now: now, admit: admit) {
                start(job)
            }
            if active.isEmpty {
                if !awaitingPlacement.isEmpty || !awaitingPartialSync.isEmpty {
                    syncer.waitForAny(seconds: 0.2)
                    finishBatch(completed: [])
                    continue
                }
                commit(force: true)  // nothing running: record what ended before waiting or returning
                if let busy = busySince { summary.transferSeconds += Date().timeIntervalSince(busy); busySince = nil }
                if board.drained { break }
                // Waiting for a retry within the run, a capped feed's bucket to refill, or
                // a feed's running transfers on other shards.
                let limited = limiters.values.filter(\.exhausted).map { $0.secondsUntilAvailable() }.min() ?? 0.2
                Thread.sleep(forTimeInterval: min(0.2, max(0.001, limited)))
                continue
            }
            if busySince == nil { busySince = Date() }
            do {
                _ = try multi.perform()
            } catch {
                multiFailed(error)
            }
            finishBatch(completed: multi.completed())
            recordNewPartials()
            if !allowances.isEmpty {
                for transfer in Array(active.values) where transfer.pausedForBudget { pause(transfer, reason: "metered budget used") }
            }
            if !active.isEmpty {
                do {
                    try multi.poll(milliseconds: resumeRateLimited())
                } catch {
                    multiFailed(error)
                }
            }
            if Date().timeIntervalSince(lastSync) >= 2 {
                lastSync = Date()
                for transfer in active.values { syncInBackground(transfer) }
            }
            if Date().timeIntervalSince(lastProgress) >= 0.25 {
                lastProgress = Date()
                board.progress(shard: index, active.values.map { transfer in
                    let seconds = max(0.001, Date().timeIntervalSince(transfer.startedAt))
                    return TransferProgress(key: transfer.job.key, bytes: transfer.offset, total: transfer.expectedTotal ?? transfer.job.resource.size,
                                            rate: Double(transfer.received) / seconds, receiving: transfer.receiving)
                })
            }
        }
        // Complete files still waiting for their fsync are placed (also when stopping: they are verified).
        while !awaitingPlacement.isEmpty || !awaitingPartialSync.isEmpty {
            syncer.waitForAny(seconds: 0.2)
            finishBatch(completed: [])
        }
        commit(force: true)
        syncer.shutDown()
        if let busy = busySince { summary.transferSeconds += Date().timeIntervalSince(busy) }
    }

    /// Whether this shard takes `job` now: its shares of the feed's concurrency and of the
    /// connections per origin, the feed's rate, then the feed's metered budget.
    private func admit(_ job: TransferJob) -> RunBoard.Admission {
        let limits = canStart(job)
        guard limits == .start else { return limits }
        switch admitUnderBudget(job) {
        case .start: return .start
        case .wait: return .wait
        case .refuse:  // waits for tomorrow's budget (the plan says so)
            summary.paused += 1
            board.emit(.paused(job.key, reason: "metered budget used", offset: job.partial?.syncedOffset ?? 0))
            return .refuse
        }
    }

    /// libcurl's multi handle failed (out of memory, an internal error): its transfers end
    /// as transient failures, retried by the usual rules.
    private func multiFailed(_ error: CurlError) {
        for transfer in Array(active.values) {
            takeOut(transfer, reusable: false)
            fail(transfer, TransferFailure(kind: .transient, message: "libcurl: \(error.message)", retryAfter: nil, discardPartial: false, httpStatus: nil))
        }
    }

    /// Takes a transfer out of the running set.
    private func deactivate(_ transfer: Transfer) {
        active[transfer.easy.id] = nil
        limiters[transfer.job.feed.name]?.leave(transfer)
    }

    /// Takes a running transfer off the multi handle and out of the running set, and ends
    /// its hold on the handle.
    private func takeOut(_ transfer: Transfer, reusable: Bool) {
        let removed = multi.remove(transfer.easy)
        deactivate(transfer)
        release(transfer, reusable: reusable && removed)
    }

    // MARK: Starting

    private func canStart(_ job: TransferJob) -> RunBoard.Admission {
        var sameFeed = 0
        var sameOrigin = 0
        let url = job.resource.url
        for transfer in active.values {
            if transfer.job.feed === job.feed { sameFeed += 1 }
            if RunBoard.sameOrigin(transfer.job.resource.url, url) { sameOrigin += 1 }
        }
        if let limiter = limiters[job.feed.name] {
            limiter.refill(now: Date().timeIntervalSince1970)
            if limiter.exhausted { return .waitFeed }  // the feed is over its rate: new transfers wait too
        }
        if sameFeed >= TransferEngine.share(job.feed.limits.concurrency, index, shards) { return .waitFeed }
        return sameOrigin < perHost ? .start : .waitOrigin
    }

    private func start(_ planned: TransferJob) {
        let job = cachedCopyIsIntact(planned) ? planned : planned.withoutCachedCopy
        let easy: CurlEasy
        do {
            easy = try idleHandle(bufferSize: Transfer.bufferSize(job, limiter: limiters[job.feed.name]))
        } catch {
            retryOrReport(job, TransferFailure(kind: .transient, message: "libcurl: \(error.message)", retryAfter: nil, discardPartial: false, httpStatus: nil),
                          transfer: nil)
            return
        }
        let name = CacheFolder.partialName(feed: job.key.feed, path: job.key.path)
        // Only a partial state.db knows of can be resumed; any other is replaced when a body begins.
        let existing = job.partial != nil ? cache.openPartial(name) : nil
        let allowance = allowances[job.feed.name]
        let transfer = Transfer(job: job, easy: easy, partialName: name, existing: existing, globalCap: config.maxSize.bytes, bootID: bootID,
                                pool: pool, limiter: limiters[job.feed.name], allowance: allowance, startWriteback: !syncsInline,
                                createFile: { [cache] in cache.createPartial(name) })
        do {
            try transfer.start(config: config, environment: environment)
            try multi.add(transfer.easy)
        } catch let error as TransferFailure {
            fail(transfer, error)
            return
        } catch {
            fail(transfer, TransferFailure(kind: .transient, message: "libcurl: \(error)", retryAfter: nil, discardPartial: false, httpStatus: nil))
            return
        }
        if let allowance, let size = job.resource.size {
            transfer.reservedBudget = max(1, size - min(size, transfer.offset))
            allowance.reserve(transfer.reservedBudget)
        }
        active[transfer.easy.id] = transfer
        limiters[job.feed.name]?.join(transfer)
        // The expected total: `size`, else a resumed partial's recorded total (its version's length).
        let total = job.resource.size ?? (transfer.offset > 0 ? job.partial?.totalLength : nil)
        board.emit(.started(job.key, url: job.resource.url.redacted, total: total, resumeAt: transfer.offset))
    }

    /// Whether the copy `job` would revalidate is still the one recorded. One cut short or
    /// overwritten since must not be kept by a 304: it is fetched whole instead.
    private func cachedCopyIsIntact(_ job: TransferJob) -> Bool {
        guard job.cachedValidators != nil, let recorded = job.cachedLength else { return true }
        return cache.finalSize(feed: job.key.feed, path: job.key.path, folders: &openFolders) == recorded
    }

    /// Easy handles of finished transfers, reused by the next ones (libcurl keeps the
    /// connection cache in the multi handle; reuse saves setting up a handle per file).
    private var idleHandles: [CurlEasy] = []

    /// An idle handle whose receive buffer has this size, else a new one.
    private func idleHandle(bufferSize: Int) throws(CurlError) -> CurlEasy {
        guard let index = idleHandles.lastIndex(where: { $0.bufferSize == bufferSize }) else { return try CurlEasy() }
        return idleHandles.remove(at: index)
    }

    /// Ends `transfer`'s hold on its handle, which the next transfer may reuse only when it
    /// is `reusable`: libcurl finished the request cleanly (an HTTP error status is clean).
    /// A handle a failure left (a lookup, a connection, TLS, a cut body, an abort), or one
    /// removed in mid-transfer, may keep state of that request; a new handle costs little.
    private func release(_ transfer: Transfer, reusable: Bool) {
        // A handle removed while paused (`max_rate`, `metered_budget`) still holds libcurl's paused state
        // (and bytes meant for its old transfer): it is freed with its transfer, not reused.
        if transfer.reservedBudget > 0 {  // a transfer of known size gives back its reservation
            allowances[transfer.job.feed.name]?.release(transfer.reservedBudget)
            transfer.reservedBudget = 0
        }
        guard reusable, !transfer.pausedForRate, !transfer.pausedForBudget, idleHandles.count < concurrency else { return }
        idleHandles.append(transfer.easy)
    }

    /// Whether `job` fits its feed's metered budget now (no budget: always).
    private func admitUnderBudget(_ job: TransferJob) -> MeteredAllowance.Admission {
        guard let allowance = allowances[job.feed.name] else { return .start }
        return allowance.admit(job.resource.size.map { $0 - min($0, job.partial?.syncedOffset ?? 0) })
    }

    /// Refills the buckets and resumes transfers paused for their feed's rate; returns how
    /// long the loop may wait for sockets before a bucket has tokens again (milliseconds).
    private func resumeRateLimited() -> Int {
        guard !limiters.isEmpty else { return 200 }
        let now = Date().timeIntervalSince1970
        for limiter in limiters.values { limiter.refill(now: now) }
        var wait = 200.0
        for transfer in Array(active.values) where transfer.pausedForRate {
            guard let limiter = limiters[transfer.job.feed.name] else { continue }
            if limiter.canTake(transfer) {
                transfer.resumeAfterRateLimit()
            } else {
                wait = min(wait, limiter.secondsUntilAvailable(for: transfer) * 1000)
            }
        }
        for limiter in limiters.values where limiter.exhausted { wait = min(wait, limiter.secondsUntilAvailable() * 1000) }
        return max(1, Int(wait.rounded(.up)))
    }

    // MARK: Finishing

    private func handleCompleted(_ completed: [(CurlEasy.ID, Int32)]) {
        for (id, code) in completed {
            guard let transfer = active[id] else { continue }
            let removed = multi.remove(transfer.easy)
            let outcome = transfer.finish(curlCode: code, maxRedirects: transfer.job.feed.limits.maxRedirects ?? config.maxRedirects)
            if case .redirect(let request) = outcome {
                do {
                    try transfer.send(request, config: config, environment: environment)
                    try multi.add(transfer.easy)
                } catch let error as TransferFailure {
                    deactivate(transfer)
                    fail(transfer, error)
                } catch {
                    deactivate(transfer)
                    fail(transfer, TransferFailure(kind: .transient, message: "libcurl: \(error)", retryAfter: nil, discardPartial: false, httpStatus: nil))
                }
                continue
            }
            deactivate(transfer)
            release(transfer, reusable: code == CurlGlobal.ok && removed)
            switch outcome {
            case .redirect:
                continue
            case .complete(let bytes, let validators, let sha256):
                complete(transfer, bytes: bytes, validators: validators, sha256: sha256)
            case .notModified(let validators):
                record { [job = transfer.job, now = clock(), clearPartial = transfer.partialRecorded] state in
                    try state.recordValidated(job.key, urlHash: job.urlHash, validators: validators, length: nil, sha256: nil,
                                              placed: false, at: now, clearPartial: clearPartial)
                }
                if transfer.file != nil || transfer.job.partial != nil { cache.removePartial(transfer.partialName) }
                attempt(transfer, outcome: "not modified", error: nil)
                summary.fresh += 1
                board.emit(.fresh(transfer.job.key))
            case .failed(let failure):
                fail(transfer, failure)
            }
        }
    }

    /// fsync, rename into place, fsync the folder, then record — in that order (SPEC §3).
    /// The fsync runs on the syncer (unless it is free), the rest back on this thread.
    private func complete(_ transfer: Transfer, bytes: UInt64, validators: Validators, sha256: String) {
        countMetered(transfer)
        guard let file = transfer.file else {
            fail(transfer, TransferFailure(kind: .transient, message: "the partial is missing", retryAfter: nil, discardPartial: true, httpStatus: nil))
            return
        }
        if syncsInline {
            // tmpfs and ramfs keep no other copy to flush: their fsync does nothing, so it is not called.
            place(transfer, bytes: bytes, validators: validators, sha256: sha256, synced: .success(()))
        } else {
            awaitingPlacement[submitSync(file)] = (transfer, bytes, validators, sha256)
        }
    }

    private func place(_ transfer: Transfer, bytes: UInt64, validators: Validators, sha256: String?, synced: Result<Void, Errno>) {
        if let failure = transfer.fileSynced(synced) {
            fail(transfer, failure)
            return
        }
        let placed = cache.place(partial: transfer.partialName, feed: transfer.job.key.feed, path: transfer.job.key.path, folders: &openFolders)
        if case .failure(let error) = placed, let failure = transfer.renamed(error.description) {
            cache.removePartial(transfer.partialName)
            retryOrReport(transfer.job, failure, transfer: transfer)  // no attempt: the exchange itself succeeded
            return
        }
        guard case .success(let (folder, createdIn)) = placed, transfer.renamed(nil) == nil else { return }
        record(placedIn: [folder] + createdIn) { [job = transfer.job, now = clock(), clearPartial = transfer.partialRecorded] state in
            try state.recordValidated(job.key, urlHash: job.urlHash, validators: validators, length: bytes, sha256: sha256,
                                      placed: true, at: now, clearPartial: clearPartial)
        }
        attempt(transfer, outcome: "placed", error: nil)
        summary.placed += 1
        board.emit(.placed(transfer.job.key, bytes: bytes, received: transfer.received, resumedAt: transfer.requestedFrom,
                           seconds: Date().timeIntervalSince(transfer.startedAt)))
    }

    /// Folders of the cache opened by placements on this shard.
    private var openFolders: [String: FileDescriptor] = [:]

    /// A transfer failed: its attempt is recorded, its partial kept (fsynced) or dropped,
    /// then `retryOrReport`.
    private func fail(_ transfer: Transfer, _ failure: TransferFailure) {
        transfer.fail(failure)
        let job = transfer.job
        countMetered(transfer)
        attempt(transfer, outcome: "failed", error: failure.message, status: failure.httpStatus)
        if failure.discardPartial || transfer.offset == 0 {
            cache.removePartial(transfer.partialName)
            record { state in try state.deletePartial(job.key) }
        } else {
            sync(transfer)
        }
        retryOrReport(job, failure, transfer: transfer)
    }

    /// What a failure means (`TransferStateMachine.afterFailure`, SPEC §5): the run pauses
    /// (a full disk), the job is retried within the run, or the failure is recorded and shown.
    private func retryOrReport(_ job: TransferJob, _ failure: TransferFailure, transfer: Transfer?) {
        let now = clock()
        let durable = transfer.flatMap { $0.syncedOffset > 0 ? $0.partialRecord(syncedOffset: $0.syncedOffset, at: now) : nil }
        let action = TransferStateMachine.afterFailure(failure, failures: job.failures, policy: job.feed.retry, durable: durable,
                                                       now: now, using: &random)
        let nextRetry: Instant?
        switch action {
        case .pauseEverything:
            summary.diskFull = true
            board.diskFull = true
            summary.paused += 1
            board.emit(.paused(job.key, reason: "disk full", offset: transfer?.syncedOffset ?? 0))
            return
        case .retry(let at, _, _, _): nextRetry = at
        case .report(let at): nextRetry = at
        }
        // A permanent error is recorded as such; exhausted attempts are failures without a next retry.
        record { state in try state.recordFailure(job.key, urlHash: job.urlHash, entry: job.entry, release: job.release,
                                                  error: failure.message, permanent: failure.kind == .permanent,
                                                  nextRetry: nextRetry, at: now) }
        if case .retry(let at, let wait, let keep, let discard) = action {
            var again = job
            again.failures = job.failures + 1
            again.notBefore = at
            if let keep {
                again.partial = keep
            } else if discard {
                again.partial = nil
            }
            board.retry(again)
            board.emit(.retrying(job.key, message: failure.message, after: wait))
            return
        }
        summary.failed += 1
        summary.failures.append((job.key, failure.message))
        board.emit(.failed(job.key, message: failure.message, retryAt: nextRetry))
    }

    // MARK: Pausing and durability

    private func pause(_ transfer: Transfer, reason: String) {
        guard transfer.pause(reason) else { return }
        takeOut(transfer, reusable: false)
        countMetered(transfer)
        sync(transfer)
        attempt(transfer, outcome: "paused", error: reason)
        summary.paused += 1
        board.emit(.paused(transfer.job.key, reason: reason, offset: transfer.syncedOffset))
    }

    /// The periodic fsync of a running transfer's partial, off the loop; the offset is
    /// recorded when it is durable (`handleSynced`).
    private func syncInBackground(_ transfer: Transfer) {
        guard !syncsInline else { return sync(transfer) }
        // What is still gathering is written first: a slow transfer's partial on disk lags
        // by one sync interval, not by a whole buffer.
        let written = transfer.settledOffset()
        guard let file = transfer.file, written > transfer.syncedOffset,
              !awaitingPartialSync.values.contains(where: { $0.transfer === transfer }) else { return }
        awaitingPartialSync[submitSync(file)] = (transfer, written, transfer.machine.epoch, transfer.partialValidators, transfer.expectedTotal)
    }

    /// fsync the partial, then record the offset: a crash never trusts unsynced bytes (FAULTS 2).
    private func sync(_ transfer: Transfer) {
        let written = transfer.settledOffset()  // after what is still gathering is written
        guard written > 0, written != transfer.syncedOffset else { return }
        guard let file = transfer.file, case .success = file.sync(),
              transfer.noteSynced(written, epoch: transfer.machine.epoch, validators: transfer.partialValidators) else { return }
        let partial = transfer.partialRecord(syncedOffset: transfer.syncedOffset, at: clock())
        record { [key = transfer.job.key] state in try state.recordPartial(key, partial) }
    }

    /// Commits the record of every body that began since the last loop and may come to hold
    /// 1 MiB (or continues a recorded partial), then lets those paused for it go on: a
    /// `kill -9` from then on loses nothing the kernel accepted (SPEC §5). One commit for
    /// all of them; a body that stays small is never waited for. A record that cannot be
    /// committed fails its transfer (a full disk pauses the run), so no partial grows
    /// beyond 1 MiB that a later run could not trust.
    private func recordNewPartials() {
        guard active.values.contains(where: \.needsRecord) else { return }  // the common case: no allocation
        let starting = active.values.filter(\.needsRecord)
        let now = clock()
        for transfer in starting {
            let partial = transfer.takeRecord(at: now)
            record { [key = transfer.job.key] state in try state.recordPartial(key, partial) }
        }
        let failure = commit(force: true)
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
    private func countMetered(_ transfer: Transfer) {
        let new = transfer.received - transfer.counted
        transfer.counted = transfer.received
        summary.bodyBytes += new
        guard metered, new > 0 else { return }
        let day = LocalDay.label(clock(), clock: ZoneClock(transfer.job.feed.timeZone))
        record { state in try state.addMeteredBytes(MeteredDay(feed: transfer.job.feed.name, day: day), new) }
    }

    private func attempt(_ transfer: Transfer, outcome: String, error: String?, status: Int? = nil) {
        record { [key = transfer.job.key, startedAt = Instant(transfer.startedAt), now = clock(),
                  bytes = transfer.received] state in
            try state.recordAttempt(key, startedAt: startedAt, finishedAt: now, bytes: bytes, httpStatus: status, outcome: outcome, error: error)
        }
    }

    /// State writes made since the last `commit`, handed to the board together (one lock
    /// for a loop's worth of outcomes, not one per write).
    private var writes: [RunBoard.StateWrite] = []

    private func record(placedIn folders: [FileDescriptor] = [], _ body: @escaping (StateStore) throws -> Void) {
        writes.append(RunBoard.StateWrite(placedIn: folders, body: body))
    }

    /// Passes the writes on; the board commits them when its transaction is due (or now).
    /// Returns why a commit made now failed, if it did.
    @discardableResult
    private func commit(force: Bool) -> (any Error)? {
        let failure = board.write(writes, force: force)
        writes.removeAll(keepingCapacity: true)
        return failure
    }
}
