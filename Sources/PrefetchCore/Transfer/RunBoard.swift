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
    init(jobs: [TransferJob], state: StateStore, syncsFolders: Bool, shards: Int,
         pauseReason: @escaping (Feed) -> String?, onEvent: @escaping (RunEvent) -> Void) {
        queue = jobs
        taken = [Bool](repeating: false, count: jobs.count)
        var seen: Set<String> = []
        feeds = jobs.compactMap { seen.insert($0.feed.name).inserted ? $0.feed : nil }
        self.pauseReason = pauseReason
        self.state = state
        self.syncsFolders = syncsFolders
        self.onEvent = onEvent
        progressByShard = [[TransferProgress]](repeating: [], count: shards)
    }

    // MARK: The queue

    private let queueLock = NSLock()
    private var queue: [TransferJob]
    /// Started (or dropped) jobs are marked, not removed, so a long queue is never shifted.
    private var taken: [Bool]
    private var head = 0
    /// Every feed with jobs in this run, asked about pausing.
    private let feeds: [JobFeed]
    private let pauseReason: (Feed) -> String?
    private var stopped: [String: String] = [:]
    private var lastPauseCheck = Date.distantPast
    private var diskFullFlag = false

    enum Admission {
        case start
        /// Not now (a limit of the shard's); the job keeps its place.
        case wait
        /// Not in this run (`admit` has said why).
        case refuse
    }

    /// The first queued job, in plan order, that is due and that `admit` takes (the
    /// calling shard's limits).
    func next(now: Int64, admit: (TransferJob) -> Admission) -> TransferJob? {
        queueLock.lock()
        defer { queueLock.unlock() }
        var index = head
        while index < queue.count {
            defer { index += 1 }
            guard !taken[index] else { continue }
            let job = queue[index]
            if stopped[job.feed.name] != nil {
                taken[index] = true
                continue
            }
            guard job.notBefore <= now else { continue }
            switch admit(job) {
            case .start:
                taken[index] = true
                advanceHead()
                return job
            case .refuse:
                taken[index] = true
            case .wait:
                break
            }
        }
        advanceHead()
        return nil
    }

    private func advanceHead() {
        while head < queue.count, taken[head] { head += 1 }
    }

    /// A retry within this run, queued after everything else.
    func retry(_ job: TransferJob) {
        queueLock.lock()
        queue.append(job)
        taken.append(false)
        queueLock.unlock()
    }

    /// Nothing is left to start (retries included).
    var drained: Bool {
        queueLock.lock()
        defer { queueLock.unlock() }
        return head >= queue.count
    }

    /// The feeds paused in this run, with why. `pauseReason` is asked for each feed at most
    /// every 2 s, by whichever shard comes by first; a paused feed stays paused.
    func stoppedFeeds(now: Date) -> [String: String] {
        queueLock.lock()
        defer { queueLock.unlock() }
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
        let placedIn: FileDescriptor?
        let body: (StateStore) throws -> Void
    }

    /// Runs a shard's state writes in the open transaction, opening one if none is, then
    /// commits once the transaction is `commitInterval` old (or now, with `force`): group
    /// commit, one for the many files that end together, whichever shard ended them. Before
    /// the commit, the folders that received files are fsynced; a crash before it loses only
    /// the records, and the next run fetches or revalidates those files again. Writes that
    /// fail are reported once; the run goes on (the files are the truth).
    func write(_ writes: [StateWrite], force: Bool) {
        stateLock.lock()
        defer { stateLock.unlock() }
        if !writes.isEmpty && !inTransaction {
            do {
                try state.begin()
                inTransaction = true
                transactionSince = Date()
            } catch {
                reportStateError(error)
            }
        }
        for write in writes {
            if let folder = write.placedIn { placedFolders[ObjectIdentifier(folder)] = folder }
            do { try write.body(state) } catch { reportStateError(error) }
        }
        guard inTransaction, force || Date().timeIntervalSince(transactionSince) >= Self.commitInterval else { return }
        if syncsFolders { for folder in placedFolders.values { _ = folder.sync() } }
        placedFolders = [:]
        inTransaction = false
        do { try state.commit() } catch { reportStateError(error) }
    }

    private func reportStateError(_ error: any Error) {
        guard !stateError else { return }
        stateError = true
        emit(.failed(ResourceKey(feed: "", path: ""), message: "cannot record state: \(error)", retryAt: nil))
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
        case .placed(let key, _, _), .fresh(let key), .paused(let key, _, _), .retrying(let key, _, _), .failed(let key, _, _):
            if progressByShard.count > 1 {
                for shard in progressByShard.indices { progressByShard[shard].removeAll { $0.key == key } }
            }
        case .started, .progress: break
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
