import Foundation

/// One thread's part of a run (`TransferEngine`): its own libcurl multi handle and the
/// transfers on it, within its share of the connection limits. It takes jobs from the
/// `RunBoard`, and writes state and sends events through it.
final class EngineShard: @unchecked Sendable {
    let board: RunBoard
    let cache: CacheFolder
    private let config: Config
    private let environment: [String: String]
    let clock: () -> Instant
    /// This boot's id, recorded with every partial.
    private let bootID: String
    /// The run's body buffers.
    private let pool: BufferPool
    /// What each failure becomes: a retry, a hold, a pause, a final failure.
    private var failures: FailureReporter
    private let multi: CurlMulti
    private let limits: ShardLimits
    var active: [CurlEasy.ID: Transfer] = [:]
    private var handles: HandlePool
    let syncs: PendingSyncs
    var ledger: ShardLedger
    /// Folders of the cache opened by placements on this shard.
    private var openFolders: [String: FileDescriptor] = [:]
    var summary = EngineSummary()
    /// Feeds whose metered bytes count toward their budget.
    let metered: Bool
    /// Crash tests' faults at `partial-record`, `file-fsync` and `rename`.
    let faults: FaultPoints
    /// When the clocks were last looked at (monotonic nanoseconds).
    private var lastClockCheck: UInt64 = 0
    /// The room left under `max_cache_size` (SPEC §8), shared by the run's shards; nil: no cap.
    private let cacheAllowance: CacheAllowance?

    init(multi: CurlMulti, limits: ShardLimits, board: RunBoard, cache: CacheFolder, config: Config, environment: [String: String],
         metered: Bool, pool: BufferPool, bootID: String, faults: FaultPoints, cacheAllowance: CacheAllowance? = nil,
         clock: @escaping () -> Instant) {
        self.cacheAllowance = cacheAllowance
        self.faults = faults
        self.multi = multi
        self.limits = limits
        self.board = board
        self.cache = cache
        self.config = config
        self.environment = environment
        self.metered = metered
        self.pool = pool
        self.bootID = bootID
        self.clock = clock
        handles = HandlePool(capacity: limits.concurrency)
        syncs = PendingSyncs(inline: cache.syncIsFree, waker: multi.waker, faults: faults)
        ledger = ShardLedger(board: board)
        failures = FailureReporter(board: board)
    }

    /// Complete files may wait for fsync only up to this many; then new transfers wait (each holds a descriptor).
    private var placementBacklog: Int { max(32, 2 * limits.concurrency) }

    /// Everything that ended since the last loop. Its state writes join the board's
    /// transaction, committed at most `RunBoard.commitInterval` later (group commit).
    private func finishBatch(completed: [(CurlEasy.ID, Int32)]) {
        let synced = syncs.takeFinished()
        handleCompleted(completed)
        handleSynced(synced)
        ledger.commit(force: false)
    }

