import Foundation

/// The cache as a writer (`run`, `daemon`, `gc`) opens it: the folder (created as needed),
/// its lock, and state.db. One way to do it for every writer.
struct CacheSession {
    let cache: CacheFolder
    let state: StateStore

    /// What to do when another writer holds the lock.
    enum WhenLocked {
        /// Exit 75, saying `hint` (what to do instead).
        case refuse(hint: String)
        /// Wait for it (the daemon), saying so once (and telling `waiting`, once); `giveUp` is
        /// asked every half second.
        case wait(waiting: () -> Void = {}, giveUp: () -> Bool)
    }

    /// Opens the cache at `config.cache` for `feeds`; prints what went wrong and returns the
    /// exit status when it cannot (nil with `.success`: the wait was given up).
    static func open(_ config: Config, feeds: [Feed], console: Console, whenLocked: WhenLocked) -> Result<CacheSession?, ExitCode> {
        let cache: CacheFolder
        switch CacheFolder.open(config.cache) {
        case .success(let opened): cache = opened
        case .failure(let error):
            console.err("prefetch: error: \(error)\n")
            return .failure(.failure)
        }
        var announced = false
        while true {
            switch cache.lock(wait: false) {
            case .success(true): break
            case .success(false):
                switch whenLocked {
                case .refuse(let hint):
                    console.err("prefetch: another prefetch holds the cache lock (\(CacheLayout.lockPath(inCache: config.cache))); \(hint)\n")
                    return .failure(.locked)
                case .wait(let waiting, let giveUp):
                    if !announced {
                        console.err("prefetch daemon: waiting for the cache lock held by another prefetch\n")
                        waiting()
                        announced = true
                    }
                    if giveUp() { return .success(nil) }
                    Thread.sleep(forTimeInterval: 0.5)
                    continue
                }
            case .failure(let error):
                console.err("prefetch: error: \(error)\n")
                return .failure(.failure)
            }
            break
        }
        guard let state = openState(cache, feeds: feeds, console: console) else { return .failure(.failure) }
        return .success(CacheSession(cache: cache, state: state))
    }

    /// Opens state.db for writing; one that cannot be read is moved aside and rebuilt
    /// (cached files stay and are revalidated; partials restart). `feeds` give the URLs an
    /// older schema's records are re-keyed by.
    static func openState(_ cache: CacheFolder, feeds: [Feed], console: Console) -> StateStore? {
        let path = cache.statePath
        do {
            let store = try StateStore.openForWriting(path, currentURL: currentURLs(feeds))
            _ = try store.snapshot()
            return store
        } catch {
            switch cache.moveStateAside(at: Clock.realNow().seconds) {
            case .success(let aside):
                console.err("prefetch: warning: \(path) cannot be read (\(error)); moved to \(cache.path)/\(CacheLayout.metaEntry(aside)) and rebuilt\n")
            case .failure(let moveError):
                console.err("prefetch: error: \(path) cannot be read (\(error)) nor moved aside (\(moveError))\n")
                return nil
            }
            for name in cache.partialNames() { cache.removePartial(name) }
            do {
                return try StateStore.openForWriting(path)
            } catch {
                console.err("prefetch: error: cannot create \(path): \(error)\n")
                return nil
            }
        }
    }

    /// Each listed resource's URL by key, looked up lazily (only an older state.db's
    /// migration asks, once per recorded resource).
    static func currentURLs(_ feeds: [Feed]) -> StateStore.CurrentURL {
        let table = URLTable(feeds)
        return { table.url(of: $0) }
    }

    /// The table behind `currentURLs`, built on the first question (a migration's thread only).
    private final class URLTable {
        private let feeds: [Feed]
        private var table: [ResourceKey: ResourceURL]?

        init(_ feeds: [Feed]) { self.feeds = feeds }

        func url(of key: ResourceKey) -> ResourceURL? {
            if table == nil {
                var built: [ResourceKey: ResourceURL] = [:]
                for feed in feeds { for resource in feed.resources { built[ResourceKey(feed: feed.name, path: resource.path)] = resource.url } }
                table = built
            }
            return table?[key]
        }
    }
}

