import Foundation

/// What the threads of one engine run share (`TransferEngine`, `EngineShard`): the job
/// queue in plan order, the feeds paused in this run, the disk-full flag, state.db's group
/// commit, and the event stream. Limits are not counted here: each shard keeps within its
/// share of every one of them (`TransferEngine.share`).
///
/// Each part has its own lock, held only for bookkeeping, never while a shard waits for the
/// network. The queue and state locks may take the event lock (`admit` and a failed write
/// emit events) and nothing else; the event lock takes none.
final class RunBoard: @unchecked Sendable {
    /// `holds`: the origins state.db says are held; one whose hold has ended is probed by
    /// one request before any other of its resources starts.
    init(jobs: [TransferJob], state: StateStore, syncsFolders: Bool, shards: Int, faults: FaultPoints = .none, holds: [String: OriginHold] = [:],
         pauseReason: @escaping (Feed) -> String?, onEvent: @escaping (RunEvent) -> Void) {
        self.holds = OriginHolds(recorded: holds)
        queue = jobs
        taken = [Bool](repeating: false, count: jobs.count)
        left = jobs.count
        self.pauseReason = pauseReason
        self.state = state
        self.syncsFolders = syncsFolders
        self.faults = faults
        self.onEvent = onEvent
        progressByShard = [[TransferProgress]](repeating: [], count: shards)
        for index in jobs.indices { enqueue(index) }
    }

    // MARK: The queue

    private let queueLock = NSLock()
    /// Every job in plan order, retries appended; started or dropped ones are marked, not
    /// removed, so a long queue is never shifted.
    private var queue: [TransferJob]
    private var taken: [Bool]
    private var left: Int
    /// Each feed's jobs (indices into `queue`, in plan order) and the first not taken: a
    /// feed at its limit is passed over at once, however many jobs it has waiting. A run of
    /// consecutive jobs on one origin is jumped at once when that origin's share is full
    /// (`runEnd`: for each job, where the next origin's jobs begin; `Int.max` while the last
    /// run is still open).
    private struct FeedQueue {
        let feed: JobFeed
        var jobs: [Int] = []
        var runEnd: [Int] = []
        var runStart = 0
        var head = 0
    }
    private var feedQueues: [FeedQueue] = []
    private var feedIndex: [ObjectIdentifier: Int] = [:]
    /// Within a feed, how many jobs or runs of one origin a call looks past (held back by
    /// `admit`, or retries not yet due) before it leaves the rest of that feed to the next
    /// call: the cost of a call stays bounded however long the queue.
    static let scanLimit = 256
    /// Every feed with jobs in this run, asked about pausing.
    private var feeds: [JobFeed] { feedQueues.map(\.feed) }
    private let pauseReason: (Feed) -> String?
    private var stopped: [String: String] = [:]
    private var lastPauseCheck = Date.distantPast
    private var diskFullFlag = false

    enum Admission {
        case start
        /// Not now (a limit that this job alone meets, such as a budget); the job keeps its
        /// place and later jobs of its feed are still asked about.
        case wait
        /// Not now, and no other job on this job's origin either (the origin's share).
        case waitOrigin
        /// Not now, and no other job of this feed either (the feed's share, its rate).
        case waitFeed
        /// Not in this run (`admit` has said why).
        case refuse
    }

    private func enqueue(_ index: Int) {
        let feed = queue[index].feed
        let key = ObjectIdentifier(feed)
        if feedIndex[key] == nil {
            feedIndex[key] = feedQueues.count
            feedQueues.append(FeedQueue(feed: feed))
        }
        let f = feedIndex[key]!
        if let last = feedQueues[f].jobs.last, !Self.sameOrigin(queue[last].url, queue[index].url) {
            let end = feedQueues[f].jobs.count
            for position in feedQueues[f].runStart..<end { feedQueues[f].runEnd[position] = end }
            feedQueues[f].runStart = end
        }
        feedQueues[f].jobs.append(index)
        feedQueues[f].runEnd.append(Int.max)
    }

    static func sameOrigin(_ a: ResourceURL, _ b: ResourceURL) -> Bool {
        a.port == b.port && a.host == b.host && a.scheme == b.scheme
    }

