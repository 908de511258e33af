import Foundation

/// Which final files are in the cache (regular files only: a symlink is never trusted).
enum CacheListing {
    /// The partial files on disk of the resources state.db records a partial for (one
    /// `fstatat` each; creates nothing): what `ResumePoint` needs to say where each resumes.
    static func partialFiles(_ snapshot: StateSnapshot, in cache: CacheFolder?) -> [ResourceKey: PartialFile] {
        guard let cache, snapshot.hasPartials else { return [:] }
        var files: [ResourceKey: PartialFile] = [:]
        for (key, state) in snapshot.resources where state.partial != nil {
            if let file = cache.partialFile(CacheFolder.partialName(feed: key.feed, path: key.path)) { files[key] = file }
        }
        return files
    }

    /// Reads each folder that holds listed files once (no `stat` per file), reaching it
    /// without following symlinks; creates nothing.
    /// `view`: for a `consistency: release` feed, the generation looked at (SPEC §6).
    static func present(_ feeds: [Feed], in cache: CacheFolder?, view: FeedView = .writer) -> CachedFiles {
        var present = CachedFiles()
        guard let cache else { return present }
        for feed in feeds {
            guard case .success(let feedFolder) = cache.feedFolder(feed.name, view) else { continue }
            var folders: [Substring: Set<String>] = [:]
            for (position, resource) in feed.resources.enumerated() {
                let path = resource.path
                let slash = path.lastSlash
                let parent = slash.map { path[..<$0] } ?? ""
                let leaf = slash.map { path.suffix(afterSlash: $0) } ?? path
                let files: Set<String>
                if let known = folders[parent] {
                    files = known
                } else {
                    if case .success(let folder) = SafePath.openFolders(parent.split(separator: "/"), below: feedFolder, create: false) {
                        files = FileSystem.regularFiles(in: folder)
                    } else {
                        files = []
                    }
                    folders[parent] = files
                }
                if files.contains(leaf) { present.insert(feed: feed.name, position: position) }
            }
        }
        return present
    }

    /// The size of the regular file `feed/path` (as the writer sees it) below the opened cache root, reached without
    /// following any symlink; nil when there is none.
    static func size(feed: String, path: String, in cache: CacheFolder) -> UInt64? {
        let final = CacheFolder.FinalPath(feed: feed, path: path)
        let leaf = final.leaf
        guard case .success(let feedFolder) = cache.feedFolder(feed),
              case .success(let folder) = SafePath.openFolders(final.subfolders, below: feedFolder, create: false),
              case .success(let info) = FileSystem.status(of: leaf, in: folder), (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return UInt64(info.st_size)
    }
}
