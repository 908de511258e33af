/// Writes the reader indexes (SPEC §6) of the feeds a command changed, from a plan made
/// after the change: `run` and `daemon` at the end of each pass, `gc` after it removed files.
enum IndexWriter {
    static func write(_ feeds: [Feed], plan: Plan, state: StateSnapshot, cached: CachedFiles, cache: CacheFolder, now: Instant,
                      console: Console) {
        let plans = Dictionary(plan.feeds.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for feed in feeds {
            guard let feedPlan = plans[feed.name] else { continue }
            let written = cache.writeIndex(feed: feed.name) { write in
                ReaderIndex.render(feed, plan: feedPlan, state: state, cached: cached,
                                   size: { CacheListing.size(feed: feed.name, path: $0.path, in: cache) }, updated: now, into: write)
            }
            if case .failure(let error) = written {
                console.err("prefetch: warning: cannot write the reader index of \(feed.name): \(error)\n")
            }
        }
    }

    /// The feeds whose index (as the writer sees it) lists other files than the feed's folder
    /// holds of its listed resources (`cached`), or is not an index: one a crash or an
    /// earlier version left behind, which `gc` rewrites although it removed nothing. A feed
    /// without an index is not one (the next pass writes it).
    static func stale(_ feeds: [Feed], cache: CacheFolder, cached: CachedFiles) -> Set<String> {
        var stale = Set<String>()
        for feed in feeds {
            guard let bytes = cache.readIndex(feed: feed.name, view: .writer) else { continue }
            let present = Set(feed.resources.indices.lazy.filter { cached.contains(feed: feed.name, position: $0) }.map { feed.resources[$0].path })
            if ReaderIndex.filePaths(bytes) != present { stale.insert(feed.name) }
        }
        return stale
    }

    /// Corrects the live generation's index of a `consistency: release` feed from which
    /// `withdrawn` went while a release is staged beside it (`verify`, an expiry).
    static func withdraw(_ withdrawn: [(path: String, state: String, reason: String)], feed: Feed, cache: CacheFolder, now: Instant,
                         console: Console) {
        guard !withdrawn.isEmpty, let live = cache.readIndex(feed: feed.name, view: .live),
              let bytes = ReaderIndex.withdrawing(withdrawn, from: live, updated: now, clock: ZoneClock(feed.timeZone)) else { return }
        if case .failure(let error) = cache.writeIndex(feed: feed.name, bytes, view: .live) {
            console.err("prefetch: warning: cannot write the live reader index of \(feed.name): \(error)\n")
        }
    }

    /// The same for what `gc` removed from live generations (expired files).
    static func withdraw(_ removals: [GarbageCollector.Removal], feeds: [Feed], cache: CacheFolder, now: Instant, console: Console) {
        for feed in feeds {
            let gone = removals.compactMap { $0.liveOf?.feed == feed.name ? $0.liveOf?.path : nil }
            withdraw(gone.map { ($0, "expired", "expired") }, feed: feed, cache: cache, now: now, console: console)
        }
    }
}
