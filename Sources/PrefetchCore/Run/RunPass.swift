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

    func execute(reporter: RunReporter, stopRequested: @escaping () -> Bool) -> Outcome {
        let started = Date()
        let clock = self.clock
        // The probes run beside the transfers, never inside them (SPEC §7): the monitor keeps
        // the last readings, and the transfer loop only takes them.
        let monitor = self.monitor ?? ConditionMonitor(probes: ConditionProbes(environment: settings.environment),
                                                       cache: settings.config.cache, meteredDefault: settings.config.meteredDefault)
        let ownsMonitor = self.monitor == nil
        monitor.beginPass()  // fresh readings: at most the probes' 2 s
        var keepPolling = false
        defer { if ownsMonitor { monitor.stop() } else { monitor.endPass(keepPolling: keepPolling) } }
        let conditions = { [settings] in settings.assumptions.applied(to: monitor.snapshot()) }
        var lastProbe = conditions()
        /// What the running transfers go by: the last known reading of each kind (an unknown
        /// one never pauses them), from the one they started with.
        let held = HeldConditions(lastProbe)
        let stateErrorsBefore = reporter.stateErrors
        let machineID = settings.machineID
        /// `sweep`: partials that cannot resume are discarded first (SPEC §7: when one is found at start).
        func makePlan(sweep: Bool = false) -> (Plan, StateSnapshot, CachedFiles)? {
            var snapshot: StateSnapshot
            do { snapshot = try state.snapshot() } catch {
                console.err("prefetch: error: cannot read \(state.path): \(error)\n")
                return nil
            }
            if sweep {
                do { try PartialSweep.discardUnresumable(feeds, snapshot: &snapshot, cache: cache, state: state) } catch {
                    reporter.handle(.stateError("cannot record state: \(error)"))
                }
            }
            let cached = CacheListing.present(feeds, in: cache)
            var input = PlanInput(feeds: feeds, state: snapshot, cached: cached, conditions: lastProbe, now: clock(), machineID: machineID,
                                  partialFiles: CacheListing.partialFiles(snapshot, in: cache), bootID: settings.bootID)
            input.measureCache(config.maxCacheSize, in: cache)
            return (Planner.plan(input), snapshot, cached)
        }
        // The daemon's stamps, before anything is read: what changes after them is seen (`RestCheck`).
        let stamps = wantsNextWakeup ? (try? state.changeStamp()).map { ($0, CacheStamp.take(cache)) } : nil
        ReleaseSwitch.lay(feeds, cache: cache, console: console)  // a feed that changed `consistency` first
        // `snapshot` is emptied before state is read again after the transfers: two snapshots
        // of 100,000 records are not held at once.
        guard case (let plan, var snapshot, let cached)? = makePlan(sweep: true) else { return Outcome(exit: .failure) }
        let planned = try? state.changeStamp()
        /// The pass's own state writes: one that fails is said (once a run, as the engine's
        /// are) and the pass goes on; the files are the truth.
        func recordState<T>(_ body: () throws -> T) -> T? {
            do { return try body() } catch {
                reporter.handle(.stateError("cannot record state: \(error)"))
                return nil
            }
        }

        // max_cache_size (SPEC §8): room is made before transfers start.
        let cacheAllowance = plan.cache.map { CacheRoomMaker.makeRoom($0, cache: cache, state: state, console: console) }
        // Jobs in the order the plan gives; each release is recorded as begun.
        var jobs: [TransferJob] = []
        recordState { try ReleaseBook.begin(plan, snapshot, state) }
        // Jobs from the plan's positions (indices into `feeds`, which the plan was made from):
        // no key is looked up, no Feed or Resource copied into a dictionary.
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

        var meteredUsedToday: [String: UInt64] = [:]
        for feed in feeds where feed.conditions.meteredBudget != nil {
            let day = LocalDay.label(plan.now, clock: ZoneClock(feed.timeZone))
            meteredUsedToday[feed.name] = snapshot.meteredBytes[MeteredDay(feed: feed.name, day: day)] ?? 0
        }
        let engine = TransferEngine(cache: cache, state: state, config: config, environment: settings.environment,
                                    threads: settings.transferThreads, bootID: settings.bootID, faults: settings.faults,
                                    metered: lastProbe.metered, meteredUsedToday: meteredUsedToday, cacheAllowance: cacheAllowance,
                                    clock: clock, onEvent: reporter.handle)
        let timings = Dictionary(feeds.map { ($0.name, FeedTiming($0, machineID: machineID?.usableValue)) }, uniquingKeysWith: { a, _ in a })
        // The jobs go to the engine (one each of `plan.order`'s keys): not kept beside the
        // plan and state read after the transfers (52.8 MB of a `run` over 100,000, heaptrack).
        let holds = snapshot.originHolds
        var summary = engine.run(consume jobs, holds: holds, pauseReason: { feed in
            let now = clock()
            if let timing = timings[feed.name], timing.openInterval(at: now) == nil { return "window closed" }
            return Self.conditionLost(feed.conditions, held.update(with: conditions()))
        }, stopRequested: stopRequested)
        reporter.flush()
        lastProbe = conditions()  // the plan after the transfers sees the readings now

        // Releases with nothing left to do are finished; then the clean-up of `gc`.
        var wakeup = DaemonWakeup.PassTimes()
        var wake: ConditionWake?
        var changed = summary.changedFeeds
        /// The plan made after the transfers, when one was (reused for the reader indexes).
        var planAfter: (Plan, StateSnapshot, CachedFiles)?
        let settled: Set<ResourceStatus> = [.due, .fresh, .expired, .failed]
        // Nothing was transferred or written since the plan: it is the plan after the pass too.
        let planStands = plan.order.isEmpty && planned != nil && (try? state.changeStamp()) == planned
        if !wantsNextWakeup, !stopRequested(), !summary.diskFull, summary.failed == 0, summary.paused == 0,
           summary.placed + summary.fresh == plan.order.count,
           plan.feeds.allSatisfy({ $0.items.allValues.allSatisfy { settled.contains($0.status) } }) {
            // Every due transfer ended placed or fresh and nothing else was pending: a plan
            // now would find nothing due, waiting or in backoff, so every release is finished
            // (without reading every resource's state and the cache again).
            // The reader indexes need no new plan either: every job is now cached and current.
            snapshot = StateSnapshot()  // not kept beside the one read now
            if let after = try? state.snapshot() {  // unreadable: planned again below
                var placed = cached
                for position in plan.positions { placed.insert(feed: feeds[position.feed].name, position: position.resource) }
                planAfter = (plan, after, placed)
            }
            let feedStates = (try? state.feedStates()) ?? [:]
            for feedPlan in plan.feeds where feedStates[feedPlan.name]?.lastReleaseFinished == nil && feedStates[feedPlan.name]?.lastRelease != nil {
                recordState { try state.recordReleaseFinished(feed: feedPlan.name, at: clock()) }
            }
        } else if case let (after, snapshotAfter, cachedAfter)? = planStands ? (plan, snapshot, cached) : Self.dropping(&snapshot, then: { makePlan() }) {
            planAfter = (after, snapshotAfter, cachedAfter)
            // Starvation (SPEC §6): why a pending release moves nothing, seen while its window is open.
            for (feed, feedPlan) in zip(feeds, after.feeds) {
                guard timings[feed.name]?.openInterval(at: after.now) != nil, let reason = ReleaseBook.stuckReason(feedPlan) else { continue }
                recordState { try state.recordMissedReason(feed: feed.name, reason, at: after.now) }
            }
            wakeup.plan = DaemonWakeup.ofPlan(after)
            if wantsNextWakeup { wakeup.expiry = DaemonWakeup.firstExpiry(feeds, after: after.now) }
            wake = ConditionWake(after, feeds: feeds)
            keepPolling = wake?.needsPolling ?? false
            // A release just finished: a feed with neither schedule nor window now has its next
            // release, which the plan made before could not know of.
            if recordState({ try ReleaseBook.finish(after, snapshotAfter, state, at: clock()) }) == true, wantsNextWakeup,
               let (again, _, _) = makePlan() {
                wakeup.plan = DaemonWakeup.ofPlan(again)
                wake = ConditionWake(again, feeds: feeds)
                keepPolling = wake?.needsPolling ?? false
            }
        }
        var removed = false
        if !stopRequested() {
            let removals = GarbageCollector.collect(feeds: feeds, cache: cache, now: clock(), partialsOf: allFeeds)
            let kept = GarbageCollector.apply(removals)
            for (removal, error) in kept {
                console.err("prefetch: warning: cannot remove \(removal.path): \(error)\n")
            }
            summary.pruned = GarbageCollector.filesRemoved(removals, failed: kept)
            for removal in removals { if let key = removal.key { recordState { try state.deleteResource(key) } } }
            IndexWriter.withdraw(removals, feeds: feeds, cache: cache, now: clock(), console: console)
            // Every feed that lost a file, listed or not (a prune's removal names no resource).
            changed.formUnion(removals.compactMap(\.feed))
            if !removals.isEmpty { planAfter = nil; removed = true }  // files went: plan again
            let gone = FeedRemoval.apply(listed: allFeeds, cache: cache, state: state, now: clock(), grace: settings.config.removedFeedGrace,
                                         dryRun: false)
            for line in gone.lines { console.err("prefetch: \(line)\n") }
            for error in gone.errors { console.err("prefetch: error: \(error)\n") }
            wakeup.removedFeeds = gone.graces
        }
        // The reader index of every feed whose files or state changed (and of one that has none
        // yet); a finished release's is written in its generation, which then goes live.
        let switching = ReleaseSwitch.due(feeds, cache: cache, state: (try? state.feedStates()) ?? [:])
        let switchNames = Set(switching.map(\.name))
        let indexed = feeds.filter { changed.contains($0.name) || switchNames.contains($0.name) || !cache.hasIndex(feed: $0.name) }
        if !indexed.isEmpty, let (after, snapshotAfter, cachedAfter) = planAfter ?? makePlan() {
            IndexWriter.write(indexed, plan: after, state: snapshotAfter, cached: cachedAfter, cache: cache, now: clock(), console: console)
        }
        let switched = ReleaseSwitch.apply(switching, cache: cache, console: console)
        // A generation just became the previous one: in 60 s it is room for what the cap holds back (SPEC §8).
        if wantsNextWakeup, !switching.isEmpty, (planAfter?.0 ?? plan).cache != nil,
           (planAfter?.0 ?? plan).feeds.contains(where: { $0.items.contains(reason: CacheBudget.cacheFullReason) }) {
            wakeup.generationSwitch = (at: clock(), feed: switching[0].name)
        }
        let seconds = Date().timeIntervalSince(started)
        if summary.bodyBytes > 0 || summary.placed > 0 {
            recordState {
                try state.recordRun(startedAt: Instant(started), finishedAt: clock(), bodyBytes: summary.bodyBytes,
                                    transferSeconds: summary.transferSeconds, placed: summary.placed, fresh: summary.fresh, failed: summary.failed)
            }
        }
        if summary.placed + summary.fresh + summary.failed > 0 { recordState { try state.pruneHistory() } }
        // The counters the metrics' `_total`s read: kept whether or not a metrics file is written.
        for (feed, tally) in summary.byFeed.sorted(by: { $0.key < $1.key }) {
            recordState { try state.addCounts(feed: feed, MetricsWriter.counts(tally)) }
        }
        var metricsError: String?
        if let metricsFile = settings.metricsFile {
            metricsError = MetricsWriter.write(to: metricsFile, feeds: allFeeds, cache: cache, state: state, settings: settings, now: clock(),
                                               conditions: conditions(), passSeconds: Date().timeIntervalSince(started), sources: sources,
                                               console: console)
        }
        if summary.diskFull {
            // Said of resumable partials only (SPEC §7); the others were discarded as their transfers stopped.
            let kept = PartialSweep.kept(feeds, state: state, cache: cache, bootID: settings.bootID)
            console.err("prefetch: error: disk full: transfers paused\(PartialSweep.keptNote(kept))\n")
        }
        // SPEC §5's exit rule: a metrics file that could not be written fails the pass (§6),
        // and so does a state write that failed (the cache could not be written).
        let unrecorded = reporter.stateErrors > stateErrorsBefore
        let sourcesStale = sources.contains { coveredSources.contains($0.label) && $0.state != .ok }
        let exit: ExitCode = summary.failed > 0 || summary.diskFull || !switched || metricsError != nil || unrecorded || sourcesStale
            ? .failure : .success
        let notDue = plan.feeds.reduce(0) { $0 + $1.items.allValues.count { $0.status != .due && $0.status != .fresh } }
        let reported = reporter.summary(summary, seconds: seconds, exit: exit, notDue: notDue)
        var rest: RestCheck?
        if let (stateBefore, cacheBefore) = stamps, exit == .success, plan.order.isEmpty, !removed, switching.isEmpty, !stopRequested(),
           let (after, _, _) = planAfter, (try? state.changeStamp()) == stateBefore {
            // No feed sources when a rest is kept (`DaemonCommand`): the pass's part is the whole wake-up.
            rest = RestCheck.after(after, state: stateBefore, cache: cacheBefore, wakeup: DaemonWakeup.next(wakeup), wake: wake)
        }
        return Outcome(exit: exit, wakeup: wakeup, metricsError: metricsError, wake: wake, rest: rest, reported: reported)
    }


    /// `plan()` once `snapshot` is emptied: the plan reads state again, and the old snapshot
    /// is not held beside the new one.
    private static func dropping(_ snapshot: inout StateSnapshot,
                                 then plan: () -> (Plan, StateSnapshot, CachedFiles)?) -> (Plan, StateSnapshot, CachedFiles)? {
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
