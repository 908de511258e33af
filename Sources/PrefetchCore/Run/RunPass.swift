import Foundation

/// One pass of `run` over an opened, locked cache: plan, transfer what is due, record,
/// clean up. `run` makes one; `daemon` makes one per wake-up.
struct RunPass {
    /// The feeds this pass works on (`run --feed` picks one).
    let feeds: [Feed]
    /// Every loaded feed: partials of the others are theirs, not abandoned.
    var allFeeds: [Feed]
    let settings: Settings
    let cache: CacheFolder
    let state: StateStore
    let console: Console
    var config: Config { settings.config }
    /// `daemon` needs the plan after the pass to know when to wake (`DaemonWakeup`); `run` only
    /// needs it to tell which releases are finished, which it can often tell without it.
    var wantsNextWakeup = false
    /// The readings, kept current beside the transfers (the daemon's, for its life); nil:
    /// the pass makes its own and stops it at its end.
    var monitor: ConditionMonitor? = nil
    /// The feed sources (SPEC §8) as checked before this pass: the metrics show them, and a
    /// stale or never-applied one among `coveredSources` fails the pass (§5's exit rule).
    var sources: [SourceStatus] = []
    var coveredSources: Set<String> = []

    /// How a pass ended, and what it knows of when there is next something to do.
    struct Outcome {
        let exit: ExitCode
        /// The pass's part of the daemon's next wake-up (`DaemonWakeup.next` adds the sources).
        var wakeup = DaemonWakeup.PassTimes()
        /// Why the metrics file could not be written (the daemon's status says so).
        var metricsError: String? = nil
        /// What changes of the readings unblock work left waiting (with `wantsNextWakeup`).
        var wake: ConditionWake? = nil
        /// With `wantsNextWakeup`, when the pass changed nothing and its plan is at rest: what
        /// lets the next passes skip planning while nothing changes (`RestCheck`).
        var rest: RestCheck? = nil
        /// Whether the pass printed its `run:` summary line (the daemon then says its next wake-up).
        var reported = false
    }

    /// The shifted system clock (`PREFETCH_CLOCK_OFFSET`).
    var clock: () -> Instant { { [settings] in settings.now() } }

    /// A plan, with the state snapshot and the cache listing it was made from.
    private typealias PlanWithInputs = (Plan, StateSnapshot, CachedFiles)

    /// What the steps of one `execute` share: the readings, the reporter, when the pass began.
    struct PassContext {
        let settings: Settings
        let monitor: ConditionMonitor
        let reporter: RunReporter
        /// When the pass began: its seconds, and the run's record.
        let started: Date
        /// The readings plans go by: the pass's first, then those after the transfers.
        var lastProbe: ConditionSnapshot
        /// The state errors said before this pass: one more fails it (SPEC §5's exit rule).
        let stateErrorsBefore: Int

        init(settings: Settings, monitor: ConditionMonitor, reporter: RunReporter, started: Date) {
            self.settings = settings
            self.monitor = monitor
            self.reporter = reporter
            self.started = started
            lastProbe = settings.assumptions.applied(to: monitor.snapshot())
            stateErrorsBefore = reporter.stateErrors
        }

        /// The monitor's last readings, with the assumptions applied.
        func conditions() -> ConditionSnapshot {
            settings.assumptions.applied(to: monitor.snapshot())
        }

        /// The pass's own state writes: one that fails is said (once a run, as the engine's
        /// are) and the pass goes on; the files are the truth.
        func recordState<T>(_ body: () throws -> T) -> T? {
            do { return try body() } catch {
                reporter.handle(.stateError("cannot record state: \(error)"))
                return nil
            }
        }
    }

    /// What the pass knows once its transfers are settled (`settle`), completed by the clean-up
    /// and the reader indexes.
    private struct Settled {
        var wakeup = DaemonWakeup.PassTimes()
        /// What changes of the readings unblock work left waiting.
        var wake: ConditionWake?
        /// The plan made after the transfers, when one was (reused for the reader indexes).
        var planAfter: PlanWithInputs?
    }

