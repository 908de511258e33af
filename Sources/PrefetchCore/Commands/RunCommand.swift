import Foundation

/// `prefetch run`: one pass — plan, transfer what is due, verify, place, record, clean up.
enum RunCommand {
    static func run(_ context: CommandContext) -> ExitCode {
        let settings: Settings
        switch Settings.load(context, command: "run") {
        case .success(let loaded): settings = loaded
        case .failure(let code): return code
        }
        let console = context.console
        // Everything is checked before anything is touched (SPEC §5).
        guard let local = context.loadLocalFeeds(settings.config) else { return .usage }
        let before = FeedSet.assemble(local: local, config: settings.config)
        // A `--feed` neither a local feed nor a copy in force has: exit 2 before anything is fetched.
        if case .failure(let code) = context.checkFeedName(among: before.knownNames, command: "run") { return code }
        let stop = StopSignal()
        let session: CacheSession
        switch CacheSession.open(settings.config, feeds: before.all, console: console,
                                 whenLocked: .refuse(hint: "if it is the daemon, send it SIGUSR1 to run now")) {
        case .success(let opened?): session = opened
        case .success(nil): return .success
        case .failure(let code): return code
        }
        // The due sources are checked once, before planning (SPEC §8).
        let sources = SourcePass.run(settings: settings, local: local, cache: session.cache, state: session.state, console: console, all: false,
                                     stopRequested: { stop.received != nil })
        for problem in sources.problems { console.err("prefetch: \(problem)\n") }
        let allFeeds = sources.feeds.all
        let only = context.arguments["--feed"]
        let feeds = only.map { name in allFeeds.filter { $0.name == name } } ?? allFeeds
        let mode: RunReporter.Mode = context.arguments.flags.contains("--json") ? .json : (console.colorOut ? .terminal : .plain)
        let reporter = RunReporter(mode: mode, quiet: context.arguments.flags.contains("--quiet"), console: console)
        var pass = RunPass(feeds: feeds, allFeeds: allFeeds, settings: settings, cache: session.cache, state: session.state, console: console)
        pass.sources = sources.statuses
        pass.coveredSources = sources.covered(by: only)
        return pass.execute(reporter: reporter, stopRequested: { stop.received != nil }).exit
    }
}
