import Foundation

/// The cache's folders as they stood at one moment, without their contents: device, inode,
/// mode, mtime and ctime of the root, of every folder below it (feeds' folders and whatever
/// else is there, never through a symlink) and of `.prefetch/partial` and
/// `.prefetch/generations`. A file created, removed or renamed in a folder — by prefetch or
/// by hand — changes that folder's mtime (and ctime), a folder swapped for another changes
/// its inode, so while `holds` finds every folder as stamped, a listing made after the stamp
/// would find the same names: the daemon at rest need not list the cache again (SPEC §6,
/// issue 20) to notice a file deleted or planted by hand — one `fstatat` per folder does.
///
/// As git's index does against "racy" timestamps: a folder whose mtime or ctime is within
/// `racyWindow` of the moment it was stamped may change again within the same timestamp
/// tick, unseen, so such a stamp never holds (the next pass lists the cache and stamps it
/// afresh). Partials' ages (SPEC §5's 7 days) are a time, not a listing: `partialsAgeAt`.
struct CacheStamp: Equatable {
    struct Folder: Equatable {
        /// Relative to the cache's root ("." for the root).
        let path: String
        let device: UInt64
        let inode: UInt64
        let mode: UInt32
        let modified: timespec
        let changed: timespec

        init(path: String, _ info: stat) {
            self.path = path
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            mode = UInt32(info.st_mode)
            modified = info.st_mtim
            changed = info.st_ctim
        }

        static func == (a: Folder, b: Folder) -> Bool {
            a.path == b.path && a.device == b.device && a.inode == b.inode && a.mode == b.mode
                && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
                && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
        }
    }

    /// Seconds: a folder stamped this soon after it changed may change again unseen.
    static let racyWindow: Int64 = 2

    private(set) var folders: [Folder] = []
    /// A folder changed too close to the stamp (or could not be read): it never holds.
    private(set) var racy = false
    /// The earliest real-clock moment a partial on disk turns `GarbageCollector.abandonedAfter`
    /// old (`gc` then removes it); nil without partials.
    private(set) var partialsAgeAt: Instant?

    /// Stamps every folder below `cache`'s root; `realNow` is the clock mtimes are stamped by.
    static func take(_ cache: CacheFolder, realNow: Instant = Clock.realNow()) -> CacheStamp {
        var stamp = CacheStamp()
        stamp.walk(cache.root, path: ".", realNow: realNow, top: true)
        if let partials = cache.partials {
            for entry in FileSystem.entries(in: partials) where CacheLayout.isPartial(entry.name) {
                guard case .success(let info) = FileSystem.status(of: entry.name, in: partials) else { stamp.racy = true; continue }
                let ages = Instant(seconds: Int64(info.st_mtim.tv_sec) + GarbageCollector.abandonedAfter)
                stamp.partialsAgeAt = min(stamp.partialsAgeAt ?? ages, ages)
            }
        }
        return stamp
    }

    /// Whether every stamped folder is still as it was (one `fstatat` each, nothing listed).
    func holds(in cache: CacheFolder) -> Bool {
        guard !racy else { return false }
        for folder in folders {
            guard case .success(let info) = FileSystem.status(of: folder.path, in: cache.root),
                  Folder(path: folder.path, info) == folder else { return false }
        }
        return true
    }

    /// Stamps `folder` (before reading it: a change after the stamp is seen by `holds`), then
    /// the folders in it. At the top, `.prefetch` itself is not stamped (state.db's journal
    /// comes and goes there; `StateStore.changeStamp` covers the state): only its
    /// `partial` and `generations` folders are, the generations with everything below them.
    private mutating func walk(_ folder: FileDescriptor, path: String, realNow: Instant, top: Bool) {
        guard case .success(let info) = folder.status() else { racy = true; return }
        add(Folder(path: path, info), realNow: realNow)
        for name in FileSystem.folders(in: folder) {
            let child = path == "." ? name : path + "/" + name
            guard case .success(let sub) = FileDescriptor.open(name, relativeTo: folder,
                                                               flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW) else { racy = true; continue }
            if top, name == CacheLayout.meta {
                if case .success(let partials) = FileSystem.status(of: CacheLayout.partials, in: sub) {
                    add(Folder(path: child + "/" + CacheLayout.partials, partials), realNow: realNow)
                }
                if case .success(let generations) = FileDescriptor.open(CacheLayout.generations, relativeTo: sub,
                                                                        flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW) {
                    walk(generations, path: child + "/" + CacheLayout.generations, realNow: realNow, top: false)
                }
                continue
            }
            walk(sub, path: child, realNow: realNow, top: false)
        }
    }

    private mutating func add(_ folder: Folder, realNow: Instant) {
        folders.append(folder)
        let recent = realNow.seconds - Self.racyWindow
        if Int64(folder.modified.tv_sec) >= recent || Int64(folder.changed.tv_sec) >= recent { racy = true }
    }
}
