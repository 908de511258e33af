import Foundation

/// Finds what `gc` removes (SPEC §2, §5): expired files, unlisted files of feeds with
/// `prune`, and abandoned partials (resource no longer listed, or untouched for 7 days).
///
/// It only ever looks inside `CACHE/<feed>/` of listed feeds (for `consistency: release`, the
/// generation being written, and the live one for expired files) and `CACHE/.prefetch/partial/`,
/// and never through a symlink but a release feed's own, by construction: every folder is opened below the one
/// before it with `O_NOFOLLOW`, starting at the cache's root, and every removal is an
/// `unlinkat` in the folder it was found in. A symlink planted in the cache is at most
/// removed itself (by `prune`), never followed: nothing outside `CACHE/<feed>/` is touched.
public enum GarbageCollector {
    /// One thing to remove, and where it was found.
    public struct Removal: @unchecked Sendable {
        /// Relative to the cache folder, for people.
        public var path: String
        public var reason: String
        /// The resource it belonged to, when it was one.
        public var key: ResourceKey?
        /// The feed from whose folder (or live generation) it goes, whether or not a listed
        /// resource: that feed's reader index must say so (SPEC §6). Nil for a partial.
        public var feed: String?
        /// The resource whose copy in the live generation it is, beside a staged release
        /// (SPEC §6): the live index must say it went.
        public var liveOf: ResourceKey?
        /// The folder that holds it, opened without following any symlink, and its name there.
        let folder: FileDescriptor
        let name: String
        /// The folders from the feed's folder down to `folder` with their names, deepest
        /// last: each is removed once the removals leave it empty (never the feed's own).
        let above: [(parent: FileDescriptor, name: String, folder: FileDescriptor)]
    }

    public static let abandonedAfter: Int64 = 7 * 86_400

    /// `now` (which `PREFETCH_CLOCK_OFFSET` may shift) decides expiry; file ages are
    /// measured against `realNow`, since mtimes are stamped by the real clock.
    /// `partialsOf`: the feeds whose partials count as listed (default `feeds`; `run --feed`
    /// cleans up one feed but keeps every loaded feed's partials).
    public static func collect(feeds: [Feed], cache: CacheFolder, now: Instant, realNow: Instant = Clock.realNow(),
                               partialsOf owners: [Feed]? = nil) -> [Removal] {
        // The cache's root itself may be a symlink (the operator's choice); nothing below it is
        // followed but a `consistency: release` feed's own, checked symlink.
        var removals: [Removal] = []
        for feed in feeds {
            guard case .success(let feedFolder) = cache.feedFolder(feed.name) else {
                continue  // missing, or a symlink prefetch did not make: nothing of it is touched
            }
            // An expired file also leaves the live generation while a release is staged beside it.
            var live: (folder: FileDescriptor, name: String)?
            if case .generations(let n, _?, _) = cache.layout(of: feed.name), case .success(let folder) = cache.feedFolder(feed.name, .live) {
                live = (folder, CacheLayout.generationLink(feed: feed.name, n))
            }
            var listed = Set<String>()
            for resource in feed.resources {
                if feed.prune { listed.insert(resource.path) }
                if let expires = resource.expires, expires <= now {
                    if let removal = expired(resource, of: feed, in: feedFolder, named: feed.name) { removals.append(removal) }
                    if let live, var removal = expired(resource, of: feed, in: live.folder, named: live.name) {
                        removal.liveOf = removal.key
                        removal.key = nil  // its state goes once, with the staged copy
                        removals.append(removal)
                    }
                }
            }
            if feed.prune { prune(feedFolder, feed: feed.name, keeping: listed, into: &removals) }
        }
        if let partials = cache.partials { removals += abandonedPartials(in: partials, feeds: owners ?? feeds, realNow: realNow) }
        return removals
    }

