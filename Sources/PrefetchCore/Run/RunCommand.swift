import Foundation

/// `prefetch run`: one pass — plan, transfer what is due, verify, place, record, clean up.
enum RunCommand {
    static func run(_ context: CommandContext) -> ExitCode {
        guard let config = context.loadConfig() else { return .usage }
        let console = context.console
        let assumptions: Assumptions
        do {
            _ = try Clock.offset(environment: context.environment)
            _ = try TransferEngine.requestedThreads(environment: context.environment)
            assumptions = try context.arguments["--assume"].map(Assumptions.parse) ?? Assumptions()
        } catch {
            return ExitCode(rawValue: Prefetch.fail(UsageError(error.message, command: "run"), console: console)) ?? .usage
        }
        // Everything is checked before anything is touched (SPEC §5).
        guard var feeds = context.loadFeeds(config) else { return .usage }
        let allFeeds = feeds
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
        guard let state = openState(cache, feeds: allFeeds, console: console) else { return .failure }
        let mode: RunReporter.Mode = context.arguments.flags.contains("--json") ? .json : (console.colorOut ? .terminal : .plain)
        let reporter = RunReporter(mode: mode, quiet: context.arguments.flags.contains("--quiet"), console: console)
        let pass = RunPass(feeds: feeds, allFeeds: allFeeds, config: config, cache: cache, state: state, environment: context.environment,
                           assumptions: assumptions, console: console)
        return pass.execute(reporter: reporter, stopRequested: { stop.received != nil }).exit
    }

    /// Opens state.db for writing; one that cannot be read is moved aside and rebuilt
    /// (cached files stay and are revalidated; partials restart). `feeds` give the URLs an
    /// older schema's records are re-keyed by.
    static func openState(_ cache: CacheFolder, feeds: [Feed], console: Console) -> StateStore? {
        let path = cache.statePath
        do {
            let store = try StateStore.openForWriting(path, currentURL: Feed.urlLookup(feeds))
            _ = try store.snapshot()
            return store
        } catch {
            switch cache.moveStateAside(at: Clock.realNow().seconds) {
            case .success(let aside):
                console.err("prefetch: warning: \(path) cannot be read (\(error)); moved to \(cache.path)/.prefetch/\(aside) and rebuilt\n")
            case .failure(let moveError):
                console.err("prefetch: error: \(path) cannot be read (\(error)) nor moved aside (\(moveError))\n")
                return nil
            }
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