    /// Plans, runs the due transfers, settles the releases, cleans up, writes the reader
    /// indexes and the pass's figures, and says how it ended: one step each, in that order.
    func execute(reporter: RunReporter, stopRequested: @escaping () -> Bool) -> Outcome {
        let started = Date()
        // The probes run beside the transfers, never inside them (SPEC §7): the monitor keeps
        // the last readings, and the transfer loop only takes them.
        let monitor = self.monitor ?? ConditionMonitor(probes: ConditionProbes(environment: settings.environment),
                                                       cache: settings.config.cache, meteredDefault: settings.config.meteredDefault)
        let ownsMonitor = self.monitor == nil
        monitor.beginPass()  // fresh readings: at most the probes' 2 s
        var keepPolling = false
        defer { if ownsMonitor { monitor.stop() } else { monitor.endPass(keepPolling: keepPolling) } }
        var pass = PassContext(settings: settings, monitor: monitor, reporter: reporter, started: started)
        // What the running transfers go by: the last known reading of each kind (an unknown
        // one never pauses them), from the one they started with.
        let held = HeldConditions(pass.lastProbe)
        // The daemon's stamps, before anything is read: what changes after them is seen (`RestCheck`).
        let stamps = wantsNextWakeup ? (try? state.changeStamp()).map { ($0, CacheStamp.take(cache)) } : nil
        ReleaseSwitch.lay(feeds, cache: cache, console: console)  // a feed that changed `consistency` first
        // `snapshot` is emptied before state is read again after the transfers (`settle`): two
        // snapshots of every resource's record are not held at once.
        guard case (let plan, var snapshot, let cached)? = makePlan(pass, sweep: true) else { return Outcome(exit: .failure) }
        let planned = try? state.changeStamp()
        // max_cache_size (SPEC §8): room is made before transfers start.
        let cacheAllowance = plan.cache.map { CacheRoomMaker.makeRoom($0, cache: cache, state: state, console: console, report: reporter.handle) }
        pass.recordState { try ReleaseBook.begin(plan, snapshot, state) }  // each release is recorded as begun
        var content = Set<Int>()
        let jobs = makeJobs(plan, snapshot: snapshot, cached: cached, cacheAllowance: cacheAllowance, content: &content)
        let timings = Dictionary(feeds.map { ($0.name, FeedTiming($0, machineID: settings.machineID?.usableValue)) }, uniquingKeysWith: { a, _ in a })
        // The jobs go to the engine (one each of `plan.order`'s keys): not kept beside the
        // plan and state read after the transfers.
        var summary = transferInRounds(consume jobs, content: content, plan: plan, snapshot: snapshot, cacheAllowance: cacheAllowance,
                                       timings: timings, held: held, pass, stopRequested: stopRequested)
        reporter.flush()
        pass.lastProbe = pass.conditions()  // the plan after the transfers sees the readings now
        var settled = settle(plan, snapshot: &snapshot, cached: cached, summary: summary, planned: planned, timings: timings, pass,
                             stopRequested: stopRequested)
        keepPolling = settled.wake?.needsPolling ?? false
        var changed = summary.changedFeeds
        var removed = false
        if !stopRequested() { removed = cleanUp(&summary, changed: &changed, settled: &settled, pass) }
        let switches = writeIndexes(changed: changed, plan: plan, settled: &settled, pass)
        let seconds = Date().timeIntervalSince(started)
        let metricsError = recordFigures(summary, pass)
        let exit = exitStatus(summary, switched: switches.allLive, metricsError: metricsError, pass)
        let notDue = plan.feeds.reduce(0) { $0 + $1.items.allValues.count { $0.status != .due && $0.status != .fresh } }
        let reported = reporter.summary(summary, seconds: seconds, exit: exit, notDue: notDue)
        var rest: RestCheck?
        if let (stateBefore, cacheBefore) = stamps, exit == .success, plan.order.isEmpty, !removed, !switches.due, !stopRequested(),
           let (after, _, _) = settled.planAfter, (try? state.changeStamp()) == stateBefore {
            // No feed sources when a rest is kept (`DaemonCommand`): the pass's part is the whole wake-up.
            rest = RestCheck.after(after, state: stateBefore, cache: cacheBefore, wakeup: DaemonWakeup.next(settled.wakeup), wake: settled.wake)
        }
        return Outcome(exit: exit, wakeup: settled.wakeup, metricsError: metricsError, wake: settled.wake, rest: rest, reported: reported)
    }

