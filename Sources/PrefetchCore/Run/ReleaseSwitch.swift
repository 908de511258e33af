/// What a writer does for `consistency: release` (SPEC §6) around a pass: lays each feed's
/// folder out for its mode before anything is planned, and, once a release is finished,
/// switches readers to the generation it was staged in — after its reader index was
/// written there.
enum ReleaseSwitch {
    /// Lays every feed's folder out for its `consistency` (a feed that changed mode keeps
    /// every file); what cannot be done is said, and the feed goes on as it is laid out.
    static func lay(_ feeds: [Feed], cache: CacheFolder, console: Console) {
        for feed in feeds {
            if case .failure(let error) = cache.lay(feed.name, for: feed.consistency) {
                console.err("prefetch: warning: cannot lay out \(feed.name) for consistency: \(feed.consistency.rawValue): \(error)\n")
            }
        }
    }

    /// The `consistency: release` feeds with a release staged that `state` records as
    /// finished: they switch once their index is written.
    static func due(_ feeds: [Feed], cache: CacheFolder, state: [String: FeedState]) -> [Feed] {
        feeds.filter { feed in
            guard feed.consistency == .release, state[feed.name]?.lastReleaseFinished != nil,
                  case .generations(_, _?, _) = cache.layout(of: feed.name) else { return false }
            return true
        }
    }

    /// Switches each of `feeds` (from `due`) to its staged generation. Returns whether all did.
    static func apply(_ feeds: [Feed], cache: CacheFolder, console: Console) -> Bool {
        var switched = true
        for feed in feeds {
            if case .failure(let error) = cache.switchGeneration(feed.name) {
                console.err("prefetch: error: cannot switch \(feed.name) to its new release: \(error)\n")
                switched = false
            }
        }
        return switched
    }
}