    /// Continues what waited for an fsync: placements, and partial offsets to record.
    private func handleSynced(_ finished: [PendingSyncs.Finished]) {
        for done in finished {
            switch done {
            case .placement(let waiting, let result):
                place(waiting.transfer, bytes: waiting.bytes, validators: waiting.validators, sha256: waiting.sha256, synced: result)
            case .partial(let partial, let result):
                let transfer = partial.transfer
                // Only for a transfer still running: one that ended has recorded its own outcome.
                guard active[transfer.easy.id] === transfer else { continue }
                if case .failure(let error) = result {
                    // A later fsync may succeed although these pages were dropped: the partial
                    // is not trusted again, and the transfer is retried from the start.
                    takeOut(transfer, reusable: false)
                    fail(transfer, .fsyncFailed(error))
                    continue
                }
                guard transfer.noteSynced(partial.offset, epoch: partial.epoch, validators: partial.validators) else { continue }
                ledger.partial(transfer.job.key, transfer.partialRecord(syncedOffset: partial.offset, validators: partial.validators,
                                                                        total: partial.total, at: clock()))
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
            while active.count < limits.concurrency, syncs.placementCount < placementBacklog,
                  let job = board.next(now: now, admit: admit) {
                start(job)
            }
            if active.isEmpty {
                if !syncs.isEmpty {
                    syncs.waitForAny(seconds: 0.2)
                    finishBatch(completed: [])
                    continue
                }
                ledger.commit(force: true)  // nothing running: record what ended before waiting or returning
                if let busy = busySince { summary.transferSeconds += Date().timeIntervalSince(busy); busySince = nil }
                if board.drained { break }
                // Waiting for a retry within the run, a capped feed's bucket to refill, or
                // a feed's running transfers on other shards.
                Thread.sleep(forTimeInterval: limits.idleWait())
                continue
            }
            if busySince == nil { busySince = Date() }
            do {
                _ = try multi.perform()
            } catch {
                multiFailed(error)
            }
            checkClocks()  // after a perform, so a request just (re)added has been started
            finishBatch(completed: multi.completed())
            recordNewPartials()
            if limits.hasBudgets {
                for transfer in Array(active.values) where transfer.pausedForBudget { pause(transfer, reason: "metered budget used") }
            }
            if cacheAllowance != nil {
                for transfer in Array(active.values) where transfer.pausedForCacheFull { pause(transfer, reason: "cache full") }
            }
            if !active.isEmpty {
                do {
                    try multi.poll(milliseconds: limits.resumeRateLimited(active.values))
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
                board.progress(shard: limits.index, active.values.map(\.progress))
            }
        }
        // Complete files still waiting for their fsync are placed (also when stopping: they are verified).
        while !syncs.isEmpty {
            syncs.waitForAny(seconds: 0.2)
            finishBatch(completed: [])
        }
        ledger.commit(force: true)
        syncs.shutDown()
        if let busy = busySince { summary.transferSeconds += Date().timeIntervalSince(busy) }
    }

    /// Whether this shard takes `job` now: its shares of the feed's concurrency and of the
    /// connections per origin, the feed's rate, then the feed's metered budget.
    private func admit(_ job: TransferJob) -> RunBoard.Admission {
        let admission = limits.canStart(job, beside: active.values)
        guard admission == .start else { return admission }
        switch limits.admitUnderBudget(job) {
        case .start: return .start
        case .wait: return .wait
        case .refuse:  // waits for tomorrow's budget (the plan says so)
            summary.count(.paused, feed: job.feed.name)
            board.emit(.paused(job.key, reason: "metered budget used", partial: job.partial.map { .kept($0.syncedOffset) } ?? .none,
                               refusedResume: job.refusedResume))
            return .refuse
        }
    }

    /// libcurl's multi handle failed (out of memory, an internal error): its transfers end
    /// as transient failures, retried by the usual rules.
    private func multiFailed(_ error: CurlError) {
        for transfer in Array(active.values) {
            takeOut(transfer, reusable: false)
            fail(transfer, .libcurl(error))
        }
    }

    /// Takes a transfer out of the running set.
    private func deactivate(_ transfer: Transfer) {
        active[transfer.easy.id] = nil
        limits.left(transfer)
    }

    /// Takes a running transfer off the multi handle and out of the running set, and ends
    /// its hold on the handle.
    func takeOut(_ transfer: Transfer, reusable: Bool) {
        let removed = multi.remove(transfer.easy)
        deactivate(transfer)
        release(transfer, reusable: reusable && removed)
    }

    // MARK: Starting

    private func start(_ planned: TransferJob) {
        var job = cachedCopyIsIntact(planned) ? planned : planned.withoutCachedCopy
        // A partial that cannot resume (§7's one rule) is discarded when it is found: the
        // file starts from zero, and no record of it is left behind.
        if let partial = job.partial,
           !ResumeRule.judge(partial.response, sha256Given: job.resource.sha256 != nil, encoding: job.resource.encoding,
                             atAnotherURL: partial.servedBy != job.urlKey).isResumable {
            cache.removePartial(CacheFolder.partialName(feed: job.key.feed, path: job.key.path))
            ledger.partialRemoved(job.key)
            job.partial = nil
        }
        let easy: CurlEasy
        do {
            easy = try handles.take(bufferSize: Transfer.bufferSize(job, limiter: limits.limiter(job.feed.name)))
        } catch {
            board.probeEnded(job.url)  // never reached its origin
            retryOrReport(job, .libcurl(error), transfer: nil)
            return
        }
        let name = CacheFolder.partialName(feed: job.key.feed, path: job.key.path)
        // Only a partial state.db knows of can be resumed; any other is replaced when a body begins.
        let existing = job.partial != nil ? cache.openPartial(name) : nil
        let transfer = Transfer(job: job, easy: easy, partialName: name, existing: existing, globalCap: config.maxSize.bytes, bootID: bootID,
                                pool: pool, limiter: limits.limiter(job.feed.name), allowance: limits.allowance(job.feed.name), startWriteback: !syncs.inline, faults: faults,
                                cacheAllowance: cacheAllowance, createFile: { [cache] in cache.createPartial(name) })
        do {
            try transfer.start(config: config, environment: environment)
            try multi.add(transfer.easy)
        } catch let error as TransferFailure {
            board.probeEnded(job.url)  // never reached its origin
            fail(transfer, error)
            return
        } catch {
            board.probeEnded(job.url)
            fail(transfer, .libcurl(error))
            return
        }
        active[transfer.easy.id] = transfer
        limits.started(transfer)
        // The expected total: `size`, else a resumed partial's recorded total (its version's length).
        let total = job.resource.size ?? (transfer.offset > 0 ? job.partial?.totalLength : nil)
        board.emit(.started(job.key, url: job.url.redacted, total: total, resumeAt: transfer.offset))
    }

    /// Whether the copy `job` would revalidate is still the one recorded. One cut short or
    /// overwritten since must not be kept by a 304: it is fetched whole instead.
    private func cachedCopyIsIntact(_ job: TransferJob) -> Bool {
        guard job.cachedValidators != nil, let recorded = job.cachedLength else { return true }
        return cache.finalSize(feed: job.key.feed, path: job.key.path, folders: &openFolders) == recorded
    }

    /// Ends `transfer`'s hold on its handle and on its budget; the handle is kept for the
    /// next transfer only when libcurl finished the request cleanly (`reusable`) and it was
    /// not paused (a handle removed while paused still holds libcurl's paused state).
    private func release(_ transfer: Transfer, reusable: Bool) {
        limits.released(transfer)
        guard reusable, !transfer.pausedForRate, !transfer.pausedForBudget, !transfer.pausedForCacheFull else { return }
        handles.give(transfer.easy)
    }

    // MARK: Finishing

    private func handleCompleted(_ completed: [(CurlEasy.ID, Int32)]) {
        for (id, code) in completed {
            guard let transfer = active[id] else { continue }
            exchangeEnded(transfer, curlCode: code)
        }
    }

    /// A running transfer's exchange ended with libcurl's `curlCode` (or the engine ended it:
    /// it is taken off the multi handle here): what it means is carried out.
    private func exchangeEnded(_ transfer: Transfer, curlCode code: Int32) {
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
                fail(transfer, .libcurl(error))
            }
            return
        }
        deactivate(transfer)
        release(transfer, reusable: code == CurlGlobal.ok && removed)
        defer { originAnswered(transfer, outcome) }
        switch outcome {
        case .redirect:
            return
        case .complete(let bytes, let validators, let sha256):
            complete(transfer, bytes: bytes, validators: validators, sha256: sha256)
        case .notModified(let validators):
            ledger.validated(transfer, validators: validators, length: nil, sha256: nil, placedIn: nil, response: nil, at: clock())
            if transfer.file != nil || transfer.job.partial != nil { cache.removePartial(transfer.partialName) }
            attempt(transfer, outcome: "not modified", error: nil)
            summary.count(.fresh, feed: transfer.job.feed.name)
            summary.changedFeeds.insert(transfer.job.feed.name)
            board.emit(.fresh(transfer.job.key))
        case .failed(let failure):
            fail(transfer, failure)
        }
    }

