import Foundation

/// `prefetch daemon`: holds the cache lock for its lifetime and does what `run` does at
/// every wake-up — the next release, window opening, backoff end or embargo, and at least
/// once a minute to re-check conditions. SIGTERM/SIGINT: pause transfers resumably, exit 0.
/// SIGHUP: reload the feeds (a broken reload keeps the previous ones). SIGUSR1: run now.
enum DaemonCommand {

    static func run(_ context: CommandContext) -> ExitCode {
        let settings: Settings
        switch Settings.load(context, command: "daemon") {
        case .success(let loaded): settings = loaded
        case .failure(let code): return code
        }
        let config = settings.config
        let console = context.console
        guard var feeds = context.loadFeeds(config) else { return .usage }
        let signals = StopSignal(signals: [SIGTERM, SIGINT], also: [SIGHUP, SIGUSR1])
        // Another writer (a `run`, a `gc`) is waited for, not refused.
        let session: CacheSession
        switch CacheSession.open(config, feeds: feeds, console: console, whenLocked: .wait(giveUp: { signals.received != nil })) {
        case .success(let opened?): session = opened
        case .success(nil): return .success
        case .failure(let code): return code
        }
        let reporter = RunReporter(mode: console.colorOut ? .terminal : .plain, quiet: false, console: console, silentWhenIdle: true)
        console.out("prefetch daemon: \(feeds.count) feed\(feeds.count == 1 ? "" : "s") from \(config.feeds), cache \(config.cache)\n")
        let clock = { settings.now() }
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
            let pass = RunPass(feeds: feeds, allFeeds: feeds, settings: settings, cache: session.cache, state: session.state,
                               console: console, wantsNextWakeup: true)
            let outcome = pass.execute(reporter: reporter, stopRequested: { signals.received != nil })
            let now = clock()
            let wake = min(max(outcome.nextWakeup ?? now.advanced(bySeconds: RunPass.recheckSeconds), now.advanced(bySeconds: 1)),
                           now.advanced(bySeconds: RunPass.recheckSeconds))
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
