/// The names of SPEC §3's cache layout, in one place:
///
/// ```
/// CACHE/<feed>/<path>                final files
/// CACHE/.prefetch/state.db           SQLite state
/// CACHE/.prefetch/partial/<hash>.part in-progress data
/// CACHE/.prefetch/lock               flock(2): one writer per cache
/// ```
public enum CacheLayout {
    /// prefetch's own folder inside the cache (no manifest path may start with it).
    public static let meta = ".prefetch"
    public static let state = "state.db"
    /// SQLite's side files of `state`.
    static let stateSideFiles = ["state.db-wal", "state.db-shm"]
    public static let partials = "partial"
    public static let lock = "lock"
    static let partialSuffix = ".part"

    /// `CACHE/.prefetch/state.db`, as a path.
    public static func statePath(inCache cache: String) -> String {
        join(cache, meta + "/" + state)
    }

    /// `CACHE/.prefetch/lock`, as a path (for messages).
    public static func lockPath(inCache cache: String) -> String {
        join(cache, meta + "/" + lock)
    }

    /// `name` inside `.prefetch/`, as a path relative to the cache (for messages).
    static func metaEntry(_ name: String) -> String { meta + "/" + name }

    /// A partial's file name: a hash of feed and path, so any path fits one flat folder.
    public static func partialName(feed: String, path: String) -> String {
        var key = feed + "\0" + path
        return key.withUTF8 { SHA256.hexDigest(UnsafeRawBufferPointer($0)) } + partialSuffix
    }

    /// Whether a name in `partial/` is a partial's.
    static func isPartial(_ name: String) -> Bool { name.hasSuffix(partialSuffix) }

    /// The name in `partial/` of a local source's link or copy on its way to `feed/path`
    /// (SPEC §9): never a partial's, so nothing resumes into (and writes through) a link.
    static let sourceCopySuffix = ".link"
    static func sourceCopyName(feed: String, path: String) -> String {
        String(partialName(feed: feed, path: path).dropLast(partialSuffix.utf8.count)) + sourceCopySuffix
    }

    /// The names in `partial/` of a delta's file as it is assembled and of its control file
    /// (SPEC §9): never a partial's, so the transfers' rules for partials never apply to them.
    static let deltaSuffix = ".delta"
    static let controlSuffix = ".zsync"
    static func deltaName(feed: String, path: String) -> String {
        String(partialName(feed: feed, path: path).dropLast(partialSuffix.utf8.count)) + deltaSuffix
    }
    static func isDeltaFile(_ name: String) -> Bool { name.hasSuffix(deltaSuffix) || name.hasSuffix(controlSuffix) }
    static func controlName(feed: String, path: String) -> String {
        String(partialName(feed: feed, path: path).dropLast(partialSuffix.utf8.count)) + controlSuffix
    }

    private static func join(_ cache: String, _ relative: String) -> String {
        (cache.hasSuffix("/") ? cache : cache + "/") + relative
    }
}
