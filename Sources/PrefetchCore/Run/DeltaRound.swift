import Foundation

/// The deltas of a pass (SPEC §9 "Deltas (zsync)"): each zsync resource with a seed runs its
/// `DeltaTransfer` here, one at a time, after the pass's whole transfers (which never wait on
/// a scan); what it ends in is recorded and said. The delta's own trouble hands the job back
/// for one whole fetch in the same pass (`wholeFetches`), with one `delta not used` line.
struct DeltaRound {
    let cache: CacheFolder
    let state: StateStore
    let config: Config
    let environment: [String: String]
    let clock: () -> Instant
    let report: (RunEvent) -> Void
    /// Whether the pass's link is metered: the bytes a delta moves count toward its feed's day.
    var metered = false
    /// Faults a test asks for (`delta-write`).
    var faults = FaultPoints.none
    /// What is left of a feed's metered budget today when the round begins (nil: none applies).
    var budgetLeft: (Feed) -> UInt64? = { _ in nil }
    /// The bytes this round's deltas moved, by feed.
    private var spent: [String: UInt64] = [:]
    /// Origins held (SPEC §6): state.db's when the round begins, and those its deltas' 429,
    /// 502, 503 and 504 hold, as the engine's transfers do.
    private var holds = OriginHolds()
    var recordedHolds: [String: OriginHold] = [:] {
        didSet { holds = OriginHolds(recorded: recordedHolds) }
    }
    private(set) var summary = EngineSummary()
    /// The jobs to fetch whole in this pass.
    private(set) var wholeFetches: [TransferJob] = []
    private var random = SplitMix64(seed: UInt64.random(in: 0...UInt64.max))
    /// The SHA-1 of the control file a delta used at a URL that failed, by resource: at the
    /// next URL of its pass it goes on only with a control file of the same SHA-1 (SPEC §9).
    private var movedSHA1: [ResourceKey: String] = [:]

    init(cache: CacheFolder, state: StateStore, config: Config, environment: [String: String], clock: @escaping () -> Instant,
         report: @escaping (RunEvent) -> Void) {
        self.cache = cache
        self.state = state
        self.config = config
        self.environment = environment
        self.clock = clock
        self.report = report
    }

    /// Whether `job` tries a delta: its entry has a control file and an effective `encoding`
    /// of `refuse`, it has a seed (its cached copy, or a delta partial a run kept), and its
    /// delta was not refused in this release (its own trouble: then it is fetched whole).
    static func tries(_ job: TransferJob, in cache: CacheFolder, state: StateStore) -> Bool {
        guard job.resource.triesDelta else { return false }
        var folders: [String: FileDescriptor] = [:]
        guard cache.finalSize(feed: job.key.feed, path: job.key.path, folders: &folders) != nil
            || cache.partialFile(CacheLayout.deltaName(feed: job.key.feed, path: job.key.path)) != nil else { return false }
        return (try? state.deltaRefused(job.key)) != job.release
    }

    /// The jobs handed back for a whole fetch since the last call (none once the disk is
    /// full: those pause, as every transfer of the run).
    mutating func takeWholeFetches() -> [TransferJob] {
        defer { wholeFetches = [] }
        if summary.diskFull {
            for job in wholeFetches { pause(job, "disk full") }
            return []
        }
        return wholeFetches
    }

    /// Runs the deltas of `jobs` in order. `pauseReason` says why a feed must pause now (its
    /// window closed, a condition lost); `stopRequested`, a signal.
    mutating func run(_ jobs: [TransferJob], pauseReason: @escaping (Feed) -> String?, stopRequested: @escaping () -> Bool) {
        for var job in jobs {
            if stopRequested() || summary.diskFull {
                pause(job, summary.diskFull ? "disk full" : "stopped")
                continue
            }
            while admitted(&job, stopRequested: stopRequested), let retry = runOne(job, pauseReason: pauseReason, stopRequested: stopRequested) {
                job = retry
            }
            movedSHA1[job.key] = nil  // a moved job held or paused before its next URL was asked
        }
        // One line per origin still held, counting its resources (SPEC §6).
        for held in holds.held() {
            report(.held(origin: held.origin, reason: held.reason, until: held.until, resources: held.resources.count))
            summary.held += held.resources.count
            summary.failedHeld += held.resources.count
        }
    }

