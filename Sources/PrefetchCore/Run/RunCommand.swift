import Foundation

/// `prefetch run`: one pass — plan, transfer what is due, verify, place, record, clean up.
enum RunCommand {
    static func run(_ context: CommandContext) -> ExitCode {
        let started = Date()
        guard let config = context.loadConfig() else { return .usage }
        let console = context.console
        let assumptions: Assumptions
        do {
            _ = try Clock.offset(environment: context.environment)
            assumptions = try context.arguments["--assume"].map(Assumptions.parse) ?? Assumptions()
        } catch {
            return ExitCode(rawValue: Prefetch.fail(UsageError(error.message, command: "run"), console: console)) ?? .usage
        }
        // Everything is checked before anything is touched (SPEC §5).
        guard var feeds = context.loadFeeds(config) else { return .usage }
        if let only = context.arguments["--feed"] {
            guard feeds.contains(where: { $0.name == only }) else {
                var message = "unknown feed '\(only)'"
                if let guess = Suggestion.closest(to: only, among: feeds.map(\.name)) { message += " (did you mean '\(guess)'?)" }
                return ExitCode(rawValue: Prefetch.fail(UsageError(message, command: "run"), console: console)) ?? .usage
            }
            feeds = feeds.filter { $0.name == only }
        }
        let stop = StopSignal()
        let cache: CacheFolder
        switch CacheFolder.open(config.cache) {
        case .success(let opened): cache = opened
        case .failure(let error):
            console.err("prefetch: error: \(error)\n")
            return .failure
        }
        switch cache.lock(wait: false) {
        case .success(true): break
        case .success(false):
            console.err("prefetch: another prefetch holds the cache lock (\(config.cache)/.prefetch/lock); if it is the daemon, send it SIGUSR1 to run now\n")
            return .locked
        case .failure(let error):
            console.err("prefetch: error: \(error)\n")
            return .failure
        }
        guard let state = openState(cache, console: console) else { return .failure }
        let clock = { (try? Clock.now(at: nil, environment: context.environment)) ?? Clock.realNow() }
        let probes = ConditionProbes()
        let conditions = { assumptions.applied(to: probes.snapshot(config: config, cache: config.cache)) }
        let machineID = MachineID.find(environment: context.environment, config: config)
        func makePlan() -> (Plan, StateSnapshot)? {
            let snapshot: StateSnapshot
            do { snapshot = try state.snapshot() } catch {
                console.err("prefetch: error: cannot read \(state.path): \(error)\n")
                return nil
            }
            let input = PlanInput(feeds: feeds, state: snapshot, cached: CacheListing.present(feeds, cache: config.cache),
                                  conditions: conditions(), now: clock(), machineID: machineID)
            return (Planner.plan(input), snapshot)
        }
        guard let (plan, snapshot) = makePlan() else { return .failure }

        // Jobs in the order the plan gives; each release is recorded as begun.
        let feedsByName = Dictionary(feeds.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        var jobs: [TransferJob] = []
        for feedPlan in plan.feeds {
            guard let feed = feedsByName[feedPlan.name] else { continue }
            let release = feedPlan.currentRelease ?? snapshot.feeds[feed.name]?.lastRelease ?? plan.now
            if feedPlan.items.contains(where: { $0.status == .due }), snapshot.feeds[feed.name]?.lastRelease != release {
                try? state.recordRelease(feed: feed.name, release: release)
            }
        }
        let resources = Dictionary(feeds.flatMap { feed in feed.resources.map { (ResourceKey(feed: feed.name, path: $0.path), (feed, $0)) } },
                                   uniquingKeysWith: { a, _ in a })
        let cached = CacheListing.present(feeds, cache: config.cache)
        for key in plan.order {
            guard let (feed, resource) = resources[key] else { continue }
            let recorded = snapshot.resources[key]
            let release = plan.feeds.first { $0.name == feed.name }?.currentRelease ?? snapshot.feeds[feed.name]?.lastRelease ?? plan.now
            let urlHash = ResourceURL.hash(of: resource.url)
            let sameURL = recorded?.urlHash == urlHash
            jobs.append(TransferJob(
                feed: feed, resource: resource, key: key, urlHash: urlHash, release: release,
                cachedValidators: cached.contains(key) && sameURL ? recorded?.validators : nil,
                partial: recorded?.partial,
                failures: (recorded?.failureRelease == release && sameURL) ? recorded?.failures ?? 0 : 0))
        }

        let mode: RunReporter.Mode = context.arguments.flags.contains("--json") ? .json : (console.colorOut ? .terminal : .plain)
        let reporter = RunReporter(mode: mode, quiet: context.arguments.flags.contains("--quiet"), console: console)
        let engine = TransferEngine(cache: cache, state: state, config: config, environment: context.environment,
                                    metered: conditions().metered, clock: clock, onEvent: reporter.handle)
        let timings = Dictionary(feeds.map { ($0.name, FeedTiming($0, machineID: machineID?.value)) }, uniquingKeysWith: { a, _ in a })
        var lastProbe = conditions()
        var lastProbeAt = Date()
        let summary = engine.run(jobs, pauseReason: { feed in
            let now = clock()
            if let timing = timings[feed.name], timing.windows.interval(containing: now) == nil { return "window closed" }
            if Date().timeIntervalSince(lastProbeAt) >= 5 {
                lastProbe = conditions()
                lastProbeAt = Date()
            }
            if feed.conditions.network == .unmetered && lastProbe.metered { return "network metered" }
            if feed.conditions.power == .ac && !lastProbe.onAC { return "on battery" }
            if feed.conditions.minBattery > 0, !lastProbe.onAC, let level = lastProbe.batteryLevel, level < feed.conditions.minBattery {
                return "battery \(level)% < \(feed.conditions.minBattery)%"
            }
            return nil
        }, stopRequested: { stop.received != nil })

        // Releases with nothing left to do are finished; then the clean-up of `gc`.
        if let (after, snapshotAfter) = makePlan() {
            for feedPlan in after.feeds where !feedPlan.items.contains(where: { [.due, .waiting, .backoff].contains($0.status) }) {
                if snapshotAfter.feeds[feedPlan.name]?.lastReleaseFinished == nil, snapshotAfter.feeds[feedPlan.name]?.lastRelease != nil {
                    try? state.recordReleaseFinished(feed: feedPlan.name, at: clock())
                }
            }
        }
        if stop.received == nil {
            let removals = GarbageCollector.collect(feeds: feeds, cache: config.cache, now: clock())
            for (removal, error) in GarbageCollector.apply(removals, cache: config.cache) {
                console.err("prefetch: warning: cannot remove \(removal.path): \(error)\n")
            }
            for removal in removals { if let key = removal.key { try? state.deleteResource(key) } }
        }
        let seconds = Date().timeIntervalSince(started)
        if summary.bodyBytes > 0 || summary.placed > 0 {
            try? state.recordRun(startedAt: Int64(started.timeIntervalSince1970), finishedAt: clock(), bodyBytes: summary.bodyBytes,
                                 transferSeconds: summary.transferSeconds, placed: summary.placed, fresh: summary.fresh, failed: summary.failed)
        }
        if summary.diskFull { console.err("prefetch: error: disk full: transfers paused; partial data kept for resume\n") }
        let exit: ExitCode = summary.failed > 0 || summary.diskFull ? .failure : .success
        let notDue = plan.feeds.reduce(0) { $0 + $1.items.filter { $0.status != .due && $0.status != .fresh }.count }
        reporter.summary(summary, seconds: seconds, exit: exit, notDue: notDue)
        return exit
    }

    /// Opens state.db for writing; one that cannot be read is moved aside and rebuilt
    /// (cached files stay and are revalidated; partials restart).
    static func openState(_ cache: CacheFolder, console: Console) -> StateStore? {
        let path = cache.statePath
        do {
            let store = try StateStore.openForWriting(path)
            _ = try store.snapshot()
            return store
        } catch {
            let aside = path + ".unreadable-\(Clock.realNow())"
            console.err("prefetch: warning: \(path) cannot be read (\(error)); moved to \(aside) and rebuilt\n")
            rename(path, aside)
            unlink(path + "-wal")
            unlink(path + "-shm")
            for name in cache.partialNames() { cache.removePartial(name) }
            do {
                return try StateStore.openForWriting(path)
            } catch {
                console.err("prefetch: error: cannot create \(path): \(error)\n")
                return nil
            }
        }
    }
}