    /// The first queued job, in plan order, that is due and that `admit` takes (the
    /// calling shard's limits). Each feed is looked at from its first job not taken, and no
    /// further than a job that comes after the best found so far.
    func next(now: Instant, admit: (TransferJob) -> Admission) -> TransferJob? {
        queueLock.lock()
        defer { queueLock.unlock() }
        var best: Int?  // the job to start: its index in `queue`
        for f in feedQueues.indices {
            var position = feedQueues[f].head
            let jobs = feedQueues[f].jobs
            while position < jobs.count, taken[jobs[position]] { position += 1 }
            feedQueues[f].head = position
            if stopped[feedQueues[f].feed.name] != nil {  // a paused feed's jobs are dropped
                for index in jobs[position...] where !taken[index] { take(index) }
                feedQueues[f].head = jobs.count
                continue
            }
            var passed = 0
            scan: while position < jobs.count, passed < Self.scanLimit {
                let index = jobs[position]
                position += 1
                if let best, index > best { break }  // plan order: it cannot come first
                guard !taken[index] else { continue }
                guard queue[index].notBefore <= now else {
                    passed += 1
                    continue
                }
                // Nothing starts after its resource expired (a retry may have waited past it).
                if let expires = queue[index].resource.expires, expires <= now {
                    take(index)
                    continue
                }
                // A retry starts only if its feed may still transfer now: the periodic check
                // (every 2 s) may not have seen its window close, or a condition go, yet.
                if queue[index].notBefore != .distantPast, let reason = pauseReason(feedQueues[f].feed.feed) {
                    stopped[feedQueues[f].feed.name] = reason
                    for later in jobs[(position - 1)...] where !taken[later] {
                        take(later)
                        // A retry that will not start now is paused, its partial kept.
                        if queue[later].notBefore != .distantPast {
                            emit(.paused(queue[later].key, reason: reason, partial: queue[later].partial.map { .kept($0.syncedOffset) } ?? .none,
                                         refusedResume: queue[later].refusedResume))
                        }
                    }
                    feedQueues[f].head = jobs.count
                    break scan
                }
                if let pass = queue[index].mirrorPass, pass.isFresh {
                    // SPEC §8: the first URL of its pass whose origin is not held. (Later in
                    // a pass, the URL `FailureReporter` chose is asked as a job's one URL.)
                    switch pass.next({ holds.admission(of: queue[index].resource.url(at: $0).origin, now: now) }) {
                    case .request(let url):
                        if url != queue[index].urlIndex { queue[index] = queue[index].at(url) }
                    case .held(let url):  // every URL held for the rest of the run: counted with the first's hold
                        holds.countHeld(queue[index].resource.url(at: url).origin, queue[index].key)
                        take(index)
                        continue
                    case .wait, .over:
                        passed += 1
                        continue
                    }
                } else {
                    switch holds.admission(queue[index], now: now) {
                    case .go: break
                    case .held:  // held for the rest of the run: not requested, counted once
                        take(index)
                        continue
                    case .wait:  // one request probes the origin, the others wait for its answer
                        passed += 1
                        position = max(position, min(feedQueues[f].runEnd[position - 1], jobs.count))
                        continue
                    }
                }
                switch admit(queue[index]) {
                case .start:
                    best = index
                    break scan
                case .refuse:
                    take(index)
                case .wait:
                    passed += 1
                case .waitOrigin:
                    passed += 1
                    position = max(position, min(feedQueues[f].runEnd[position - 1], jobs.count))
                case .waitFeed:
                    break scan
                }
            }
        }
        guard let best else { return nil }
        take(best)
        holds.started(queue[best])
        return queue[best]
    }

    // MARK: Held origins (SPEC §6): `OriginHolds`, under the queue's lock

    private var holds = OriginHolds()

    /// See `OriginHolds.hold`.
    func holdOrigin(_ origin: String, cause: String, retryAfter: Int64?, policy: RetryPolicy, startedAt: Instant, now: Instant,
                    failed key: ResourceKey, counted: Bool = true,
                    using random: inout some RandomNumberGenerator) -> (hold: OriginHold, wait: Int64, forTheRun: Bool) {
        queueLock.lock()
        defer { queueLock.unlock() }
        return holds.hold(origin, cause: cause, retryAfter: retryAfter, policy: policy, startedAt: startedAt, now: now, failed: key,
                          counted: counted, using: &random)
    }

