/// What `run` and each daemon pass do with the feed sources before planning (SPEC §8): check
/// the due ones (every one after SIGHUP), then read every copy in force into the feed set,
/// record which sources cannot run (a name taken), forget sources the config dropped, and
/// say which are not ok.
enum SourcePass {
    struct Result {
        let feeds: FeedSet
        let statuses: [SourceStatus]

        /// The sources `run --feed only` covers (all of them without `--feed`): the one whose
        /// copy in force is that feed.
        func covered(by only: String?) -> Set<String> {
            Set(statuses.filter { only == nil || $0.view.feedName == only }.map(\.label))
        }

        /// One line per source that is not ok, for the log and the daemon's status.
        var problems: [String] {
            statuses.compactMap { status in
                switch status.state {
                case .ok: return nil
                case .stale:
                    let since = status.staleSince.map { TimeFormat.rfc3339($0, clock: ZoneClock(.current)) } ?? "?"
                    return "source \(status.label) stale since \(since): \(status.error ?? "")"
                case .none: return "source \(status.label) has no copy in force: \(status.error ?? "")"
                }
            }
        }
    }

    static func run(settings: Settings, local: [Feed], cache: CacheFolder, state: StateStore, console: Console, all: Bool,
                    stopRequested: () -> Bool = { false }) -> Result {
        let config = settings.config
        let labels = config.feedSources.map(\.label)
        if !config.feedSources.isEmpty {
            var localNames: [String: NameHolder] = [:]
            for feed in local { localNames[feed.name] = .localFeed(path: feed.file) }
            let checker = SourceCheck(config: config, environment: settings.environment, console: console,
                                      machineID: settings.machineID?.usableValue)
            checker.run(all: all, localNames: localNames, cache: cache, state: state, now: { settings.now() }, stopRequested: stopRequested)
        }
        let set = FeedSet.assemble(local: local, config: config)
        let now = settings.now()
        do {
            for view in set.sources {
                if case .nameTaken(let reason)? = view.problem {
                    // The reason as status says it; the source's feed does not run while the clash lasts.
                    console.err("\(view.source.label): error: \(reason)\n")
                    try state.recordSourceFailure(view.source.label, error: reason, at: now, checked: false, retryAt: nil)
                } else if view.copy != nil {
                    try state.clearSourceStale(view.source.label)
                }
            }
            try state.forgetSources(except: Set(labels))
        } catch {
            console.err("prefetch: error: cannot record state: \(error)\n")
        }
        cache.removeSourceCopies(except: labels)
        let records = (try? state.sourceStates()) ?? [:]
        let statuses = set.sources.map { SourceStatus($0, record: records[$0.source.label], now: now) }
        return Result(feeds: set, statuses: statuses)
    }
}