    /// Plans from state and the cache as they are now, with `pass`'s readings; nil when state
    /// cannot be read (said). `sweep`: partials that cannot resume are discarded first (SPEC §7:
    /// when one is found at start).
    private func makePlan(_ pass: PassContext, sweep: Bool = false) -> PlanWithInputs? {
        var snapshot: StateSnapshot
        do { snapshot = try state.snapshot() } catch {
            console.err("prefetch: error: cannot read \(state.path): \(error)\n")
            return nil
        }
        if sweep {
            do { try PartialSweep.discardUnresumable(feeds, snapshot: &snapshot, cache: cache, state: state) } catch {
                pass.reporter.handle(.stateError("cannot record state: \(error)"))
            }
        }
        let cached = CacheListing.present(feeds, in: cache)
        var input = PlanInput(feeds: feeds, state: snapshot, cached: cached, conditions: pass.lastProbe, now: clock(), machineID: settings.machineID,
                              partialFiles: CacheListing.partialFiles(snapshot, in: cache), bootID: settings.bootID)
        input.measureCache(config.maxCacheSize, in: cache)
        input.localSource = LocalSourceLookup.make(state: state, cache: cache)
        input.pinnedCopyHolds = PinnedCopyCheck.make(state: state, cache: cache, recordingAt: clock())
        // The pinned copies validated at a release are recorded one by one as the plan is made: in one transaction.
        return (state.batched { Planner.plan(input) }, snapshot, cached)
    }

    /// One job for each of the plan's rows, in the order it gives. Made from the plan's
    /// positions (indices into `feeds`, which the plan was made from): no key is looked up,
    /// no Feed or Resource copied into a dictionary.
    /// `content`: the positions of the jobs that need content (not a revalidation of a current
    /// copy) and have a `sha256`, which a local source may give (SPEC §9).
    private func makeJobs(_ plan: Plan, snapshot: StateSnapshot, cached: CachedFiles, cacheAllowance: CacheAllowance?,
                          content: inout Set<Int>) -> [TransferJob] {
        var jobs: [TransferJob] = []
        let releases = ReleaseBook.releases(plan, snapshot)
        let jobFeeds = feeds.map(JobFeed.init)
        for (jobFeed, feedPlan) in zip(jobFeeds, plan.feeds) {
            jobFeed.windowEnd = feedPlan.items.allValues.first { $0.status == .due }?.windowEnd
        }
        jobs.reserveCapacity(plan.positions.count)
        for (key, position) in zip(plan.order, plan.positions) {
            let feed = jobFeeds[position.feed]
            let resource = feeds[position.feed].resources[position.resource]
            let recorded = snapshot.resources[key]
            let release = releases[position.feed]
            let urlDigest = resource.url.identityDigest, urlHash = urlDigest.hex
            let sameURL = recorded.map { resource.url.matches(recorded: $0.urlHash, identity: urlHash) } ?? false
            // A copy of another version of the entry is never revalidated: a 304 would keep it.
            let current = recorded.map { sameURL && !Planner.copyIsOfAnotherEntry(resource, $0, sameURL: sameURL) } ?? false
            let failuresCount = recorded?.failureRelease == release
                && (recorded?.failureEntry.map { $0 == resource.fingerprint(identity: urlHash) } ?? sameURL)
            let revalidates = cached.contains(feed: feeds[position.feed].name, position: position.resource) && current
            if !revalidates, resource.sha256 != nil { content.insert(jobs.count) }
            var job = TransferJob(
                feed: feed, position: position.resource, urlDigest: urlDigest, release: release,
                cachedValidators: revalidates ? recorded?.validators : nil,
                cachedLength: recorded?.length,
                partial: recorded?.partial,
                failures: failuresCount ? recorded?.failures ?? 0 : 0)
            if resource.mirrors != nil || recorded?.servedBy != nil { job.listURLs(recorded: recorded, revalidates: revalidates) }
            if cacheAllowance != nil {
                // The length the plan admitted it at (its expected size, as `Planner` reckons it), or its partial's bytes.
                let expected = resource.size ?? (cached.contains(feed: feeds[position.feed].name, position: position.resource) ? recorded?.length : nil) ?? recorded?.lastResponseLength
                    ?? recorded?.partial?.totalLength
                let partialBytes = recorded?.partial == nil ? nil : cache.partialFile(CacheFolder.partialName(feed: key.feed, path: key.path))?.size
                job.cacheAdmitted = expected ?? partialBytes ?? 0
            }
            jobs.append(job)
        }
        return jobs
    }

