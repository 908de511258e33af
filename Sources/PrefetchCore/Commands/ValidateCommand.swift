/// `prefetch validate [FILE|DIR ...]`: check manifests, report every problem.
enum ValidateCommand {
    static func run(_ context: CommandContext) -> ExitCode {
        guard let config = context.loadConfig() else { return .usage }
        let folderOnly = context.arguments.positionals.isEmpty
        let paths = folderOnly ? [config.feeds] : context.arguments.positionals
        // With feed sources the feeds folder may be missing or empty (SPEC §8).
        let sourcesOnly = folderOnly && !config.feedSources.isEmpty && FileSystem.kind(of: config.feeds) == nil
        var loaded = sourcesOnly ? LoadedFeeds() : FeedLoader.load(paths, config: config)
        if folderOnly && !config.feedSources.isEmpty {
            loaded.diagnostics.removeAll { $0.severity == .warning && $0.file == config.feeds && $0.location == nil }
        }
        context.console.report(loaded.diagnostics, sources: loaded.sources)
        let errors = loaded.diagnostics.filter { $0.severity == .error }.count
        let warnings = loaded.diagnostics.count - errors
        if errors > 0 {
            // The files that have errors, of the manifests read: "6 errors in 1 of 2 files".
            let failing = Set(loaded.diagnostics.filter { $0.severity == .error }.map(\.file)).count
            let files = loaded.fileCount > failing ? "\(failing) of \(count(loaded.fileCount, "file"))" : count(failing, "file")
            context.console.err("prefetch: \(count(errors, "error"))\(warnings > 0 ? ", \(count(warnings, "warning"))" : "") in \(files)\n")
            return .usage
        }
        // Without files named, the feed sources' copies in force too (read, never fetched).
        let set = folderOnly ? FeedSet.assemble(local: loaded.feeds, config: config) : FeedSet(local: loaded.feeds, sources: [])
        for view in set.sources {
            switch view.problem {
            case .unreadable(let reason)?: context.console.err("\(view.source.label): warning: \(reason)\n")
            case .nameTaken(let reason)?: context.console.err("\(view.source.label): warning: \(reason)\n")
            case nil: if view.copy == nil { context.console.err("\(view.source.label): warning: no copy in force yet (run fetches it)\n") }
            }
        }
        loaded.feeds = set.all
        var out = ""
        let width = loaded.feeds.map(\.name.count).max() ?? 0
        for feed in loaded.feeds {
            out += "ok  " + feed.name + String(repeating: " ", count: width - feed.name.count)
            out += "  \(count(feed.resources.count, "resource"))  \(feed.file)\n"
        }
        let resources = loaded.feeds.reduce(0) { $0 + $1.resources.count }
        out += "\(count(loaded.feeds.count, "feed")), \(count(resources, "resource")): valid"
        out += warnings > 0 ? " (\(count(warnings, "warning")))\n" : "\n"
        context.console.out(out)
        return .success
    }

    static func count(_ n: Int, _ noun: String) -> String {
        "\(n) \(noun)\(n == 1 ? "" : "s")"
    }
}
