import Foundation

/// Finds what `gc` removes (SPEC §2, §5): expired files, unlisted files of feeds with
/// `prune`, and abandoned partials (resource no longer listed, or untouched for 7 days).
/// It only ever looks inside `CACHE/<feed>/` of listed feeds and `CACHE/.prefetch/partial/`.
public enum GarbageCollector {
    /// One thing to remove, relative to the cache folder.
    public struct Removal: Sendable, Equatable {
        public var path: String
        public var reason: String
        /// The resource it belonged to, when it was one.
        public var key: ResourceKey?
    }

    public static let abandonedAfter: Int64 = 7 * 86_400

    /// `now` (which `PREFETCH_CLOCK_OFFSET` may shift) decides expiry; file ages are
    /// measured against `realNow`, since mtimes are stamped by the real clock.
    /// `partialsOf`: the feeds whose partials count as listed (default `feeds`; `run --feed`
    /// cleans up one feed but keeps every loaded feed's partials).
    public static func collect(feeds: [Feed], cache: String, now: Instant, realNow: Instant = Clock.realNow(),
                               partialsOf owners: [Feed]? = nil) -> [Removal] {
        var removals: [Removal] = []
        let root = cache.hasSuffix("/") ? String(cache.dropLast()) : cache
        let partials: [String]
        if case .success(let names) = FileSystem.listDirectory(root + "/.prefetch/partial") {
            partials = names.filter { $0.hasSuffix(".part") }
        } else {
            partials = []
        }
        var partialOwners = Set<String>()  // partial names are hashes: computed only when there are partials
        if let owners, !partials.isEmpty {
            for feed in owners {
                for resource in feed.resources { partialOwners.insert(CacheFolder.partialName(feed: feed.name, path: resource.path)) }
            }
        }
        for feed in feeds {
            var listed = Set<String>()
            for resource in feed.resources {
                if feed.prune { listed.insert(resource.path) }
                if !partials.isEmpty && owners == nil { partialOwners.insert(CacheFolder.partialName(feed: feed.name, path: resource.path)) }
                if let expires = resource.expires, expires <= now,
                   FileSystem.isRegularFileNoFollow(root + "/" + feed.name + "/" + resource.path) {
                    removals.append(Removal(path: feed.name + "/" + resource.path, reason: "expired",
                                            key: ResourceKey(feed: feed.name, path: resource.path)))
                }
            }
            if feed.prune {
                for file in filesBelow(root + "/" + feed.name) where !listed.contains(file) {
                    removals.append(Removal(path: feed.name + "/" + file, reason: "no longer listed", key: nil))
                }
            }
        }
        for name in partials {
            var info = stat()
            guard lstat(root + "/.prefetch/partial/" + name, &info) == 0 else { continue }
            if !partialOwners.contains(name) {
                removals.append(Removal(path: ".prefetch/partial/" + name, reason: "partial of a resource no longer listed", key: nil))
            } else if realNow.seconds - Int64(info.st_mtim.tv_sec) > abandonedAfter {
                removals.append(Removal(path: ".prefetch/partial/" + name, reason: "partial untouched for 7 days", key: nil))
            }
        }
        return removals
    }

    /// Regular files and symlinks below `folder`, relative to it; symlinks are never followed.
    static func filesBelow(_ folder: String) -> [String] {
        var out: [String] = []
        func walk(_ relative: String) {
            guard case .success(let names) = FileSystem.listDirectory(relative.isEmpty ? folder : folder + "/" + relative) else { return }
            for name in names {
                let child = relative.isEmpty ? name : relative + "/" + name
                var info = stat()
                guard lstat(folder + "/" + child, &info) == 0 else { continue }
                switch info.st_mode & S_IFMT {
                case S_IFDIR: walk(child)
                default: out.append(child)
                }
            }
        }
        walk("")
        return out
    }

    /// Removes what `collect` found, then folders left empty inside the feeds' folders.
    /// Returns what could not be removed.
    public static func apply(_ removals: [Removal], cache: String) -> [(Removal, Errno)] {
        let root = cache.hasSuffix("/") ? String(cache.dropLast()) : cache
        var failed: [(Removal, Errno)] = []
        var folders = Set<String>()
        for removal in removals {
            if unlink(root + "/" + removal.path) != 0, errno != ENOENT {
                failed.append((removal, .current))
                continue
            }
            var parent = Substring(removal.path)
            while let slash = parent.lastSlash {
                parent = parent[..<slash]
                if parent.contains("/") { folders.insert(String(parent)) }  // never a feed's own folder
            }
        }
        for folder in folders.sorted(by: { $0.count > $1.count }) where !folder.hasPrefix(".prefetch") {
            rmdir(root + "/" + folder)  // fails harmlessly unless empty
        }
        return failed
    }
}