    /// After the transfers: releases with nothing left to do are finished, a pending release
    /// that moves nothing says why, and the plan after the pass (when one is made) gives the
    /// daemon's wake-up. `snapshot` is emptied before state is read again.
    private func settle(_ plan: Plan, snapshot: inout StateSnapshot, cached: CachedFiles, summary: EngineSummary,
                        planned: StateStore.ChangeStamp?, timings: [String: FeedTiming], _ pass: PassContext,
                        stopRequested: () -> Bool) -> Settled {
        var settled = Settled()
        let nothingPending: Set<ResourceStatus> = [.due, .fresh, .expired, .failed]
        // Nothing was transferred or written since the plan: it is the plan after the pass too.
        let planStands = plan.order.isEmpty && planned != nil && (try? state.changeStamp()) == planned
        if !wantsNextWakeup, !stopRequested(), !summary.diskFull, summary.failed == 0, summary.paused == 0,
           summary.placed + summary.fresh == plan.order.count,
           plan.feeds.allSatisfy({ $0.items.allValues.allSatisfy { nothingPending.contains($0.status) } }) {
            settled.planAfter = finishEveryRelease(plan, snapshot: &snapshot, cached: cached, pass)
        } else if case let (after, snapshotAfter, cachedAfter)? = planStands ? (plan, snapshot, cached) : Self.dropping(&snapshot, then: { makePlan(pass) }) {
            settled.planAfter = (after, snapshotAfter, cachedAfter)
            // Starvation (SPEC §6): why a pending release moves nothing, seen while its window is open.
            for (feed, feedPlan) in zip(feeds, after.feeds) {
                guard timings[feed.name]?.openInterval(at: after.now) != nil, let reason = ReleaseBook.stuckReason(feedPlan) else { continue }
                pass.recordState { try state.recordMissedReason(feed: feed.name, reason, at: after.now) }
            }
            settled.wakeup.plan = DaemonWakeup.ofPlan(after)
            if wantsNextWakeup { settled.wakeup.expiry = DaemonWakeup.firstExpiry(feeds, after: after.now) }
            settled.wake = ConditionWake(after, feeds: feeds)
            // A release just finished: a feed with neither schedule nor window now has its next
            // release, which the plan made before could not know of.
            if pass.recordState({ try ReleaseBook.finish(after, snapshotAfter, state, at: clock()) }) == true, wantsNextWakeup,
               let (again, _, _) = makePlan(pass) {
                settled.wakeup.plan = DaemonWakeup.ofPlan(again)
                settled.wake = ConditionWake(again, feeds: feeds)
            }
        }
        return settled
    }

