import Foundation

/// `prefetch status`: what is cached per feed, partial transfers, the next wake-up. Reads only.
enum StatusCommand {
    static func run(_ context: CommandContext) -> ExitCode {
        let settings: Settings
        switch Settings.load(context, command: "status") {
        case .success(let loaded): settings = loaded
        case .failure(let code): return code
        }
        let config = settings.config
        guard let set = context.loadFeedSet(config) else { return .usage }
        let feeds = set.all
        let now = settings.now()
        let snapshot = context.readState(cache: config.cache, feeds: feeds)
        let sourceRecords = (try? context.openStateReadOnly(cache: config.cache, feeds: feeds)?.sourceStates()) ?? [:]
        let cache = CacheFolder.openExisting(config.cache)  // reads only: creates nothing
        let cached = CacheListing.present(feeds, in: cache)
        let partialFiles = CacheListing.partialFiles(snapshot, in: cache)
        // What the cached files take (SPEC §8), shown with or without a cap.
        let usage = CacheUsage.measure(cache, feeds: feeds, recorded: snapshot.feeds.keys)
        let plan = Planner.plan(PlanInput(feeds: feeds, state: snapshot, cached: cached,
                                          conditions: ConditionProbes(environment: settings.environment).snapshot(config: config, cache: config.cache), now: now,
                                          machineID: settings.machineID, partialFiles: partialFiles, bootID: settings.bootID,
                                          maxCacheSize: config.maxCacheSize?.bytes, cacheUsage: usage))
        let json = context.arguments.flags.contains("--json")
        var out = ""
        for (feed, feedPlan) in zip(feeds, plan.feeds) {
            let status = FeedStatus(feed, feedPlan, snapshot: snapshot, cached: cached, partialFiles: partialFiles, cache: cache,
                                    settings: settings, now: now)
            out += json ? status.json() : status.text()
        }
        out += cacheUse(usage, maxCacheSize: config.maxCacheSize, json: json)
        let local = ZoneClock(TimeZone.current)
        // Feed sources (SPEC §8): every one, from its copy in force and its record.
        for view in set.sources {
            let status = SourceStatus(view, record: sourceRecords[view.source.label], now: now)
            out += json ? SourceReport.json(status, clock: local) : SourceReport.text(status, clock: local)
        }
        out += heldOrigins(snapshot.originHolds, now: now, clock: local, json: json)
        context.console.out(out)
        return .success
    }

    /// The cache's use against max_cache_size (SPEC §8): a JSON line always, a text line
    /// only when a cap is set.
    private static func cacheUse(_ usage: CacheUsage, maxCacheSize: ByteSize?, json: Bool) -> String {
        if json {
            var line = JSONObject()
            line.add("type", "cache")
            line.add("max_cache_size", maxCacheSize?.bytes)
            line.add("used", usage.used)
            return line.line + "\n"
        } else if let cap = maxCacheSize {
            return "cache: \(ByteSize.format(usage.used)) used of max_cache_size \(ByteSize.format(cap.bytes))\n"
        }
        return ""
    }

    /// Held origins (SPEC §6), after the feeds and sources: in JSON every one recorded, in
    /// text whether its hold lasts or the next request probes it.
    private static func heldOrigins(_ holds: [String: OriginHold], now: Instant, clock local: ZoneClock, json: Bool) -> String {
        var out = ""
        for hold in holds.values.sorted(by: { $0.origin < $1.origin }) {
            if json {
                var line = JSONObject()
                line.add("type", "origin")
                line.add("origin", hold.origin)
                line.add("held", true)
                line.add("reason", hold.reason)
                line.add("until", TimeFormat.rfc3339(hold.until, clock: local))
                line.add("since", TimeFormat.rfc3339(hold.since, clock: local))
                line.add("failures", Int64(hold.failures))
                out += line.line + "\n"
            } else if hold.until > now {
                out += "origin \(hold.origin) held until \(TimeFormat.local(hold.until, clock: local)): \(hold.reason)\n"
            } else {
                out += "origin \(hold.origin) held since \(TimeFormat.local(hold.since, clock: local)): \(hold.reason); the next request probes it\n"
            }
        }
        return out
    }

    /// What `status` says of one feed.
    private struct FeedStatus {
        let feed: Feed
        let now: Instant
        let files: Int
        let bytes: UInt64
        /// Partials as the run sees them (SPEC §7): only resumable ones, with where they resume.
        let partials: [(path: String, point: ResumePoint)]
        /// Delta partials kept for resume (SPEC §9): no offset to resume from, the bytes still missing.
        let deltas: [(path: String, record: DeltaPartialRecord)]
        let lastError: String?
        let lastErrorKey: String
        let lastSuccess: Instant?
        let nextWakeup: Instant?
        let clock: ZoneClock
        /// Starvation (SPEC §6): windows missed in a row while a release was pending.
        let starvation: Starvation.Count
        let missedReason: String?
        let starved: Bool
        let starvedAfter: Int
        /// `consistency: release` (SPEC §6): the generation readers see, and one being staged.
        let generation: (live: Int, staged: Int?)?

