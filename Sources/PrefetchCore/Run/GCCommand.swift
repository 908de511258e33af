/// `prefetch gc [--dry-run]`: removes expired files, unlisted ones (with `prune`) and
/// abandoned partials — never anything outside `CACHE/<feed>/` and `CACHE/.prefetch/`.
enum GCCommand {
    static func run(_ context: CommandContext) -> ExitCode {
        guard let config = context.loadConfig(), let feeds = context.loadFeeds(config) else { return .usage }
        let dryRun = context.arguments.flags.contains("--dry-run")
        let now: Instant
        do { now = try Clock.now(at: nil, environment: context.environment) } catch {
            return ExitCode(rawValue: Prefetch.fail(UsageError(error.message, command: "gc"), console: context.console)) ?? .usage
        }
        guard FileSystem.kind(of: config.cache) == .directory else {
            context.console.out("gc: nothing to remove (no cache at \(config.cache))\n")
            return .success
        }
        var lockHolder: CacheFolder?
        var store: StateStore?
        if !dryRun {
            switch CacheFolder.open(config.cache) {
            case .failure(let error):
                context.console.err("prefetch: error: \(error)\n")
                return .failure
            case .success(let cache):
                switch cache.lock(wait: false) {
                case .success(true): lockHolder = cache
                case .success(false):
                    context.console.err("prefetch: another prefetch holds the cache lock (\(config.cache)/.prefetch/lock); if it is the daemon, it cleans up after each pass\n")
                    return .locked
                case .failure(let error):
                    context.console.err("prefetch: error: \(error)\n")
                    return .failure
                }
                store = RunCommand.openState(cache, feeds: feeds, console: context.console)
            }
        }
        let removals = GarbageCollector.collect(feeds: feeds, cache: config.cache, now: now)
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
            for removal in removals { if let key = removal.key { try? store?.deleteResource(key) } }
        }
        out += "gc: \(removals.count) \(removals.count == 1 ? "file" : "files")" + (dryRun ? " would be removed\n" : " removed\n")
        context.console.out(out)
        withExtendedLifetime(lockHolder) {}
        return code
    }
}
