import Foundation

/// `prefetch verify`: re-hashes cached files against their recorded SHA-256 (SPEC §6: bit
/// rot on an SD card, a file changed behind prefetch's back). A file that no longer matches
/// is removed and its state forgotten, so the next run fetches it again.
enum VerifyCommand {
    static func run(_ context: CommandContext) -> ExitCode {
        let settings: Settings
        switch Settings.load(context, command: "verify") {
        case .success(let loaded): settings = loaded
        case .failure(let code): return code
        }
        let console = context.console
        guard var feeds = context.loadFeeds(settings.config) else { return .usage }
        let allFeeds = feeds
        switch context.selectedFeeds(allFeeds, command: "verify") {
        case .success(let selected): feeds = selected
        case .failure(let code): return code
        }
        let session: CacheSession
        switch CacheSession.open(settings.config, feeds: allFeeds, console: console,
                                 whenLocked: .refuse(hint: "if it is the daemon, it verifies by itself (every verify_every, default 7d, in its idle time)")) {
        case .success(let opened?): session = opened
        case .success(nil): return .success
        case .failure(let code): return code
        }
        let json = context.arguments.flags.contains("--json")
        let outcome = Verification.run(feeds, cache: session.cache, state: session.state, now: settings.now(), settings: settings,
                                       console: console, json: json)
        return outcome.mismatched > 0 || outcome.errors > 0 ? .failure : .success
    }
}
