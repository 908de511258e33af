/// A feed source as every command sees it (SPEC §8), from its copy in force alone: the feed
/// that copy gives, and why it cannot run when it cannot. Nothing is fetched here.
struct SourceView {
    let source: FeedSource
    /// The copy in force, when there is one this version can read.
    var copy: SourceCopy?
    /// The feed the copy in force gives, when it runs (nil: none, unreadable, name taken).
    var feed: Feed?
    /// The copy in force's feed name, also when it cannot run (a name taken).
    var feedName: String?
    /// Why the copy in force does not run.
    var problem: Problem?

    enum Problem: Equatable {
        /// This version cannot read it, or it no longer validates: it counts as never applied.
        case unreadable(String)
        /// A local feed (or an earlier source) has its feed's name: the source is stale.
        case nameTaken(String)
    }
}

/// Local feeds and the feeds of the sources' copies in force, together: what `plan`, `run`,
/// `status` and the daemon work on. Local feeds win a name; among sources, the earlier in
/// the config.
struct FeedSet {
    var local: [Feed]
    var sources: [SourceView]
    /// Every feed that runs: local ones first, then the sources', in the config's order.
    var all: [Feed] { local + sources.compactMap(\.feed) }

    /// Reads every source's copy in force from the cache at `config.cache`.
    static func assemble(local: [Feed], config: Config) -> FeedSet {
        var taken: [String: NameHolder] = [:]
        for feed in local { taken[feed.name] = .localFeed(path: feed.file) }
        let decoder = FeedDecoder(config: config)
        var views: [SourceView] = []
        for source in config.feedSources {
            var view = SourceView(source: source)
            switch SourceCopies.read(cache: config.cache, label: source.label, maxManifestSize: config.maxManifestSize) {
            case .none: break
            case .unreadable(let reason): view.problem = .unreadable(reason)
            case .copy(let copy):
                let (feed, diagnostics) = decoder.decode(copy.manifest, file: source.label, defaultName: source.defaultFeedName)
                if let feed {
                    view.copy = copy
                    view.feedName = feed.name
                    if let other = taken[feed.name] {
                        view.problem = .nameTaken(other.reason(feed.name))
                    } else {
                        taken[feed.name] = .source(label: source.label)
                        view.feed = feed
                    }
                } else {
                    let first = diagnostics.first { $0.severity == .error }
                    view.problem = .unreadable("the copy in force does not validate with this version of prefetch"
                                               + (first.map { ": " + ($0.location.map { "\($0.line):\($0.column): " } ?? "") + $0.message } ?? ""))
                }
            }
            views.append(view)
        }
        return FeedSet(local: local, sources: views)
    }

    /// Every feed name a `--feed` may give: local feeds' and every copy in force's.
    var knownNames: [String] { local.map(\.name) + sources.compactMap(\.feedName) }
}

/// A source's state as `status`, `plan`, the metrics and `run`'s exit status see it.
struct SourceStatus {
    enum State: String { case ok, stale, none }

    let view: SourceView
    let record: SourceState?
    let state: State
    /// Since when it is stale (nil unless `stale`).
    let staleSince: Instant?
    /// Why it is not ok (nil when ok).
    let error: String?

    init(_ view: SourceView, record: SourceState?, now: Instant) {
        self.view = view
        self.record = record
        if view.copy == nil {
            state = .none
            staleSince = nil
            switch view.problem {
            case .unreadable(let reason)?: error = reason
            default: error = record?.error ?? (record?.lastCheck == nil ? "not checked yet" : "never applied")
            }
        } else if case .nameTaken(let reason) = view.problem {
            state = .stale
            staleSince = record?.staleSince ?? now
            error = reason
        } else if let record, record.failures > 0 {
            state = .stale
            staleSince = record.staleSince ?? record.lastCheck ?? now
            error = record.error ?? "the last check failed"
        } else {
            state = .ok
            staleSince = nil
            error = nil
        }
    }

    var label: String { view.source.label }
}
