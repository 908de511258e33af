import Foundation

/// What a run reports as it goes (rendered as log lines, progress bars or JSON).
enum RunEvent {
    case started(ResourceKey, url: String, total: UInt64?, resumeAt: UInt64)
    case progress([TransferProgress])
    case placed(ResourceKey, bytes: UInt64, seconds: Double)
    case fresh(ResourceKey)
    case paused(ResourceKey, reason: String, offset: UInt64)
    case retrying(ResourceKey, message: String, after: Int64)
    case failed(ResourceKey, message: String, retryAt: Int64?)
}

/// One active transfer's figures for a progress line.
struct TransferProgress {
    let key: ResourceKey
    let bytes: UInt64
    let total: UInt64?
    let rate: Double
}

/// Totals of one engine run.
struct EngineSummary {
    var placed = 0
    var fresh = 0
    var failed = 0
    var paused = 0
    var bodyBytes: UInt64 = 0
    var transferSeconds: Double = 0
    var diskFull = false
    var failures: [(ResourceKey, String)] = []
}

/// Runs transfers on one libcurl multi handle, one thread, within the limits of SPEC §5;
/// writes every outcome to state.db as it happens.
final class TransferEngine {
    private let cache: CacheFolder
    private let state: StateStore
    private let config: Config
    private let environment: [String: String]
    private let clock: () -> Int64
    private let onEvent: (RunEvent) -> Void
    private let multi: CurlMulti
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    private var summary = EngineSummary()
    /// Feeds whose metered bytes count toward their budget.
    private let metered: Bool
    private let meteredUsedToday: [String: UInt64]
    /// Each budgeted feed's allowance for this run, when the link is metered.
    private var allowances: [String: MeteredAllowance] = [:]

