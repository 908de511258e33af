/// Writes the reader indexes (SPEC §6) of the feeds a command changed, from a plan made
/// after the change: `run` and `daemon` at the end of each pass, `gc` after it removed files.
enum IndexWriter {
    static func write(_ feeds: [Feed], plan: Plan, state: StateSnapshot, cached: Set<ResourceKey>, cache: CacheFolder, now: Instant,
                      console: Console) {
        let plans = Dictionary(plan.feeds.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for feed in feeds {
            guard let feedPlan = plans[feed.name] else { continue }
            let text = ReaderIndex.render(feed, plan: feedPlan, state: state, cached: cached,
                                          size: { CacheListing.size(feed: feed.name, path: $0.path, in: cache) }, updated: now)
            if case .failure(let error) = cache.writeIndex(feed: feed.name, text) {
                console.err("prefetch: warning: cannot write the reader index of \(feed.name): \(error)\n")
            }
        }
    }
}