    /// A resource with mirrors (SPEC §8) whose request to its current URL failed: where its
    /// pass goes next, given the holds now (`MirrorOrder.next`).
    func nextURL(_ job: TransferJob, now: Instant) -> MirrorOrder.Choice {
        queueLock.lock()
        defer { queueLock.unlock() }
        guard let pass = job.mirrorPass else { return .over }
        return pass.next { holds.admission(of: job.resource.url(at: $0).origin, now: now) }
    }

    /// Why listed URL `index` of `job` is held now ("origin held: HTTP 503"), nil when not.
    func heldCause(_ job: TransferJob, _ index: Int, now: Instant) -> String? {
        queueLock.lock()
        defer { queueLock.unlock() }
        return holds.cause(of: job.resource.url(at: index).origin, now: now).map { "origin held: " + $0 }
    }

    /// Whether every listed URL of `job` is held for the rest of the run; then it is
    /// counted with its first URL's hold, and that hold's end is returned.
    func heldForTheRun(_ job: TransferJob, first: Int, now: Instant) -> Instant? {
        queueLock.lock()
        defer { queueLock.unlock() }
        for index in 0..<job.resource.urlCount where holds.admission(of: job.resource.url(at: index).origin, now: now) != .held {
            return nil
        }
        let origin = job.resource.url(at: first).origin
        holds.countHeld(origin, job.key)
        return holds.until(of: origin)
    }

    /// See `OriginHolds.holdForTheRun`.
    func holdForTheRun(_ origin: String) {
        queueLock.lock()
        holds.holdForTheRun(origin)
        queueLock.unlock()
    }

    /// See `OriginHolds.transferEnded`.
    func transferEnded(origin: String, answered: Bool) -> Bool {
        queueLock.lock()
        defer { queueLock.unlock() }
        return holds.transferEnded(origin: origin, answered: answered)
    }

    /// See `OriginHolds.probeEnded`.
    func probeEnded(_ url: ResourceURL) {
        queueLock.lock()
        holds.probeEnded(url)
        queueLock.unlock()
    }

    /// The origins held at the end of the run, each with the resources held with it.
    func heldOrigins() -> [(origin: String, reason: String, until: Instant, resources: Set<ResourceKey>)] {
        queueLock.lock()
        defer { queueLock.unlock() }
        return holds.held()
    }

    private func take(_ index: Int) {
        taken[index] = true
        left -= 1
    }

    /// A retry within this run, queued after everything else.
    func retry(_ job: TransferJob) {
        queueLock.lock()
        queue.append(job)
        taken.append(false)
        left += 1
        enqueue(queue.count - 1)
        queueLock.unlock()
    }

    /// Nothing is left to start (retries included).
    var drained: Bool {
        queueLock.lock()
        defer { queueLock.unlock() }
        return left == 0
    }

    /// The feeds paused in this run, with why. A feed whose window ends by `clock` (the run's
    /// clock) is paused at once; `pauseReason` (conditions, and the window as it sees it) is
    /// asked for each feed at most every 2 s, by whichever shard comes by first; a paused feed
    /// stays paused.
    func stoppedFeeds(now: Date, clock: Instant) -> [String: String] {
        queueLock.lock()
        defer { queueLock.unlock() }
        for feed in feeds where stopped[feed.name] == nil {
            if let end = feed.windowEnd, end <= clock { stopped[feed.name] = "window closed" }
        }
        if now.timeIntervalSince(lastPauseCheck) >= 2 {
            lastPauseCheck = now
            for feed in feeds where stopped[feed.name] == nil {
                if let reason = pauseReason(feed.feed) { stopped[feed.name] = reason }
            }
        }
        return stopped
    }

    /// Set when a write finds the disk full: every shard pauses its transfers.
    var diskFull: Bool {
        get { queueLock.lock(); defer { queueLock.unlock() }; return diskFullFlag }
        set { queueLock.lock(); diskFullFlag = newValue; queueLock.unlock() }
    }

    // MARK: state.db