    /// The expired resource's file, when it is a regular file reached without a symlink.
    /// `name`: the folder as people read it (the feed's, or a generation's).
    private static func expired(_ resource: Resource, of feed: Feed, in feedFolder: FileDescriptor, named name: String) -> Removal? {
        let path = resource.path
        let slash = path.lastSlash
        let leaf = slash.map { path.suffix(afterSlash: $0) } ?? path
        let components = slash.map { path[..<$0].split(separator: "/") } ?? []
        var created: [FileDescriptor] = []
        var chain: [FileDescriptor] = []
        guard case .success(let folder) = SafePath.openChain(components, below: feedFolder, create: false,
                                                            createdIn: &created, chain: &chain),
              case .success(let info) = FileSystem.status(of: leaf, in: folder), (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        var above: [(parent: FileDescriptor, name: String, folder: FileDescriptor)] = []
        var parent = feedFolder
        for (name, opened) in zip(components, chain) {
            above.append((parent, String(name), opened))
            parent = opened
        }
        return Removal(path: name + "/" + path, reason: "expired", key: ResourceKey(feed: feed.name, path: path), feed: feed.name,
                       folder: folder, name: leaf, above: above)
    }

    /// Every entry below the feed's folder that is not a listed file: regular files, symlinks
    /// (the link itself) and anything else; folders are walked, by descriptor.
    private static func prune(_ feedFolder: FileDescriptor, feed: String, keeping listed: Set<String>, into removals: inout [Removal]) {
        // `above` grows and shrinks with the walk (one copy per removal, not one per folder):
        // a manifest's path can nest 2,000 folders deep, and copies per level were quadratic.
        // The recursion is as deep as the folders, which paths bound (4,000 bytes, SPEC §7).
        func walk(_ folder: FileDescriptor, _ relative: String, _ above: inout [(parent: FileDescriptor, name: String, folder: FileDescriptor)]) {
            for entry in FileSystem.entries(in: folder) {
                // The feed's reader index (and its temporary name) is prefetch's own: never pruned.
                if relative.isEmpty, entry.name == CacheLayout.index || entry.name == CacheLayout.indexTemp { continue }
                let child = relative.isEmpty ? entry.name : relative + "/" + entry.name
                if entry.kind == .directory {
                    // Opened without following: a folder swapped for a symlink since the listing is skipped.
                    guard case .success(let sub) = FileDescriptor.open(entry.name, relativeTo: folder,
                                                                       flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW) else { continue }
                    above.append((folder, entry.name, sub))
                    walk(sub, child, &above)
                    above.removeLast()
                } else if !listed.contains(child) {
                    removals.append(Removal(path: feed + "/" + child, reason: "no longer listed", key: nil, feed: feed,
                                            folder: folder, name: entry.name, above: above))
                }
            }
        }
        var above: [(parent: FileDescriptor, name: String, folder: FileDescriptor)] = []
        walk(feedFolder, "", &above)
    }

    /// Partials of resources no longer listed, or untouched for 7 days.
    private static func abandonedPartials(in partials: FileDescriptor, feeds: [Feed], realNow: Instant) -> [Removal] {
        let entries = FileSystem.entries(in: partials)
        // A local source's link or copy a crash left before its rename (SPEC §9): never resumed, always removed.
        var removals = entries.filter { $0.kind == .regular && $0.name.hasSuffix(CacheLayout.sourceCopySuffix) }.map { entry in
            Removal(path: CacheLayout.metaEntry(CacheLayout.partials) + "/" + entry.name, reason: "copy of a local source a run left",
                    key: nil, feed: nil, folder: partials, name: entry.name, above: [])
        }
        // A delta's partial and its control file (SPEC §9) are a zsync resource's: as partials are its resource's.
        let names = entries.filter { CacheLayout.isPartial($0.name) || CacheLayout.isDeltaFile($0.name) }
        guard !names.isEmpty else { return removals }
        var owned = Set<String>()  // partial names are hashes: computed only when there are partials
        for feed in feeds {
            for resource in feed.resources {
                owned.insert(CacheFolder.partialName(feed: feed.name, path: resource.path))
                if resource.triesDelta {
                    owned.insert(CacheLayout.deltaName(feed: feed.name, path: resource.path))
                    owned.insert(CacheLayout.controlName(feed: feed.name, path: resource.path))
                }
            }
        }
        for entry in names {
            guard case .success(let info) = FileSystem.status(of: entry.name, in: partials) else { continue }
            let reason: String
            if !owned.contains(entry.name) {
                reason = "partial of a resource no longer listed"
            } else if realNow.seconds - Int64(info.st_mtim.tv_sec) > abandonedAfter {
                reason = "partial untouched for 7 days"
            } else {
                continue
            }
            removals.append(Removal(path: CacheLayout.metaEntry(CacheLayout.partials) + "/" + entry.name, reason: reason, key: nil,
                                    feed: nil, folder: partials, name: entry.name, above: []))
        }
        return removals
    }

    /// How many of `removals` were files of the feeds (expired, or no longer listed) that
    /// went: what the run's summary calls pruned. Partials do not count, nor the live
    /// generation's copy of a file that also left the release being staged (one file).
    public static func filesRemoved(_ removals: [Removal], failed: [(Removal, Errno)]) -> Int {
        let kept = Set(failed.map { $0.0.path })
        return removals.reduce(0) { $0 + ($1.feed != nil && $1.liveOf == nil && !kept.contains($1.path) ? 1 : 0) }
    }

    /// Removes what `collect` found, each in the folder it was found in, then the folders
    /// the removals left empty inside the feeds' folders. Returns what could not be removed.
    public static func apply(_ removals: [Removal]) -> [(Removal, Errno)] {
        var failed: [(Removal, Errno)] = []
        var emptied: [(depth: Int, parent: FileDescriptor, name: String, folder: FileDescriptor)] = []
        var seen = Set<ObjectIdentifier>()
        for removal in removals {
            if case .failure(let error) = FileSystem.remove(removal.name, in: removal.folder), error.code != ENOENT {
                failed.append((removal, error))
                continue
            }
            for (depth, step) in removal.above.enumerated() where seen.insert(ObjectIdentifier(step.folder)).inserted {
                emptied.append((depth, step.parent, step.name, step.folder))
            }
        }
        // Deepest first; a folder that is not empty stays (the removal fails harmlessly).
        for step in emptied.sorted(by: { $0.depth > $1.depth }) {
            _ = FileSystem.remove(step.name, in: step.parent, folder: true)
        }
        return failed
    }
}