    /// Every due transfer ended placed or fresh and nothing else was pending: a plan now would
    /// find nothing due, waiting or in backoff, so every release is finished (without reading
    /// every resource's state and the cache again). The reader indexes need no new plan
    /// either: every job is now cached and current, so `plan` with state read again is the
    /// plan after (nil when state cannot be read: the indexes then plan again).
    private func finishEveryRelease(_ plan: Plan, snapshot: inout StateSnapshot, cached: CachedFiles, _ pass: PassContext) -> PlanWithInputs? {
        snapshot = StateSnapshot()  // not kept beside the one read now
        var planAfter: PlanWithInputs?
        if let after = try? state.snapshot() {
            var placed = cached
            for position in plan.positions { placed.insert(feed: feeds[position.feed].name, position: position.resource) }
            planAfter = (plan, after, placed)
        }
        let feedStates = (try? state.feedStates()) ?? [:]
        for feedPlan in plan.feeds where feedStates[feedPlan.name]?.lastReleaseFinished == nil && feedStates[feedPlan.name]?.lastRelease != nil {
            pass.recordState { try state.recordReleaseFinished(feed: feedPlan.name, at: clock()) }
        }
        return planAfter
    }

    /// The clean-up of `gc`: expired and unlisted files, and the feeds whose manifest is gone
    /// (past their grace). Every feed that lost a file joins `changed`; when files went, the
    /// plan after is dropped (the indexes plan again). Returns whether files went.
    private func cleanUp(_ summary: inout EngineSummary, changed: inout Set<String>, settled: inout Settled, _ pass: PassContext) -> Bool {
        let removals = GarbageCollector.collect(feeds: feeds, cache: cache, now: clock(), partialsOf: allFeeds)
        let kept = GarbageCollector.apply(removals)
        for (removal, error) in kept {
            console.err("prefetch: warning: cannot remove \(removal.path): \(error)\n")
        }
        summary.pruned = GarbageCollector.filesRemoved(removals, failed: kept)
        for removal in removals { if let key = removal.key { pass.recordState { try state.deleteResource(key) } } }
        IndexWriter.withdraw(removals, feeds: feeds, cache: cache, now: clock(), console: console)
        // Every feed that lost a file, listed or not (a prune's removal names no resource).
        changed.formUnion(removals.compactMap(\.feed))
        if !removals.isEmpty { settled.planAfter = nil }  // files went: plan again
        let gone = FeedRemoval.apply(listed: allFeeds, cache: cache, state: state, now: clock(), grace: settings.config.removedFeedGrace,
                                     dryRun: false)
        for line in gone.lines { console.err("prefetch: \(line)\n") }
        for error in gone.errors { console.err("prefetch: error: \(error)\n") }
        settled.wakeup.removedFeeds = gone.graces
        return !removals.isEmpty
    }

    /// The reader index of every feed whose files or state changed (and of one that has none
    /// yet); a finished release's is written in its generation, which then goes live.
    /// `due`: some feed's generation was due to switch; `allLive`: every one due went live.
    private func writeIndexes(changed: Set<String>, plan: Plan, settled: inout Settled, _ pass: PassContext) -> (due: Bool, allLive: Bool) {
        let switching = ReleaseSwitch.due(feeds, cache: cache, state: (try? state.feedStates()) ?? [:])
        let switchNames = Set(switching.map(\.name))
        let indexed = feeds.filter { changed.contains($0.name) || switchNames.contains($0.name) || !cache.hasIndex(feed: $0.name) }
        if !indexed.isEmpty, let (after, snapshotAfter, cachedAfter) = settled.planAfter ?? makePlan(pass) {
            IndexWriter.write(indexed, plan: after, state: snapshotAfter, cached: cachedAfter, cache: cache, now: clock(), console: console)
        }
        let switched = ReleaseSwitch.apply(switching, cache: cache, console: console)
        // The generation before the one that was live went: its files are no local sources now.
        for feed in switching { pass.recordState { try LocalSourceRecords.forgetGone(feed: feed.name, state: state, cache: cache) } }
        // A generation just became the previous one: in 60 s it is room for what the cap holds back (SPEC §8).
        if wantsNextWakeup, !switching.isEmpty, (settled.planAfter?.0 ?? plan).cache != nil,
           (settled.planAfter?.0 ?? plan).feeds.contains(where: { $0.items.contains(reason: CacheBudget.cacheFullReason) }) {
            settled.wakeup.generationSwitch = (at: clock(), feed: switching[0].name)
        }
        return (due: !switching.isEmpty, allLive: switched)
    }