    /// Whether the origin answered: any whole, valid HTTP response but 429/502/503/504 ends
    /// its hold (in the run and in state.db); a request that got none, or an invalid one
    /// (SPEC §7), lets the next one probe.
    private func originAnswered(_ transfer: Transfer, _ outcome: TransferOutcome) {
        var answered = transfer.machine.originAnswered
        if case .failed(let failure) = outcome, failure.holdsOrigin != nil || failure.invalidResponse { answered = false }
        let origin = transfer.job.url.origin
        if board.transferEnded(origin: origin, answered: answered) { ledger.originCleared(origin) }
    }

    /// fsync, rename into place, fsync the folder, then record — in that order (SPEC §3).
    /// The fsync runs on the syncer (unless it is free), the rest back on this thread.
    private func complete(_ transfer: Transfer, bytes: UInt64, validators: Validators, sha256: String) {
        countMetered(transfer)
        guard let file = transfer.file else {
            fail(transfer, TransferFailure(kind: .transient, message: "the partial is missing", retryAfter: nil, discardPartial: true, httpStatus: nil))
            return
        }
        // The file itself must hold exactly the verified body: never more (old bytes left at
        // its end), never less (a write that did not land). One fstat per file.
        switch file.status() {
        case .success(let info) where UInt64(info.st_size) == bytes: transfer.completeFile = FileIdentity(info)
        case .success(let info):
            return fail(transfer, TransferFailure(kind: .transient, message: "the partial holds \(info.st_size) bytes, not the body's \(bytes)",
                                                  retryAfter: nil, discardPartial: true, httpStatus: nil))
        case .failure(let error):
            return fail(transfer, TransferFailure(kind: .transient, message: "cannot read the partial's size: \(error)", retryAfter: nil,
                                                  discardPartial: true, httpStatus: nil))
        }
        if syncs.inline {
            // tmpfs and ramfs keep no other copy to flush: their fsync does nothing, so it is not called.
            place(transfer, bytes: bytes, validators: validators, sha256: sha256, synced: faults.reach(.fileFsync).map { .failure($0) } ?? .success(()))
        } else {
            syncs.awaitPlacement(file, .init(transfer: transfer, bytes: bytes, validators: validators, sha256: sha256))
        }
    }

