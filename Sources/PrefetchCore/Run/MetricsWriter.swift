import Foundation

/// Replaces the metrics file (SPEC §6) after a pass of `run` or `daemon`: every loaded
/// feed's figures from a plan made now, state.db's counters (which never go back) and
/// held origins, then `Metrics.render`, written atomically beside the file under a hidden
/// temporary name that does not end in `.prom` (node_exporter's textfile collector reads
/// only `*.prom`). A file that cannot be written is an error of the pass (SPEC §6: `run`
/// exits 1, the daemon's status and log say so each pass): monitoring that silently
/// stopped is worse than none.
enum MetricsWriter {
    /// Writes the file; the error, said on stderr, when it could not be.
    /// `conditions`: the pass's last readings (the plan's next wake-ups depend on them).
    static func write(to path: String, feeds: [Feed], cache: CacheFolder, state: StateStore, settings: Settings, now: Instant,
                      conditions: ConditionSnapshot, passSeconds: Double, sources: [SourceStatus] = [], console: Console) -> String? {
        func failed(_ reason: String) -> String {
            let message = "cannot write the metrics file \(path): \(reason)"
            console.err("prefetch: error: \(message)\n")
            return message
        }
        let snapshot: StateSnapshot
        let counts: [String: [String: UInt64]]
        let everHeld: [String]
        do {
            snapshot = try state.snapshot()
            counts = try state.counts()
            everHeld = try state.originsEverHeld()
        } catch {
            return failed("cannot read \(state.path): \(error)")
        }
        let cached = CacheListing.present(feeds, in: cache)
        let machineID = settings.machineID?.usableValue
        var input = PlanInput(feeds: feeds, state: snapshot, cached: cached, conditions: conditions, now: now, machineID: settings.machineID,
                              partialFiles: CacheListing.partialFiles(snapshot, in: cache), bootID: settings.bootID)
        input.measureCache(settings.config.maxCacheSize, in: cache)
        let plan = Planner.plan(input)
        var lines: [Metrics.Feed] = []
        for (feed, feedPlan) in zip(feeds, plan.feeds) {
            var files = 0
            var bytes: UInt64 = 0
            for (position, resource) in feed.resources.enumerated() {
                guard cached.contains(feed: feed.name, position: position) else { continue }
                let key = ResourceKey(feed: feed.name, path: resource.path)
                files += 1
                bytes += snapshot.resources[key]?.length ?? CacheListing.size(feed: feed.name, path: resource.path, in: cache) ?? 0
            }
            let feedCounts = counts[feed.name] ?? [:]
            let missed = Starvation.count(feed, snapshot: snapshot, machineID: machineID, now: now).missed
            lines.append(Metrics.Feed(
                name: feed.name, files: files, bytes: bytes,
                transfers: Dictionary(uniqueKeysWithValues: Metrics.results.map { ($0, feedCounts["transfers_" + $0] ?? 0) }),
                bodyBytes: feedCounts["body_bytes"] ?? 0,
                reusedBytes: Dictionary(uniqueKeysWithValues: Metrics.reuses.map { ($0, feedCounts["reused_bytes_" + $0] ?? 0) }),
                lastSuccess: snapshot.feeds[feed.name]?.lastSuccess,
                nextScheduledWork: feedPlan.nextScheduledWork(at: now), missedWindows: missed, starved: missed >= settings.config.starvedAfter,
                releaseComplete: ReaderIndex.isComplete(feed, plan: feedPlan, state: snapshot, cached: cached)))
        }
        let origins = everHeld.map { (origin: $0, held: snapshot.originHolds[$0] != nil) }
        let text = Metrics.render(Metrics.Snapshot(feeds: lines, origins: origins, lastRun: now, lastRunSeconds: passSeconds,
                                                    sources: sources.map { ($0.label, $0.state == .ok, $0.record?.lastSuccess) },
                                                    cache: plan.cache.map { (used: $0.used, max: $0.maxBytes) }))
        let folder = (path as NSString).deletingLastPathComponent
        let temporary = (folder.isEmpty ? "" : folder + "/") + "." + (path as NSString).lastPathComponent + ".tmp"
        if case .failure(let error) = FileSystem.replaceFile(path, with: Array(text.utf8), temporary: temporary) {
            return failed("\(error)")
        }
        return nil
    }

    /// A pass's transfers as state.db's counters: `transfers_<result>` and `body_bytes`.
    static func counts(_ tally: FeedTally) -> [String: UInt64] {
        var counts = ["body_bytes": tally.bodyBytes]
        if tally.reusedBytes > 0 { counts["reused_bytes_cache"] = tally.reusedBytes }
        if tally.deltaReusedBytes > 0 { counts["reused_bytes_delta"] = tally.deltaReusedBytes }
        for (result, count) in tally.results { counts["transfers_" + result.rawValue] = UInt64(count) }
        return counts
    }
}