    /// The pass's figures: the run's record and history, the counters the metrics' `_total`s
    /// read, and the metrics file (SPEC §6); then a full disk is said. Returns why the metrics
    /// file could not be written.
    private func recordFigures(_ summary: EngineSummary, _ pass: PassContext) -> String? {
        if summary.bodyBytes > 0 || summary.placed > 0 {
            pass.recordState {
                try state.recordRun(startedAt: Instant(pass.started), finishedAt: clock(), bodyBytes: summary.bodyBytes,
                                    transferSeconds: summary.transferSeconds, placed: summary.placed, fresh: summary.fresh, failed: summary.failed)
            }
        }
        if summary.placed + summary.fresh + summary.failed > 0 { pass.recordState { try state.pruneHistory() } }
        // The counters the metrics' `_total`s read: kept whether or not a metrics file is written.
        for (feed, tally) in summary.byFeed.sorted(by: { $0.key < $1.key }) {
            pass.recordState { try state.addCounts(feed: feed, MetricsWriter.counts(tally)) }
        }
        var metricsError: String?
        if let metricsFile = settings.metricsFile {
            metricsError = MetricsWriter.write(to: metricsFile, feeds: allFeeds, cache: cache, state: state, settings: settings, now: clock(),
                                               conditions: pass.conditions(), passSeconds: Date().timeIntervalSince(pass.started), sources: sources,
                                               console: console)
        }
        if summary.diskFull {
            // Said of resumable partials only (SPEC §7); the others were discarded as their transfers stopped.
            let kept = PartialSweep.kept(feeds, state: state, cache: cache, bootID: settings.bootID)
            console.err("prefetch: error: disk full: transfers paused\(PartialSweep.keptNote(kept))\n")
        }
        return metricsError
    }

    /// SPEC §5's exit rule: a failed transfer, a full disk or a generation that could not go
    /// live fails the pass; so does a metrics file that could not be written (§6), a state
    /// write that failed (the cache could not be written), and a stale or never-applied feed
    /// source among `coveredSources`.
    private func exitStatus(_ summary: EngineSummary, switched: Bool, metricsError: String?, _ pass: PassContext) -> ExitCode {
        let unrecorded = pass.reporter.stateErrors > pass.stateErrorsBefore
        let sourcesStale = sources.contains { coveredSources.contains($0.label) && $0.state != .ok }
        return summary.failed > 0 || summary.diskFull || !switched || metricsError != nil || unrecorded || sourcesStale
            ? .failure : .success
    }

    /// `plan()` once `snapshot` is emptied: the plan reads state again, and the old snapshot
    /// is not held beside the new one.
    private static func dropping(_ snapshot: inout StateSnapshot, then plan: () -> PlanWithInputs?) -> PlanWithInputs? {
        snapshot = StateSnapshot()
        return plan()
    }

    /// Why a running feed must pause now that the conditions read `snapshot`, or nil: the
    /// link turned metered, AC power was lost, or the battery fell below `min_battery`.
    static func conditionLost(_ conditions: Conditions, _ snapshot: ConditionSnapshot) -> String? {
        if conditions.network == .unmetered && snapshot.metered { return "network metered" }
        if conditions.power == .ac && !snapshot.onAC { return "on battery" }
        if conditions.minBattery > 0, !snapshot.onAC, let level = snapshot.batteryLevel, level < conditions.minBattery {
            return "battery \(level)% < \(conditions.minBattery)%"
        }
        return nil
    }
}
