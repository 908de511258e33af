/// `prefetch validate [FILE|DIR ...]`: check manifests, report every problem.
enum ValidateCommand {
    static func run(_ context: CommandContext) -> ExitCode {
        guard let config = context.loadConfig() else { return .usage }
        let paths = context.arguments.positionals.isEmpty ? [config.feeds] : context.arguments.positionals
        let loaded = FeedLoader.load(paths, config: config)
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