    /// Whether `job` may go now, and to which of its URLs (SPEC §8: a pass asks the first
    /// listed URL whose origin is not held; `job` is moved there). A hold that ends within the
    /// run is waited for (a stop still looked at); when every URL is held beyond it, the job
    /// is counted held with the first one's origin.
    private mutating func admitted(_ job: inout TransferJob, stopRequested: () -> Bool) -> Bool {
        while true {
            let now = clock()
            var choice: MirrorOrder.Choice
            if let pass = job.mirrorPass {
                let resource = job.resource
                choice = pass.next { admission(of: resource.url(at: $0).origin, now: now) }
            } else {
                switch admission(of: job.url.origin, now: now) {
                case .go: choice = .request(job.urlIndex)
                case .wait: choice = .wait
                case .held: choice = .held(job.urlIndex)
                }
            }
            // A pass moved on by a failure whose URLs left are all held now: held with the first's origin.
            if case .over = choice { choice = .held(job.mirrorPass?.order[0] ?? job.urlIndex) }
            switch choice {
            case .request(let index):
                if index != job.urlIndex { job = job.at(index) }
                return true
            case .held(let index):
                let origin = job.resource.url(at: index).origin
                holds.countHeld(origin, job.key)
                summary.count(.failed, feed: job.feed.name)
                summary.failures.append((job.key, holds.cause(of: origin, now: now) ?? "origin held"))
                return false
            case .wait, .over:
                if stopRequested() {
                    pause(job, "stopped")
                    return false
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
    }

    /// What `origin`'s hold allows now. One that outlasts what a run waits (a hold an earlier
    /// round of the pass recorded) holds for the rest of it: it is never waited for.
    private func admission(of origin: String, now: Instant) -> MirrorOrder.Admission {
        let admission = holds.admission(of: origin, now: now)
        if admission == .wait, let until = holds.until(of: origin), until.seconds - now.seconds > RetryDecision.inRunLimit { return .held }
        return admission
    }

    /// One delta; returns the job again when it is to be retried in this run (after its wait).
    private mutating func runOne(_ job: TransferJob, pauseReason: @escaping (Feed) -> String?, stopRequested: @escaping () -> Bool) -> TransferJob? {
        let feed = job.feed.feed
        let started = Date(), startedAt = clock()
        var delta = DeltaTransfer(job: job, cache: cache, state: state, config: config, environment: environment) {
            stopRequested() ? "stopped" : pauseReason(feed)
        }
        delta.budget = budgetLeft(feed).map { left in left - min(left, spent[feed.name] ?? 0) }
        delta.faults = faults
        delta.movedWith = movedSHA1.removeValue(forKey: job.key)
        let outcome = delta.run()
        let wire = delta.wireBytes
        spent[feed.name, default: 0] += wire
        // A 200 to a range request: the delta was not used, and its body is the whole fetch (SPEC §9).
        if let refused = delta.refusal {
            record { try $0.recordDeltaRefused(job.key, release: job.release) }  // no delta again in this release
            report(.deltaNotUsed(job.key, reason: refused.reason, detail: refused.detail))
        }
        summary.countBody(wire, feed: feed.name)
        record { try $0.addMeteredBytesIf(metered, feed: feed, bytes: wire, at: startedAt) }
        switch outcome {
        case .placed, .fresh:  // the origin answered: its hold ends (SPEC §6)
            if holds.transferEnded(origin: job.url.origin, answered: true) { record { try $0.clearOrigin(job.url.origin) } }
        default: break
        }
        switch outcome {
        case .placed(let placed):
            placedFile(job, placed, wire: wire, started: started, startedAt: startedAt)
        case .fresh:
            record {
                try $0.recordValidated(job.key, urlHash: job.urlHash, validators: job.cachedValidators ?? Validators(), length: nil, sha256: nil,
                                       placed: false, encoding: job.resource.encoding, at: self.clock(), clearPartial: job.partial != nil,
                                       answeredBy: job.answeringURL)
                try $0.recordAttempt(job.key, startedAt: startedAt, finishedAt: self.clock(), bytes: wire, httpStatus: nil,
                                     outcome: "not modified (control file)", error: nil)
            }
            summary.count(.fresh, feed: feed.name)
            summary.changedFeeds.insert(feed.name)
            report(.fresh(job.key))
        case .wholeFetch(let refusal):
            record { try $0.recordDeltaRefused(job.key, release: job.release) }  // no delta again in this release
            report(.deltaNotUsed(job.key, reason: refusal.reason, detail: refusal.detail))
            wholeFetches.append(job)
        case .interrupted(let reason):
            pause(job, reason)
        case .failed where delta.diskFull:  // as a transfer: the run pauses, the next one resumes (SPEC §7)
            summary.diskFull = true
            pause(job, "disk full")
        case .failed(let failure):
            // The SHA-1 the delta must find at the next URL: its control file's here, else the one it came with.
            let retry = failed(job, failure, deltaSHA1: delta.control?.sha1 ?? delta.movedWith, wire: wire, startedAt: startedAt,
                               stopRequested: stopRequested)
            // A delta refused in this release (a 200's whole body that failed) is not tried again: its next try is whole.
            if let retry, delta.refusal != nil {
                wholeFetches.append(retry)
                return nil
            }
            return retry
        }
        return nil
    }

    private mutating func placedFile(_ job: TransferJob, _ placed: DeltaTransfer.Placed, wire: UInt64, started: Date, startedAt: Instant) {
        if !cache.syncIsFree, placed.folders.contains(where: { !$0.sync().isSuccess }) {
            report(.stateError("cannot fsync a folder of the cache: \(job.key.feed)/\(job.key.path) is not recorded"))
            return
        }
        let recorded = record {
            try $0.recordValidated(job.key, urlHash: job.urlHash, validators: placed.validators, length: placed.length,
                                   sha256: job.resource.sha256, placed: true, encoding: job.resource.encoding, at: self.clock(),
                                   clearPartial: job.partial != nil, answeredBy: job.answeringURL, file: placed.identity,
                                   keepingReplaced: job.feed.feed.consistency == .release)
            try $0.recordCopySHA1(job.key, placed.sha1)
            try $0.recordAttempt(job.key, startedAt: startedAt, finishedAt: self.clock(), bytes: wire, httpStatus: 206,
                                 outcome: "placed (delta)", error: nil)
        }
        guard recorded else { return }
        if job.partial != nil { cache.removePartial(CacheLayout.partialName(feed: job.key.feed, path: job.key.path)) }
        let feed = job.feed.name
        summary.count(.placed, feed: feed)
        summary.byFeed[feed, default: FeedTally()].deltaReusedBytes += placed.reused
        summary.changedFeeds.insert(feed)
        let seconds = Date().timeIntervalSince(started)
        if placed.reused == 0, wire >= placed.length {  // a 200's whole body: placed as a whole fetch
            report(.placed(job.key, bytes: placed.length, received: wire, resumedAt: 0, seconds: seconds))
        } else {
            report(.placedByDelta(job.key, bytes: placed.length, fetched: wire, reused: placed.reused, seconds: seconds))
        }
    }

    /// The resource's trouble (SPEC §9), judged as any transfer's failure (§5–§8). A resource
    /// with mirrors moves on to its pass's next URL (the job is returned, the SHA-1 of the
    /// control file used kept for it); one without, whose failure holds its origin, waits with
    /// the hold; else it is retried in this run after a short backoff (the job is returned),
    /// or recorded with its next retry.
    private mutating func failed(_ job: TransferJob, _ failure: TransferFailure, deltaSHA1: String?, wire: UInt64, startedAt: Instant,
                                 stopRequested: () -> Bool) -> TransferJob? {
        var job = job, failure = failure
        let now = clock()
        var heldUntil: Instant?
        if job.mirrorPass != nil {
            switch nextURL(job, &failure, startedAt: startedAt, now: now) {
            case .moved(let next):
                if let deltaSHA1 { movedSHA1[job.key] = deltaSHA1 }
                return next
            case .over(let ended, let until):
                (job, heldUntil) = (ended, until)
            }
        } else if failure.holdsOrigin != nil {
            return heldOrigin(job, failure, wire: wire, startedAt: startedAt)
        }
        let decision = RetryDecision.after(failure, failures: job.failures + 1, policy: job.feed.retry, now: now, using: &random)
        // Every URL held for the rest of the run: a retry within it waits for the first one's
        // hold instead (as `FailureReporter.finish` does); exhausted attempts stay exhausted.
        let nextRetry = decision.inRun ? heldUntil ?? decision.nextRetry : decision.nextRetry
        record {
            try $0.recordAttempt(job.key, startedAt: startedAt, finishedAt: now, bytes: wire, httpStatus: failure.httpStatus,
                                 outcome: "failed (delta)", error: failure.message)
            try $0.recordFailure(job.key, urlHash: job.urlHash, entry: job.entry, release: job.release, error: failure.message,
                                 permanent: decision.permanent, nextRetry: nextRetry, at: now)
        }
        if decision.inRun, heldUntil == nil {
            report(.retrying(job.key, message: failure.message, after: decision.wait))
            let until = Date().addingTimeInterval(Double(decision.wait))
            while Date() < until {
                if stopRequested() {
                    pause(job, "stopped")
                    return nil
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
            var again = job
            again.failures += 1
            return again
        }
        summary.count(.failed, feed: job.feed.name)
        summary.failures.append((job.key, failure.message))
        summary.changedFeeds.insert(job.feed.name)
        report(.failed(job.key, message: failure.message, retryAt: nextRetry))
        return nil
    }

    private enum NextURL {
        /// The job at its pass's next URL, asked at once.
        case moved(TransferJob)
        /// Every URL failed (or is held): the job with a fresh pass, and the first URL's hold's
        /// end when every URL is held for the rest of the run.
        case over(TransferJob, heldUntil: Instant?)
    }

    /// SPEC §8: a failure at one of a resource's URLs moves its pass on to the next, with no
    /// attempt counted (`FailureReporter.nextURL` for a transfer); its origin is held as §6
    /// says, without counting the resource with the hold. When the pass is over, `failure`
    /// becomes its outcome (`MirrorOrder.outcome`).
    private mutating func nextURL(_ job: TransferJob, _ failure: inout TransferFailure, startedAt: Instant, now: Instant) -> NextURL {
        var pass = job.mirrorPass ?? MirrorOrder(count: 1)
        let resource = job.resource
        if let cause = failure.holdsOrigin {
            let (hold, _, _) = holds.hold(job.url.origin, cause: cause, retryAfter: failure.retryAfter, policy: job.feed.retry,
                                          startedAt: startedAt, now: now, failed: job.key, counted: false, using: &random)
            record { try $0.holdOrigin(hold) }
        }
        pass.failed(.init(index: job.urlIndex, transient: failure.kind == .transient || failure.holdsOrigin != nil,
                          message: failure.message, retryAfter: failure.retryAfter))
        var moved = job
        moved.mirrorPass = pass
        if case .request(let next) = pass.next({ admission(of: resource.url(at: $0).origin, now: now) }) {
            let again = moved.at(next)
            report(.nextURL(job.key, message: failure.message, url: again.url.redacted))
            return .moved(again)
        }
        let outcome = pass.outcome(heldCause: { index in holds.cause(of: resource.url(at: index).origin, now: now).map { "origin held: " + $0 } },
                                   shown: { resource.url(at: $0).redacted })
        failure = TransferFailure(kind: outcome.transient ? .transient : .permanent, message: outcome.message, retryAfter: outcome.retryAfter,
                                  discardPartial: false, httpStatus: failure.httpStatus)
        let fresh = MirrorOrder(count: resource.urlCount, servedBy: job.servedIndex)
        var ended = moved.at(fresh.order[0])
        ended.mirrorPass = fresh
        // Every URL held for the rest of the run: counted with the first one's hold.
        guard (0..<resource.urlCount).allSatisfy({ admission(of: resource.url(at: $0).origin, now: now) == .held }) else {
            return .over(ended, heldUntil: nil)
        }
        let first = resource.url(at: pass.order[0]).origin
        holds.countHeld(first, job.key)
        return .over(ended, heldUntil: holds.until(of: first))
    }

    /// A 429, 502, 503 or 504 from the resource URL's own origin, a connection that could not
    /// be made or broke before a head, or a head that did not come in time, holds the origin
    /// (SPEC §6): the hold is recorded, until its `Retry-After` or the origin's backoff; a hold
    /// that ends within the run makes this resource its probe (the job is returned, to go when
    /// `admitted` lets it); else the resource waits with its origin.
    private mutating func heldOrigin(_ job: TransferJob, _ failure: TransferFailure, wire: UInt64, startedAt: Instant) -> TransferJob? {
        let origin = job.url.origin, now = clock()
        let (hold, wait, forTheRun) = holds.hold(origin, cause: failure.holdsOrigin ?? "HTTP \(failure.httpStatus ?? 0)", retryAfter: failure.retryAfter,
                                                 policy: job.feed.retry, startedAt: startedAt, now: now, failed: job.key, using: &random)
        record {
            try $0.holdOrigin(hold)
            try $0.recordAttempt(job.key, startedAt: startedAt, finishedAt: now, bytes: wire, httpStatus: failure.httpStatus,
                                 outcome: "failed (delta)", error: failure.message)
            try $0.recordFailure(job.key, urlHash: job.urlHash, entry: job.entry, release: job.release, error: failure.message,
                                 permanent: false, nextRetry: hold.until, at: now)
        }
        if !forTheRun {
            report(.heldWithOrigin(job.key, message: failure.message, origin: origin, until: hold.until, after: wait))
            var again = job
            again.failures += 1
            return again
        }
        summary.changedFeeds.insert(job.feed.name)
        report(.failed(job.key, message: failure.message, retryAt: hold.until, origin: origin))
        summary.count(.failed, feed: job.feed.name)
        summary.failures.append((job.key, failure.message))
        return nil
    }

    private mutating func pause(_ job: TransferJob, _ reason: String) {
        summary.count(.paused, feed: job.feed.name)
        report(.paused(job.key, reason: reason, partial: .none))
    }

    /// The state writes of one outcome; one that fails is said (once a run, as the engine's are).
    @discardableResult
    private func record(_ body: (StateStore) throws -> Void) -> Bool {
        do {
            try body(state)
            return true
        } catch {
            report(.stateError("cannot record state: \(error)"))
            return false
        }
    }
}

extension StateStore {
    /// Bytes moved over a metered link count toward the feed's day (`metered_budget`, SPEC §7).
    func addMeteredBytesIf(_ metered: Bool, feed: Feed, bytes: UInt64, at time: Instant) throws(SQLiteError) {
        guard metered, bytes > 0 else { return }
        try addMeteredBytes(MeteredDay(feed: feed.name, day: LocalDay.label(time, clock: ZoneClock(feed.timeZone))), bytes)
    }
}