    private let stateLock = NSLock()
    private let state: StateStore
    private let syncsFolders: Bool
    private let faults: FaultPoints
    private var inTransaction = false
    private var transactionSince = Date()
    /// Folders that received files since the last commit, fsynced once each before it: the
    /// rename is durable before state.db says the file is there.
    private var placedFolders: [ObjectIdentifier: FileDescriptor] = [:]
    private var stateError = false
    private static let commitInterval = 0.1

    /// One state write, and the folder a file was just renamed into for it (fsynced before
    /// the commit that records the file).
    struct StateWrite {
        let placedIn: [FileDescriptor]
        let body: (StateStore) throws -> Void
    }

    /// Runs a shard's state writes in the open transaction, opening one if none is, then
    /// commits once the transaction is `commitInterval` old (or now, with `force`): group
    /// commit, one for the many files that end together, whichever shard ended them. Before
    /// the commit, the folders that received files are fsynced; a crash before it loses only
    /// the records, and the next run fetches or revalidates those files again. Writes that
    /// fail are reported once; the run goes on (the files are the truth). Returns the first
    /// error of these writes, or of the commit when it was due (nil: all of them landed).
    @discardableResult
    func write(_ writes: [StateWrite], force: Bool) -> (any Error)? {
        stateLock.lock()
        defer { stateLock.unlock() }
        var failure: (any Error)?
        if !writes.isEmpty && !inTransaction {
            do {
                try state.begin()
                inTransaction = true
                transactionSince = Date()
            } catch {
                reportStateError(error)
                failure = failure ?? error
            }
        }
        for write in writes {
            for folder in write.placedIn { placedFolders[ObjectIdentifier(folder)] = folder }
            do { try write.body(state) } catch {
                reportStateError(error)
                failure = failure ?? error
            }
        }
        guard inTransaction, force || Date().timeIntervalSince(transactionSince) >= Self.commitInterval else { return failure }
        let folders = placedFolders.values
        placedFolders = [:]
        inTransaction = false
        // A placement is recorded only once its folder is durable: a folder that cannot be
        // fsynced rolls the whole batch back (the next run revalidates or fetches those files
        // again, never trusting a record whose file a power cut may undo).
        var unsynced: Errno?
        if syncsFolders, !folders.isEmpty {
            unsynced = faults.reach(.folderFsync)
            for folder in folders where unsynced == nil {
                if case .failure(let error) = folder.sync() { unsynced = error }
            }
        }
        do {
            if let unsynced {
                state.rollback()
                throw CacheError.cannotWrite("a cache folder", "fsync: \(unsynced)")
            }
            if let injected = faults.reach(.commit) {
                state.rollback()
                throw SQLiteError(code: injected.code == ENOSPC ? 13 : 10, message: "commit: \(injected)")
            }
            try state.commit()
        } catch {
            reportStateError(error)
            failure = failure ?? error
        }
        return failure
    }

    private func reportStateError(_ error: any Error) {
        guard !stateError else { return }
        stateError = true
        emit(.stateError("cannot record state: \(error)"))
    }

    // MARK: Events

    private let eventLock = NSLock()
    private let onEvent: (RunEvent) -> Void
    private var progressByShard: [[TransferProgress]]

    /// Passes an event on, one at a time whichever thread it comes from.
    func emit(_ event: RunEvent) {
        eventLock.lock()
        defer { eventLock.unlock() }
        switch event {  // a transfer that ended leaves the progress lines at once, not at its shard's next tick
        case .placed(let key, _, _, _, _, _), .fresh(let key), .paused(let key, _, _, _), .retrying(let key, _, _), .failed(let key, _, _, _),
             .heldWithOrigin(let key, _, _, _, _), .nextURL(let key, _, _):
            if progressByShard.count > 1 {
                for shard in progressByShard.indices { progressByShard[shard].removeAll { $0.key == key } }
            }
        case .started, .progress, .stateError, .held, .removedForRoom, .placedFromCache, .sourceMismatch, .placedByDelta, .deltaNotUsed: break
        }
        onEvent(event)
    }

    /// One shard's running transfers; the event carries every shard's, by path.
    func progress(shard: Int, _ transfers: [TransferProgress]) {
        eventLock.lock()
        defer { eventLock.unlock() }
        progressByShard[shard] = transfers
        let all = progressByShard.count == 1 ? transfers : progressByShard.flatMap { $0 }
        onEvent(.progress(all.sorted { $0.key.path < $1.key.path }))
    }
}