        init(_ feed: Feed, _ feedPlan: FeedPlan, snapshot: StateSnapshot, cached: CachedFiles, partialFiles: [ResourceKey: PartialFile],
             cache: CacheFolder?, settings: Settings, now: Instant) {
            self.feed = feed
            self.now = now
            var files = 0
            var bytes: UInt64 = 0
            var partials: [(path: String, point: ResumePoint)] = []
            var deltas: [(path: String, record: DeltaPartialRecord)] = []
            var lastError: String?
            var lastErrorKey = ""
            for (position, resource) in feed.resources.enumerated() {
                let key = ResourceKey(feed: feed.name, path: resource.path)
                let state = snapshot.resources[key]
                if cached.contains(feed: feed.name, position: position) {
                    files += 1
                    bytes += state?.length ?? cache.flatMap { CacheListing.size(feed: feed.name, path: resource.path, in: $0) } ?? 0
                }
                if let state, state.partial != nil,
                   let point = ResumePoint.of(resource, state: state, identity: resource.url.identityHash, file: partialFiles[key],
                                              bootID: settings.bootID) {
                    partials.append((resource.path, point))
                }
                if !snapshot.deltaPartials.isEmpty, let record = snapshot.deltaPartials[key] { deltas.append((resource.path, record)) }
                if let error = state?.lastError, state?.failures ?? 0 > 0 || state?.permanentFailure == true {
                    lastError = error
                    lastErrorKey = resource.path
                }
            }
            self.files = files
            self.bytes = bytes
            self.partials = partials
            self.deltas = deltas
            self.lastError = lastError
            self.lastErrorKey = lastErrorKey
            let feedState = snapshot.feeds[feed.name]
            lastSuccess = feedState?.lastSuccess ?? feed.resources.compactMap { snapshot.resources[ResourceKey(feed: feed.name, path: $0.path)]?.lastSuccess }.max()
            let nextWakeup = feedPlan.nextScheduledWork(at: now)  // the per-feed rule, not the daemon's (`DaemonWakeup`)
            self.nextWakeup = nextWakeup
            clock = feedPlan.clock
            let starvation = Starvation.count(feed, snapshot: snapshot, machineID: settings.machineID?.usableValue, now: now)
            self.starvation = starvation
            missedReason = Starvation.reason(starvation, seen: feedState?.missedReason, at: feedState?.missedReasonAt)
            let starvedAfter = settings.config.starvedAfter
            self.starvedAfter = starvedAfter
            starved = starvation.missed >= starvedAfter
            var generation: (live: Int, staged: Int?)?
            if let cache, case .generations(let live, let staging, _) = cache.layout(of: feed.name) { generation = (live, staging) }
            self.generation = generation
        }

        /// The feed's line of `status --json`.
        func json() -> String {
            var line = JSONObject()
            line.add("type", "feed")
            line.add("feed", feed.name)
            line.add("files", Int64(files))
            line.add("bytes", bytes)
            line.add("last_success", lastSuccess.map { TimeFormat.rfc3339($0, clock: clock) })
            line.add("last_error", lastError.map { "\(lastErrorKey): \($0)" })
            line.add("partials", objects: partials.map { partial in
                var object = JSONObject()
                object.add("path", partial.path)
                object.add("bytes_on_disk", partial.point.bytesOnDisk)
                object.add("resume_from", partial.point.resumeFrom)
                object.add("total", partial.point.total)
                return object
            } + deltas.map { delta in
                // A delta partial resumes from no offset: it is scanned again as a seed (SPEC §9).
                var object = JSONObject()
                object.add("path", delta.path)
                object.add("bytes_on_disk", delta.record.length - min(delta.record.length, delta.record.missing))
                object.add("resume_from", nil as UInt64?)
                object.add("total", delta.record.length)
                object.add("delta", true)
                object.add("missing", delta.record.missing)
                return object
            })
            line.add("next_wakeup", nextWakeup.map { TimeFormat.rfc3339($0, clock: clock) })
            line.add("missed_windows", Int64(starvation.missed))
            line.add("starved", starved)
            line.add("missed_reason", missedReason)
            line.add("consistency", feed.consistency.rawValue)
            line.add("generation", generation.map { Int64($0.live) })
            line.add("staged_generation", generation?.staged.map { Int64($0) })
            return line.line + "\n"
        }

        /// The feed's lines of `status`.
        func text() -> String {
            var out = "\(feed.name): \(files) of \(feed.resources.count) files cached, \(ByteSize.format(bytes))\n"
            out += "  last success: " + (lastSuccess.map { TimeFormat.local($0, clock: clock) } ?? "never") + "\n"
            if let lastError { out += "  last error: \(lastErrorKey): \(lastError)\n" }
            if starvation.missed > 0 {
                out += "  \(starvation.missed) \(starvation.missed == 1 ? "window" : "windows") missed: \(missedReason ?? "")"
                    + (starved ? " (starved: \(starvedAfter) or more in a row)" : "") + "\n"
            }
            if let generation {
                out += "  release: generation \(generation.live) live"
                    + (generation.staged.map { ", generation \($0) staged (readers see it when the release finishes)" } ?? "") + "\n"
            } else if feed.consistency == .release {
                out += "  release: no generation yet (the next run lays it out)\n"
            }
            for (path, point) in partials {
                let from = point.resumeFrom
                let progress = point.total.map { " of \(ByteSize.format($0)) (\(Int(Double(from) * 100 / Double(max(1, $0))))%)" } ?? ""
                out += "  partial: \(path) resumes from \(ByteSize.format(from))\(progress), \(ByteSize.format(point.bytesOnDisk)) on disk\n"
            }
            for (path, record) in deltas {
                out += "  partial: \(path) delta, \(ByteSize.format(record.missing)) of \(ByteSize.format(record.length)) still missing\n"
            }
            out += "  next wake-up: " + (nextWakeup.map { $0 <= now ? "now (work is due)" : TimeFormat.local($0, clock: clock) } ?? "none") + "\n"
            return out
        }
    }
}
