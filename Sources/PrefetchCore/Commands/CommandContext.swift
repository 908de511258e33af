/// What every command gets: its arguments, the environment and the console.
public struct CommandContext: Sendable {
    public let arguments: ParsedArguments
    public let environment: [String: String]
    public let console: Console

    /// Loads the configuration named by `--config` (which must exist) or the default one
    /// (which may be missing). Prints diagnostics; nil when the config has errors.
    func loadConfig() -> Config? {
        let explicit = arguments["--config"]
        let (config, diagnostics, source) = ConfigLoader.load(path: explicit ?? Config.defaultPath, required: explicit != nil)
        var sources: [String: SourceText] = [:]
        if let source, let file = config.file ?? explicit { sources[file] = source }
        console.report(diagnostics, sources: sources.isEmpty ? [explicit ?? Config.defaultPath: source ?? SourceText(bytes: [])] : sources)
        let errors = diagnostics.filter { $0.severity == .error }.count
        if errors > 0 {
            console.err("prefetch: \(errors) error\(errors == 1 ? "" : "s") in the configuration\n")
            return nil
        }
        var resolved = config
        if let feeds = arguments["--feeds"] { resolved.feeds = feeds }
        if let cache = arguments["--cache"] { resolved.cache = cache }
        return resolved
    }
}

extension CommandContext {
    /// The feeds `--feed NAME` selects (all without it); an unknown name is a usage error
    /// of `command`, with the closest name suggested.
    func selectedFeeds(_ feeds: [Feed], command: String) -> Result<[Feed], ExitCode> {
        guard let only = arguments["--feed"] else { return .success(feeds) }
        guard feeds.contains(where: { $0.name == only }) else {
            var message = "unknown feed '\(only)'"
            if let guess = Suggestion.closest(to: only, among: feeds.map(\.name)) { message += " (did you mean '\(guess)'?)" }
            return .failure(ExitCode(rawValue: Prefetch.fail(UsageError(message, command: command), console: console)) ?? .usage)
        }
        return .success(feeds.filter { $0.name == only })
    }

    /// Whether `--feed NAME`, when given, is one of `names`: a usage error of `command`
    /// otherwise, with the closest name suggested.
    func checkFeedName(among names: [String], command: String) -> Result<Void, ExitCode> {
        guard let only = arguments["--feed"], !names.contains(only) else { return .success(()) }
        var message = "unknown feed '\(only)'"
        if let guess = Suggestion.closest(to: only, among: names) { message += " (did you mean '\(guess)'?)" }
        return .failure(ExitCode(rawValue: Prefetch.fail(UsageError(message, command: command), console: console)) ?? .usage)
    }

    /// Every feed that runs: the feeds folder's and the sources' copies in force (SPEC §8);
    /// prints diagnostics; nil on any error of the local feeds.
    func loadFeeds(_ config: Config) -> [Feed]? {
        loadFeedSet(config)?.all
    }

    /// The local feeds (the feeds folder of `config`) and every feed source's copy in force;
    /// prints diagnostics; nil on any error of the local feeds. With `feed_sources`, a missing
    /// or empty feeds folder is no error and no warning: the sources may be all there is.
    func loadFeedSet(_ config: Config) -> FeedSet? {
        guard let local = loadLocalFeeds(config) else { return nil }
        return FeedSet.assemble(local: local, config: config)
    }

    /// The feeds folder's feeds alone; prints diagnostics; nil on any error.
    func loadLocalFeeds(_ config: Config) -> [Feed]? {
        if !config.feedSources.isEmpty, FileSystem.kind(of: config.feeds) == nil { return [] }
        var loaded = FeedLoader.load([config.feeds], config: config)
        if !config.feedSources.isEmpty {
            loaded.diagnostics.removeAll { $0.severity == .warning && $0.file == config.feeds && $0.location == nil }
        }
        console.report(loaded.diagnostics, sources: loaded.sources)
        if loaded.hasErrors {
            let errors = loaded.diagnostics.filter { $0.severity == .error }.count
            console.err("prefetch: \(errors) error\(errors == 1 ? "" : "s") in the feeds; nothing was done\n")
            return nil
        }
        return loaded.feeds
    }

    /// state.db for reading only (nil when there is none, or it cannot be read).
    func openStateReadOnly(cache: String, feeds: [Feed]) -> StateStore? {
        (try? StateStore.openReadOnly(CacheLayout.statePath(inCache: cache), currentURL: CacheSession.currentURLs(feeds))) ?? nil
    }

    /// The recorded state, or an empty one (with a warning) when state.db cannot be read.
    func readState(cache: String, feeds: [Feed]) -> StateSnapshot {
        readStateKeepingStore(cache: cache, feeds: feeds).snapshot
    }

    /// `readState`, with the store it was read from (nil: none, or unreadable), for what else
    /// a reader asks of it (`plan`'s local sources).
    func readStateKeepingStore(cache: String, feeds: [Feed]) -> (snapshot: StateSnapshot, store: StateStore?) {
        let path = CacheLayout.statePath(inCache: cache)
        do {
            guard let store = try StateStore.openReadOnly(path, currentURL: CacheSession.currentURLs(feeds)) else { return (StateSnapshot(), nil) }
            return (try store.snapshot(), store)
        } catch {
            console.err("\(path): warning: cannot read the state (\(error)); planning as if nothing were recorded\n")
            return (StateSnapshot(), nil)
        }
    }
}