    private func place(_ transfer: Transfer, bytes: UInt64, validators: Validators, sha256: String?, synced: Result<Void, Errno>) {
        if let failure = transfer.fileSynced(synced) {
            fail(transfer, failure)
            return
        }
        let placed = faults.reach(.rename).map { .failure(.failed("\(cache.path)/\(transfer.job.key.feed)/\(transfer.job.key.path)", $0)) }
            ?? cache.place(partial: transfer.partialName, feed: transfer.job.key.feed, path: transfer.job.key.path, folders: &openFolders)
        if case .failure(let error) = placed, let failure = transfer.renamed(error) {
            cache.removePartial(transfer.partialName)
            retryOrReport(transfer.job, failure, transfer: transfer)  // no attempt: the exchange itself succeeded
            return
        }
        guard case .success(let (folder, createdIn)) = placed, transfer.renamed(nil) == nil else { return }
        ledger.validated(transfer, validators: validators, length: bytes, sha256: sha256, placedIn: [folder] + createdIn,
                         response: transfer.lastResponse, at: clock())
        if let sha1 = transfer.bodySHA1 { ledger.record { [key = transfer.job.key] state in try state.recordCopySHA1(key, sha1) } }
        attempt(transfer, outcome: "placed", error: nil)
        summary.count(.placed, feed: transfer.job.feed.name)
        summary.changedFeeds.insert(transfer.job.feed.name)
        board.emit(.placed(transfer.job.key, bytes: bytes, received: transfer.received, resumedAt: transfer.requestedFrom,
                           seconds: Date().timeIntervalSince(transfer.startedAt), refusedResume: transfer.refusedResume))
    }

    /// A transfer failed: its attempt is recorded, its partial kept (fsynced) when it can
    /// resume, else dropped, then `retryOrReport`.
    func fail(_ transfer: Transfer, _ failure: TransferFailure) {
        transfer.fail(failure)
        var job = transfer.job
        job.cacheAdmitted = transfer.cacheRoomHeld  // a retry keeps the room this attempt took (SPEC §8)
        countMetered(transfer)
        attempt(transfer, outcome: "failed", error: failure.message, status: failure.httpStatus)
        recordResponse(transfer)
        if failure.discardPartial || transfer.offset == 0 {
            cache.removePartial(transfer.partialName)
            ledger.partialRemoved(job.key)
        } else if case .restart(let obstacle) = transfer.resumeVerdict {
            // Not resumable (§7): its bytes are never kept for a resume that cannot happen.
            let bytes = transfer.offset
            cache.removePartial(transfer.partialName)
            ledger.partialRemoved(job.key)
            return retryOrReport(job, failure, transfer: transfer, discarded: (bytes, obstacle.description))
        } else {
            sync(transfer)
        }
        retryOrReport(job, failure, transfer: transfer)
    }

    /// The resource's last 2xx response, when this transfer had one (§6's deadline rule).
    func recordResponse(_ transfer: Transfer) {
        guard let response = transfer.lastResponse else { return }
        ledger.response(transfer.job, response, length: transfer.expectedTotal, at: clock())
    }

    /// What a failure means (`FailureReporter`): the run pauses, the job is retried within
    /// the run, or the failure is recorded and shown. `discarded`: the partial's bytes
    /// thrown away because it cannot resume, and why.
    private func retryOrReport(_ job: TransferJob, _ failure: TransferFailure, transfer: Transfer?,
                               discarded: (bytes: UInt64, why: String)? = nil) {
        failures.report(job, failure, transfer: transfer, discarded: discarded, now: clock(), ledger: &ledger, summary: &summary)
    }

    /// The head and stall clocks of the running transfers (SPEC §7), looked at every 50 ms:
    /// a head not whole within `response_timeout` of the send fails its transfer (and holds
    /// its origin); a body under 1 KiB/s for `stall_timeout` fails it (resumable); an error
    /// page read so slowly ends its exchange, which its status judges.
    private func checkClocks() {
        let nanoseconds = Clock.monotonicNanoseconds()
        guard nanoseconds >= lastClockCheck + 50_000_000 else { return }
        lastClockCheck = nanoseconds
        let now = Double(nanoseconds) / 1e9
        var ended: [(Transfer, Transfer.ClockEnd)] = []
        for transfer in active.values {
            if let end = transfer.checkClocks(now: now) { ended.append((transfer, end)) }
        }
        for (transfer, end) in ended {
            switch end {
            case .failed(let failure):
                takeOut(transfer, reusable: false)
                fail(transfer, failure)
                originAnswered(transfer, .failed(failure))
            case .dropStalled:
                // Its head said what it is (a 404, a redirect): the unwritten body is not waited for.
                exchangeEnded(transfer, curlCode: CurlGlobal.writeError)
            }
        }
    }
}