    /// `meteredUsedToday`: per feed, bytes already moved over metered links today (state.db),
    /// for `metered_budget` when `metered`.
    init(cache: CacheFolder, state: StateStore, config: Config, environment: [String: String], metered: Bool,
         meteredUsedToday: [String: UInt64] = [:], clock: @escaping () -> Int64, onEvent: @escaping (RunEvent) -> Void) {
        self.meteredUsedToday = meteredUsedToday
        _ = CurlGlobal.initialized
        self.cache = cache
        self.state = state
        self.config = config
        self.environment = environment
        self.metered = metered
        self.clock = clock
        self.onEvent = onEvent
        multi = CurlMulti(totalConnections: config.concurrency, perHost: config.perHost)
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
    private var awaitingPartialSync: [Int: (transfer: Transfer, offset: UInt64, validators: Validators, total: UInt64?)] = [:]
    /// Complete files may wait for fsync only up to this many; then new transfers wait (each holds a descriptor).
    private var placementBacklog: Int { max(32, 2 * config.concurrency) }

    private func submitSync(_ file: FileDescriptor) -> Int {
        nextSyncID += 1
        syncer.submit(id: nextSyncID, file: file)
        return nextSyncID
    }

    /// Everything that ended since the last loop. Its state writes join a transaction that
    /// is committed at most `commitInterval` later (group commit: one commit per many files).
    private func finishBatch(completed: [(UnsafeMutableRawPointer, Int32)]) {
        let synced = syncsInline ? [] : syncer.takeFinished()
        if !completed.isEmpty || !synced.isEmpty {
            if !inTransaction {
                record {
                    try state.begin()
                    inTransaction = true
                    transactionSince = Date()
                }
            }
            handleCompleted(completed)
            handleSynced(synced)
        }
        commit(force: false)
    }

    /// Whether state writes are gathering in an open transaction, and since when.
    private var inTransaction = false
    private var transactionSince = Date()
    private static let commitInterval = 0.1

    /// Commits the open transaction once it is `commitInterval` old (or now, with `force`),
    /// after fsyncing the folders that received files: the renames are durable before
    /// state.db says the files are there. A crash before the commit loses only the record,
    /// and the next run fetches or revalidates those files again.
    private func commit(force: Bool) {
        guard inTransaction, force || Date().timeIntervalSince(transactionSince) >= Self.commitInterval else { return }
        syncPlacedFolders()
        inTransaction = false
        record { try state.commit() }
    }

    /// Continues what waited for an fsync: placements, and partial offsets to record.
    private func handleSynced(_ finished: [Syncer.Finished]) {
        for done in finished {
            if let waiting = awaitingPlacement.removeValue(forKey: done.id) {
                place(waiting.transfer, bytes: waiting.bytes, validators: waiting.validators, sha256: waiting.sha256, synced: done.result)
            } else if let partial = awaitingPartialSync.removeValue(forKey: done.id) {
                let transfer = partial.transfer
                // Only for a transfer still running: one that ended has recorded its own outcome.
                guard case .success = done.result, active[transfer.easy.handle] === transfer, partial.offset > transfer.syncedOffset,
                      partial.validators == transfer.partialValidators else { continue }
                transfer.syncedOffset = partial.offset
                transfer.partialRecorded = true
                record { try state.recordPartial(transfer.job.key, PartialState(
                    urlHash: transfer.job.urlHash, validators: partial.validators, totalLength: partial.total,
                    syncedOffset: partial.offset, updatedAt: clock())) }
            }
        }
    }

    /// Runs `jobs` in order. `pauseReason(feed)` is asked every few seconds (window closed,
    /// condition lost); `stopRequested` every loop (a signal).
    func run(_ jobs: [TransferJob], pauseReason: (Feed) -> String?, stopRequested: () -> Bool) -> EngineSummary {
        let now = Date().timeIntervalSince1970
        for job in jobs where limiters[job.feed.name] == nil {
            if let rate = job.feed.limits.maxRate { limiters[job.feed.name] = RateLimiter(bytesPerSecond: rate.bytes, now: now) }
        }
        if metered {
            for job in jobs where allowances[job.feed.name] == nil {
                guard let budget = job.feed.conditions.meteredBudget else { continue }
                allowances[job.feed.name] = MeteredAllowance(budget: budget.bytes, usedToday: meteredUsedToday[job.feed.name] ?? 0)
            }
        }
        var queue = jobs
        var lastCheck = Date.distantPast
        var lastSync = Date()
        var lastProgress = Date.distantPast
        var busySince: Date?
        var stoppedFeeds: [String: String] = [:]
        var taken = [Bool](repeating: false, count: queue.count)
        var head = 0
        while true {
            let retries = takeRetries()
            if !retries.isEmpty {  // appending nothing would still copy the whole queue once
                queue += retries
                taken += [Bool](repeating: false, count: retries.count)
            }
            if stopRequested() || summary.diskFull {
                let reason = summary.diskFull ? "disk full" : "stopped"
                for transfer in Array(active.values) { pause(transfer, reason: reason) }
                break
            }
            if Date().timeIntervalSince(lastCheck) >= 2 {
                lastCheck = Date()
                var feeds: [String: JobFeed] = [:]
                for job in queue { feeds[job.feed.name] = job.feed }
                for transfer in active.values { feeds[transfer.job.feed.name] = transfer.job.feed }
                for feed in feeds.values {
                    guard let reason = pauseReason(feed.feed) else { continue }
                    stoppedFeeds[feed.name] = reason
                    for transfer in Array(active.values) where transfer.job.feed.name == feed.name { pause(transfer, reason: reason) }
                }
                for i in queue.indices where !taken[i] && stoppedFeeds[queue[i].feed.name] != nil { taken[i] = true }
            }
            let now = clock()
            // Jobs start in plan order; a job held back by a limit keeps its place. Started
            // jobs are marked, not removed, so a long queue is never shifted.
            var index = head
            while index < queue.count, active.count < config.concurrency, awaitingPlacement.count < placementBacklog {
                if !taken[index], queue[index].notBefore <= now, canStart(queue[index]) {
                    switch admitUnderBudget(queue[index]) {
                    case .start:
                        taken[index] = true
                        start(queue[index])
                    case .wait:
                        break
                    case .refuse:
                        taken[index] = true  // waits for tomorrow's budget (the plan says so)
                        summary.paused += 1
                        onEvent(.paused(queue[index].key, reason: "metered budget used", offset: queue[index].partial?.syncedOffset ?? 0))
                    }
                }
                index += 1
            }
            while head < queue.count, taken[head] { head += 1 }
            if active.isEmpty {
                if !awaitingPlacement.isEmpty || !awaitingPartialSync.isEmpty {
                    syncer.waitForAny(seconds: 0.2)
                    finishBatch(completed: [])
                    continue
                }
                commit(force: true)  // nothing running: record what ended before waiting or returning
                if let busy = busySince { summary.transferSeconds += Date().timeIntervalSince(busy); busySince = nil }
                if head >= queue.count && pendingRetries.isEmpty { break }
                // Waiting for a retry within the run, or for a capped feed's bucket to refill.
                let limited = limiters.values.filter(\.exhausted).map(\.secondsUntilAvailable).min() ?? 0.2
                Thread.sleep(forTimeInterval: min(0.2, max(0.001, limited)))
                continue
            }
            if busySince == nil { busySince = Date() }
            _ = multi.perform()
            finishBatch(completed: multi.completed())
            if !allowances.isEmpty {
                for transfer in Array(active.values) where transfer.pausedForBudget { pause(transfer, reason: "metered budget used") }
            }
            if !active.isEmpty { multi.poll(milliseconds: resumeRateLimited()) }
            if Date().timeIntervalSince(lastSync) >= 2 {
                lastSync = Date()
                for transfer in active.values { syncInBackground(transfer) }
            }
            if Date().timeIntervalSince(lastProgress) >= 0.25 {
                lastProgress = Date()
                onEvent(.progress(active.values.map { transfer in
                    let seconds = max(0.001, Date().timeIntervalSince(transfer.startedAt))
                    return TransferProgress(key: transfer.job.key, bytes: transfer.offset, total: transfer.expectedTotal ?? transfer.job.resource.size,
                                            rate: Double(transfer.received) / seconds)
                }.sorted { $0.key.path < $1.key.path }))
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
        return summary
    }

    // MARK: Starting

    private func canStart(_ job: TransferJob) -> Bool {
        var sameFeed = 0
        var sameOrigin = 0
        let url = job.resource.url
        for transfer in active.values {
            if transfer.job.feed.name == job.feed.name { sameFeed += 1 }
            let other = transfer.job.resource.url
            if other.port == url.port && other.host == url.host && other.scheme == url.scheme { sameOrigin += 1 }
        }
        if let limiter = limiters[job.feed.name] {
            limiter.refill(now: Date().timeIntervalSince1970)
            if limiter.exhausted { return false }  // the feed is over its rate: new transfers wait too
        }
        return sameFeed < job.feed.limits.concurrency && sameOrigin < config.perHost
    }

    private func start(_ job: TransferJob) {
        let name = CacheFolder.partialName(feed: job.key.feed, path: job.key.path)
        // Only a partial state.db knows of can be resumed; any other is replaced when a body begins.
        let existing = job.partial != nil ? cache.openPartial(name) : nil
        let allowance = allowances[job.feed.name]
        let transfer = Transfer(job: job, easy: idleHandles.popLast() ?? CurlEasy(), partialName: name, existing: existing,
                                globalCap: config.maxSize.bytes, limiter: limiters[job.feed.name], allowance: allowance, startWriteback: !syncsInline,
                                createFile: { [cache] in cache.createPartial(name) })
        do {
            try transfer.configure(config: config, environment: environment)
        } catch {
            fail(job, error, transfer: transfer)
            return
        }
        if let allowance, let size = job.resource.size {
            transfer.reservedBudget = max(1, size - min(size, transfer.offset))
            allowance.reserve(transfer.reservedBudget)
        }
        active[transfer.easy.handle] = transfer
        multi.add(transfer.easy)
        onEvent(.started(job.key, url: job.resource.url.redacted, total: job.resource.size, resumeAt: transfer.offset))
    }

    /// Easy handles of finished transfers, reused by the next ones (libcurl keeps the
    /// connection cache in the multi handle; reuse saves setting up a handle per file).
    private var idleHandles: [CurlEasy] = []

    private func release(_ transfer: Transfer) {
        // A handle removed while paused (`max_rate`, `metered_budget`) still holds libcurl's paused state
        // (and bytes meant for its old transfer): it is freed with its transfer, not reused.
        if transfer.reservedBudget > 0 {  // a transfer of known size gives back its reservation
            allowances[transfer.job.feed.name]?.release(transfer.reservedBudget)
            transfer.reservedBudget = 0
        }
        guard !transfer.pausedForRate, !transfer.pausedForBudget, idleHandles.count < config.concurrency else { return }
        idleHandles.append(transfer.easy)
    }

    /// Whether `job` fits its feed's metered budget now (no budget: always).
    private func admitUnderBudget(_ job: TransferJob) -> MeteredAllowance.Admission {
        guard let allowance = allowances[job.feed.name] else { return .start }
        return allowance.admit(job.resource.size.map { $0 - min($0, job.partial?.syncedOffset ?? 0) })
    }

    /// Each capped feed's token bucket (`max_rate`), shared by its transfers.
    private var limiters: [String: RateLimiter] = [:]

    /// Refills the buckets and resumes transfers paused for their feed's rate; returns how
    /// long the loop may wait for sockets before a bucket has tokens again (milliseconds).
    private func resumeRateLimited() -> Int {
        guard !limiters.isEmpty else { return 200 }
        let now = Date().timeIntervalSince1970
        for limiter in limiters.values { limiter.refill(now: now) }
        var wait = 200.0
        for transfer in Array(active.values) where transfer.pausedForRate {
            guard let limiter = limiters[transfer.job.feed.name] else { continue }
            if limiter.exhausted {
                wait = min(wait, limiter.secondsUntilAvailable * 1000)
            } else {
                transfer.resumeAfterRateLimit()
            }
        }
        for limiter in limiters.values where limiter.exhausted { wait = min(wait, limiter.secondsUntilAvailable * 1000) }
        return max(1, Int(wait.rounded(.up)))
    }

    // MARK: Finishing

    private func handleCompleted(_ completed: [(UnsafeMutableRawPointer, Int32)]) {
        for (handle, code) in completed {
            guard let transfer = active[handle] else { continue }
            multi.remove(transfer.easy)
            let outcome = transfer.finish(curlCode: code, maxRedirects: transfer.job.feed.limits.maxRedirects ?? config.maxRedirects)
            if case .redirect = outcome {} else { release(transfer) }
            switch outcome {
            case .redirect:
                do {
                    try transfer.configure(config: config, environment: environment)
                    multi.add(transfer.easy)
                } catch {
                    active[handle] = nil
                    fail(transfer.job, error, transfer: transfer)
                }
                continue
            case .complete(let bytes, let validators, let sha256):
                active[handle] = nil
                complete(transfer, bytes: bytes, validators: validators, sha256: sha256)
            case .notModified(let validators):
                active[handle] = nil
                record { try state.recordValidated(transfer.job.key, urlHash: transfer.job.urlHash, validators: validators,
                                                   length: nil, sha256: nil, placed: false, at: clock(),
                                                   clearPartial: transfer.partialRecorded) }
                if transfer.file != nil || transfer.job.partial != nil { cache.removePartial(transfer.partialName) }
                attempt(transfer, outcome: "not modified", error: nil)
                summary.fresh += 1
                onEvent(.fresh(transfer.job.key))
            case .failed(let failure):
                active[handle] = nil
                fail(transfer.job, failure, transfer: transfer)
            }
        }
    }

    /// fsync, rename into place, fsync the folder, then record — in that order (SPEC §3).
    /// The fsync runs on the syncer (unless it is free), the rest back on this thread.
    private func complete(_ transfer: Transfer, bytes: UInt64, validators: Validators, sha256: String?) {
        countMetered(transfer)
        guard let file = transfer.file else {
            fail(transfer.job, TransferFailure(kind: .transient, message: "the partial is missing", retryAfter: nil, discardPartial: true, httpStatus: nil),
                 transfer: transfer)
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
        if case .failure(let error) = synced {
            fail(transfer.job, TransferFailure(kind: .transient, message: "fsync: \(error)", retryAfter: nil, discardPartial: false, httpStatus: nil),
                 transfer: transfer)
            return
        }
        switch cache.place(partial: transfer.partialName, feed: transfer.job.key.feed, path: transfer.job.key.path, folders: &openFolders) {
        case .failure(let error):
            cache.removePartial(transfer.partialName)
            fail(transfer.job, TransferFailure(kind: .permanent, message: error.description, retryAfter: nil, discardPartial: true, httpStatus: nil),
                 transfer: nil)
        case .success(let folder):
            placedFolders[ObjectIdentifier(folder)] = folder  // one descriptor per folder (`openFolders`)
            record { try state.recordValidated(transfer.job.key, urlHash: transfer.job.urlHash, validators: validators,
                                               length: bytes, sha256: sha256, placed: true, at: clock(),
                                               clearPartial: transfer.partialRecorded) }
            attempt(transfer, outcome: "placed", error: nil)
            summary.placed += 1
            onEvent(.placed(transfer.job.key, bytes: bytes, seconds: Date().timeIntervalSince(transfer.startedAt)))
        }
    }

    /// Folders of the cache opened by placements in this run.
    private var openFolders: [String: FileDescriptor] = [:]

    /// Folders that received files since the last commit, fsynced once each before it: the
    /// rename is durable before state says the file is there.
    private var placedFolders: [ObjectIdentifier: FileDescriptor] = [:]

    private func syncPlacedFolders() {
        if !syncsInline { for folder in placedFolders.values { _ = folder.sync() } }
        placedFolders = [:]
    }

    /// Records a failure, keeps or drops the partial, and decides on a retry (SPEC §5).
    private func fail(_ job: TransferJob, _ failure: TransferFailure, transfer: Transfer?) {
        if let transfer {
            countMetered(transfer)
            attempt(transfer, outcome: "failed", error: failure.message, status: failure.httpStatus)
            if failure.discardPartial || transfer.offset == 0 {
                cache.removePartial(transfer.partialName)
                record { try state.deletePartial(job.key) }
            } else {
                sync(transfer)
            }
        }
        let now = clock()
        switch failure.kind {
        case .diskFull:
            summary.diskFull = true
            summary.paused += 1
            onEvent(.paused(job.key, reason: "disk full", offset: transfer?.syncedOffset ?? 0))
            return
        case .permanent:
            record { try state.recordFailure(job.key, urlHash: job.urlHash, release: job.release, error: failure.message,
                                             permanent: true, nextRetry: nil, at: now) }
            report(job, failure.message, retryAt: nil)
        case .mismatch, .transient:
            let failures = job.failures + 1
            let exhausted = failures >= job.feed.retry.attempts
            var wait = failure.retryAfter.map { min($0, job.feed.retry.maxBackoff.seconds) } ?? Self.backoff(failures, job.feed.retry)
            if failure.discardPartial && failure.kind == .transient && transfer != nil && failure.httpStatus == 416 { wait = 0 }
            let retryAt = exhausted ? nil : now + wait
            record { try state.recordFailure(job.key, urlHash: job.urlHash, release: job.release, error: failure.message,
                                             permanent: false, nextRetry: retryAt, at: now) }
            if failure.kind == .transient, !exhausted, wait <= 60, let retryAt {
                var again = job
                again.failures = failures
                again.notBefore = retryAt
                // FAULTS 4: the retry keeps the good bytes (curl's --retry throws them away).
                if let transfer, !failure.discardPartial, transfer.syncedOffset > 0 {
                    again.partial = PartialState(urlHash: job.urlHash, validators: transfer.partialValidators,
                                                 totalLength: transfer.expectedTotal, syncedOffset: transfer.syncedOffset, updatedAt: now)
                } else if failure.discardPartial {
                    again.partial = nil
                }
                pendingRetries.append(again)
                onEvent(.retrying(job.key, message: failure.message, after: wait))
                return
            }
            report(job, failure.message, retryAt: retryAt)
        }
    }

    private func report(_ job: TransferJob, _ message: String, retryAt: Int64?) {
        summary.failed += 1
        summary.failures.append((job.key, message))
        onEvent(.failed(job.key, message: message, retryAt: retryAt))
    }

    /// Retries due within this run, picked up by `run`'s queue.
    private var pendingRetries: [TransferJob] = []

    func takeRetries() -> [TransferJob] {
        defer { pendingRetries = [] }
        return pendingRetries
    }

    /// Exponential backoff with jitter: `backoff · 2^(n-1)`, capped, then a uniform draw
    /// from its upper half so a fleet does not retry in step.
    static func backoff(_ failures: Int, _ policy: RetryPolicy) -> Int64 {
        let base = Double(policy.backoff.seconds) * pow(2, Double(max(0, failures - 1)))
        let capped = min(base, Double(policy.maxBackoff.seconds))
        return Int64((capped * Double.random(in: 0.5...1.0)).rounded(.up))
    }

    // MARK: Pausing and durability

    private func pause(_ transfer: Transfer, reason: String) {
        multi.remove(transfer.easy)
        active[transfer.easy.handle] = nil
        release(transfer)
        countMetered(transfer)
        sync(transfer)
        attempt(transfer, outcome: "paused", error: reason)
        summary.paused += 1
        onEvent(.paused(transfer.job.key, reason: reason, offset: transfer.syncedOffset))
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
        awaitingPartialSync[submitSync(file)] = (transfer, written, transfer.partialValidators, transfer.expectedTotal)
    }

    /// fsync the partial, then record the offset: a crash never trusts unsynced bytes (FAULTS 2).
    private func sync(_ transfer: Transfer) {
        let written = transfer.settledOffset()  // after what is still gathering is written
        guard written > 0, written != transfer.syncedOffset else { return }
        guard let file = transfer.file, case .success = file.sync() else { return }
        transfer.syncedOffset = written
        transfer.partialRecorded = true
        record { try state.recordPartial(transfer.job.key, PartialState(
            urlHash: transfer.job.urlHash, validators: transfer.partialValidators, totalLength: transfer.expectedTotal,
            syncedOffset: transfer.syncedOffset, updatedAt: clock())) }
    }

    /// Counts the bytes a transfer received since it was last counted (run totals, metered budget).
    private func countMetered(_ transfer: Transfer) {
        let new = transfer.received - transfer.counted
        transfer.counted = transfer.received
        summary.bodyBytes += new
        guard metered, new > 0 else { return }
        let day = Planner.localDay(clock(), clock: ZoneClock(transfer.job.feed.timeZone))
        record { try state.addMeteredBytes(MeteredDay(feed: transfer.job.feed.name, day: day), new) }
    }

    private func attempt(_ transfer: Transfer, outcome: String, error: String?, status: Int? = nil) {
        record { try state.recordAttempt(transfer.job.key, startedAt: Int64(transfer.startedAt.timeIntervalSince1970),
                                         finishedAt: clock(), bytes: transfer.received, httpStatus: status,
                                         outcome: outcome, error: error) }
    }

    /// State writes that fail are reported once; the run goes on (the files are the truth).
    private var stateError: String?

    private func record(_ body: () throws -> Void) {
        do {
            try body()
        } catch {
            if stateError == nil {
                stateError = "\(error)"
                onEvent(.failed(ResourceKey(feed: "", path: ""), message: "cannot record state: \(error)", retryAt: nil))
            }
        }
    }
}
