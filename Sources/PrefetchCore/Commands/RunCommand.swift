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
        guard var feeds = context.loadFeeds(settings.config) else { return .usage }
        let allFeeds = feeds
        switch context.selectedFeeds(allFeeds, command: "run") {
        case .success(let selected): feeds = selected
        case .failure(let code): return code
        }
        let stop = StopSignal()
        let session: CacheSession
        switch CacheSession.open(settings.config, feeds: allFeeds, console: console,
                                 whenLocked: .refuse(hint: "if it is the daemon, send it SIGUSR1 to run now")) {
        case .success(let opened?): session = opened
        case .success(nil): return .success
        case .failure(let code): return code
        }
        let mode: RunReporter.Mode = context.arguments.flags.contains("--json") ? .json : (console.colorOut ? .terminal : .plain)
        let reporter = RunReporter(mode: mode, quiet: context.arguments.flags.contains("--quiet"), console: console)
        let pass = RunPass(feeds: feeds, allFeeds: allFeeds, settings: settings, cache: session.cache, state: session.state, console: console)
        return pass.execute(reporter: reporter, stopRequested: { stop.received != nil }).exit
    }
}
