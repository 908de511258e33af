import Foundation

/// `prefetch daemon`: holds the cache lock for its lifetime and does what `run` does at
/// every wake-up — the next release, window opening, backoff end or embargo, and at least
/// once a minute to re-check conditions. SIGTERM/SIGINT: pause transfers resumably, exit 0.
/// SIGHUP: reload the feeds (a broken reload keeps the previous ones). SIGUSR1: run now.
enum DaemonCommand {
    /// Conditions are re-checked at least this often while nothing else is due.
    static let recheckSeconds: Int64 = 60

    static func run(_ context: CommandContext) -> ExitCode {
        guard let config = context.loadConfig() else { return .usage }
        let console = context.console
        do {
            _ = try Clock.offset(environment: context.environment)
            _ = try TransferEngine.requestedThreads(environment: context.environment)
        } catch {
            return ExitCode(rawValue: Prefetch.fail(UsageError(error.message, command: "daemon"), console: console)) ?? .usage
        }
        guard var feeds = context.loadFeeds(config) else { return .usage }
        let signals = StopSignal(signals: [SIGTERM, SIGINT], also: [SIGHUP, SIGUSR1])
        let cache: CacheFolder
        switch CacheFolder.open(config.cache) {
        case .success(let opened): cache = opened
        case .failure(let error):
            console.err("prefetch: error: \(error)\n")
            return .failure
        }
        // Another writer (a `run`, a `gc`) is waited for, not refused.
        var announced = false
        while true {
            switch cache.lock(wait: false) {
            case .success(true): break
            case .success(false):
                if !announced {
                    console.err("prefetch daemon: waiting for the cache lock held by another prefetch\n")
                    announced = true
                }
                if signals.received != nil { return .success }
                Thread.sleep(forTimeInterval: 0.5)
                continue
            case .failure(let error):
                console.err("prefetch: error: \(error)\n")
                return .failure
            }
            break
        }
        guard let state = RunCommand.openState(cache, feeds: feeds, console: console) else { return .failure }
        let reporter = RunReporter(mode: console.colorOut ? .terminal : .plain, quiet: false, console: console, silentWhenIdle: true)
        console.out("prefetch daemon: \(feeds.count) feed\(feeds.count == 1 ? "" : "s") from \(config.feeds), cache \(config.cache)\n")
        let clock = { (try? Clock.now(at: nil, environment: context.environment)) ?? Clock.realNow() }
        while signals.received == nil {
            if signals.take(SIGHUP) {
                let loaded = FeedLoader.load([config.feeds], config: config)
                console.report(loaded.diagnostics, sources: loaded.sources)
                if loaded.hasErrors {
                    console.err("prefetch daemon: reload failed; keeping the previous feeds\n")
                } else {
                    feeds = loaded.feeds
                    console.out("prefetch daemon: reloaded \(feeds.count) feed\(feeds.count == 1 ? "" : "s")\n")
                }
            }
            _ = signals.take(SIGUSR1)
            let pass = RunPass(feeds: feeds, allFeeds: feeds, config: config, cache: cache, state: state, environment: context.environment,
                               assumptions: Assumptions(), console: console, wantsNextWakeup: true)
            let outcome = pass.execute(reporter: reporter, stopRequested: { signals.received != nil })
            let now = clock()
            let wake = min(max(outcome.nextWakeup ?? now.advanced(bySeconds: recheckSeconds), now.advanced(bySeconds: 1)),
                           now.advanced(bySeconds: recheckSeconds))
            // Sleep in small steps so a signal is acted on at once.
            while signals.received == nil, clock() < wake {
                if signals.take(SIGUSR1) { break }
                if signals.has(SIGHUP) { break }  // taken at the top of the loop
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        console.out("prefetch daemon: stopped (\(signals.received == SIGINT ? "SIGINT" : "SIGTERM")); partial data kept for resume\n")
        return .success
    }
}
