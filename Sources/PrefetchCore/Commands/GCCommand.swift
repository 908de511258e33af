/// `prefetch gc [--dry-run]`: removes expired files, unlisted ones (with `prune`) and
/// abandoned partials — never anything outside `CACHE/<feed>/` and `CACHE/.prefetch/`.
enum GCCommand {
    static func run(_ context: CommandContext) -> ExitCode {
        let settings: Settings
        switch Settings.load(context, command: "gc") {
        case .success(let loaded): settings = loaded
        case .failure(let code): return code
        }
        let config = settings.config
        guard let feeds = context.loadFeeds(config) else { return .usage }
        let dryRun = context.arguments.flags.contains("--dry-run")
        let now = settings.now()
        guard FileSystem.kind(of: config.cache) == .directory else {
            context.console.out("gc: nothing to remove (no cache at \(config.cache))\n")
            return .success
        }
        var session: CacheSession?
        if !dryRun {
            switch CacheSession.open(config, feeds: feeds, console: context.console,
                                     whenLocked: .refuse(hint: "if it is the daemon, it cleans up after each pass")) {
            case .success(let opened): session = opened
            case .failure(let code): return code
            }
        }
        // A writer's session, or for --dry-run the cache as it is (nothing created).
        guard let cache = session?.cache ?? CacheFolder.openExisting(config.cache) else {
            context.console.out("gc: nothing to remove (no cache at \(config.cache))\n")
            return .success
        }
        if !dryRun { ReleaseSwitch.lay(feeds, cache: cache, console: context.console) }  // a feed that changed `consistency`
        let removals = GarbageCollector.collect(feeds: feeds, cache: cache, now: now)
        var out = ""
        for removal in removals {
            out += (dryRun ? "would remove  " : "removed  ") + removal.path + "  (\(removal.reason))\n"
        }
        var code = ExitCode.success
        if !dryRun {
            for (removal, error) in GarbageCollector.apply(removals) {
                context.console.err("prefetch: error: cannot remove \(removal.path): \(error)\n")
                code = .failure
            }
            for removal in removals {
                guard let key = removal.key, let state = session?.state else { continue }
                do { try state.deleteResource(key) } catch {
                    context.console.err("prefetch: error: cannot record the removal of \(removal.path) in state.db: \(error)\n")
                    code = .failure
                }
            }
            IndexWriter.withdraw(removals, feeds: feeds, cache: cache, now: now, console: context.console)
            // The reader index of every feed that lost files, and of one whose index lists
            // files its folder does not hold (or misses some it does).
            let cached = CacheListing.present(feeds, in: cache)
            let changed = Set(removals.compactMap(\.feed)).union(IndexWriter.stale(feeds, cache: cache, cached: cached))
            if !changed.isEmpty, let state = session?.state, let snapshot = try? state.snapshot() {
                let plan = Planner.plan(PlanInput(feeds: feeds, state: snapshot, cached: cached,
                                                  conditions: ConditionProbes(environment: settings.environment).snapshot(config: config, cache: config.cache), now: now,
                                                  machineID: settings.machineID))
                IndexWriter.write(feeds.filter { changed.contains($0.name) }, plan: plan, state: snapshot, cached: cached, cache: cache,
                                  now: now, console: context.console)
            }
        }
        if let state = session?.state ?? context.openStateReadOnly(cache: config.cache, feeds: feeds) {
            let gone = FeedRemoval.apply(listed: feeds, cache: cache, state: state, now: now, grace: config.removedFeedGrace, dryRun: dryRun)
            for line in gone.lines { out += line + "\n" }
            for error in gone.errors {
                context.console.err("prefetch: error: \(error)\n")
                code = .failure
            }
        }
        out += "gc: \(removals.count) \(removals.count == 1 ? "file" : "files")" + (dryRun ? " would be removed\n" : " removed\n")
        context.console.out(out)
        withExtendedLifetime(session) {}  // the lock is held until here
        return code
    }
}
