import Foundation

/// The cache folder of SPEC §3: final files under `CACHE/<feed>/`, and `.prefetch/` with
/// state.db, the lock and partials (on the same filesystem, so a rename is atomic).
///
/// Everything prefetch does in the cache goes through this one type's folder descriptors —
/// placement, partials, the lock, listing and `gc` (`CacheListing`, `GarbageCollector` take
/// a `CacheFolder`) — each folder opened below the root without following a symlink, so
/// no path string is ever resolved through one. A writer opens it with `open` (created as
/// needed); a reader (`plan`, `status`, `gc --dry-run`) with `openExisting`, which creates
/// nothing.
public final class CacheFolder {
    public let path: String
    let root: FileDescriptor
    /// `.prefetch/` and `.prefetch/partial/`: always there for a writer; for a reader, when
    /// they exist.
    let meta: FileDescriptor?
    let partials: FileDescriptor?
    private var lockFile: FileDescriptor?

    /// Serializes what changes a feed's generations (a release staged, switched, laid out).
    let stagingLock = NSLock()

    /// The size of the final file `feed/path` as the writer sees it, or nil when there is no
    /// regular file there. Its folder is reached as `place` reaches it, and kept in `folders`.
    func finalSize(feed: String, path: String, folders: inout [String: FileDescriptor]) -> UInt64? {
        let final = FinalPath(feed: feed, path: path)
        var none: [FileDescriptor] = []
        guard case .success(let folder) = self.folder(of: final, forPlacement: false, reopen: false, folders: &folders,
                                                      createdIn: &none) else { return nil }
        guard case .success(let info) = FileSystem.status(of: final.leaf, in: folder), (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return UInt64(info.st_size)
    }

    /// A final file's folder (as `feed` and the path's folders) and its name in it.
    struct FinalPath {
        let feed: String
        let path: String
        let slash: String.Index?
        let leaf: String
        /// The folder's key in a `folders` cache: `feed` or `feed/sub/dir`.
        let key: String

        init(feed: String, path: String) {
            self.feed = feed
            self.path = path
            slash = path.lastSlash
            leaf = slash.map { path.suffix(afterSlash: $0) } ?? path
            key = slash.map { feed + "/" + path[..<$0] } ?? feed
        }

        /// The folders from the feed's folder down to the file's.
        var subfolders: [Substring] { slash.map { path[..<$0].split(separator: "/") } ?? [] }
    }

    /// The folder of `final`: from `folders` unless `reopen`, else opened below the feed's
    /// folder (the writer's view, or for a placement the folder new files go to) without
    /// following any symlink (and created for a placement, each folder in which one was
    /// made added to `createdIn`), and kept in `folders`.
    private func folder(of final: FinalPath, forPlacement: Bool, reopen: Bool, folders: inout [String: FileDescriptor],
                        createdIn: inout [FileDescriptor]) -> Result<FileDescriptor, SafePathError> {
        // A placement may go to a staged release the writer's view did not show yet: its own keys.
        let key = forPlacement ? "+" + final.key : final.key
        if !reopen, let known = folders[key] { return .success(known) }
        let feedFolder = forPlacement ? placementFolder(final.feed, createdIn: &createdIn) : self.feedFolder(final.feed)
        let opened = feedFolder.flatMap { SafePath.openFolders(final.subfolders, below: $0, create: forPlacement, createdIn: &createdIn) }
        if case .success(let folder) = opened { folders[key] = folder }
        return opened
    }

    /// Opens the cache for a writer, creating it and `.prefetch/partial/` (mode 0755) as
    /// needed (mkdir with 0755, so the umask applies as it does to every other folder).
    public static func open(_ path: String) -> Result<CacheFolder, CacheError> {
        if case .failure(let error) = FileSystem.makeFolders(path) { return .failure(.cannotWrite(path, error.description)) }
        let root: FileDescriptor
        switch FileDescriptor.open(path, flags: O_RDONLY | O_DIRECTORY) {
        case .success(let opened): root = opened
        case .failure(let error): return .failure(.cannotWrite(path, error.description))
        }
        switch SafePath.openFolders([Substring(CacheLayout.meta)], below: root, create: true) {
        case .failure(let error): return .failure(.cannotWrite(path + "/" + CacheLayout.meta, error.description))
        case .success(let meta):
            switch SafePath.openFolders([Substring(CacheLayout.partials)], below: meta, create: true) {
            case .failure(let error): return .failure(.cannotWrite(path + "/" + CacheLayout.metaEntry(CacheLayout.partials), error.description))
            case .success(let partials):
                return .success(CacheFolder(path: path, root: root, meta: meta, partials: partials))
            }
        }
    }

    /// Opens an existing cache for reading: nil when there is none; nothing is created.
    public static func openExisting(_ path: String) -> CacheFolder? {
        guard case .success(let root) = FileDescriptor.open(path, flags: O_RDONLY | O_DIRECTORY) else { return nil }
        let meta = try? SafePath.openFolders([Substring(CacheLayout.meta)], below: root, create: false).get()
        let partials = meta.flatMap { try? SafePath.openFolders([Substring(CacheLayout.partials)], below: $0, create: false).get() }
        return CacheFolder(path: path, root: root, meta: meta, partials: partials)
    }

    private init(path: String, root: FileDescriptor, meta: FileDescriptor?, partials: FileDescriptor?) {
        self.path = path
        self.root = root
        self.meta = meta
        self.partials = partials
    }

    public var statePath: String { CacheLayout.statePath(inCache: path) }

    /// True when the cache lives in memory (tmpfs, ramfs): fsync returns at once there, so
    /// handing it to another thread would cost more than it saves.
    lazy var syncIsFree: Bool = {
        let type = root.filesystemType
        let tmpfsMagic = 0x0102_1994, ramfsMagic = 0x8584_58F6
        return type == tmpfsMagic || type == ramfsMagic
    }()

    /// Takes `.prefetch/lock` (flock). `wait: false` returns false when another writer holds it.
    public func lock(wait: Bool) -> Result<Bool, CacheError> {
        guard let meta, case .success(let file) = FileDescriptor.open(CacheLayout.lock, relativeTo: meta, flags: O_RDWR | O_CREAT, mode: 0o644) else {
            return .failure(.cannotWrite(CacheLayout.lockPath(inCache: path), Errno.current.description))
        }
        let result = wait ? file.lock().map { true } : file.tryLock()
        switch result {
        case .success(true):
            lockFile = file
            return .success(true)
        case .success(false): return .success(false)
        case .failure(let error): return .failure(.cannotWrite(CacheLayout.lockPath(inCache: path), error.description))
        }
    }

    /// The partial's file name (`CacheLayout.partialName`).
    public static func partialName(feed: String, path: String) -> String {
        CacheLayout.partialName(feed: feed, path: path)
    }

    /// Opens an existing partial for resuming, with its size and inode; nil when there is none.
    func openPartial(_ name: String) -> (file: FileDescriptor, size: UInt64, inode: UInt64)? {
        guard let partials, case .success(let file) = FileDescriptor.open(name, relativeTo: partials, flags: O_RDWR | O_NOFOLLOW),
              case .success(let info) = file.status(), (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return (file, UInt64(info.st_size), UInt64(info.st_ino))
    }

    /// The length and inode of an existing partial (a regular file; a symlink is none).
    func partialFile(_ name: String) -> PartialFile? {
        guard let partials, case .success(let info) = FileSystem.status(of: name, in: partials), (info.st_mode & S_IFMT) == S_IFREG else {
            return nil
        }
        return PartialFile(size: UInt64(info.st_size), inode: UInt64(info.st_ino))
    }

    /// Creates a partial, empty (replacing any stale one), for a body that starts at byte 0.
    func createPartial(_ name: String) -> Result<FileDescriptor, Errno> {
        guard let partials else { return .failure(Errno(ENOENT)) }
        return FileDescriptor.open(name, relativeTo: partials, flags: O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o644)
    }

    /// Removes a partial. One that cannot be removed is harmless: it has no record, so no
    /// run trusts it, and `gc` removes it as abandoned.
    func removePartial(_ name: String) {
        guard let partials, case .failure(let error) = FileSystem.remove(name, in: partials), error.code != ENOENT else { return }
        // left for gc: see above
    }

    /// Names of every partial on disk.
    func partialNames() -> [String] {
        guard let partials else { return [] }
        return FileSystem.entries(in: partials).map(\.name).filter(CacheLayout.isPartial)
    }

    /// Moves state.db (and its `-wal`, `-shm`) aside as `state.db.unreadable-<seconds>`,
    /// inside `.prefetch/` as opened, never through a path string: a writer that cannot read
    /// the state rebuilds it (SPEC §5). Returns the name it was moved to.
    func moveStateAside(at seconds: Int64) -> Result<String, Errno> {
        let aside = CacheLayout.state + ".unreadable-\(seconds)"
        guard let meta else { return .failure(Errno(ENOENT)) }
        if case .failure(let error) = FileSystem.rename(CacheLayout.state, in: meta, to: aside, in: meta) { return .failure(error) }
        // Its journal files go too: a new state.db must never meet the old one's WAL.
        for side in CacheLayout.stateSideFiles {
            if case .failure(let error) = FileSystem.remove(side, in: meta), error.code != ENOENT { return .failure(error) }
        }
        return .success(aside)
    }

    /// Moves a complete, fsynced partial to `CACHE/<feed>/<path>` with one rename. Folders
    /// on the way are created (0755); a symlink on the way fails the placement and nothing
    /// is written outside the feed's folder. Returns the folder and the folders in which a
    /// folder was created on the way (`a/` for `a/b/`, and `CACHE/<feed>/` for `a/`): the
    /// caller fsyncs them all (once per batch of files) before recording the placement, so
    /// after a power cut the file cannot vanish while state.db says it is placed.
    ///
    /// `folders` keeps the folders opened so far (by `feed/sub/folder`), so a run opens each
    /// one once rather than once per file; an entry whose folder was removed meanwhile is
    /// opened again.
    func place(partial name: String, feed: String, path: String,
               folders: inout [String: FileDescriptor]) -> Result<(folder: FileDescriptor, createdIn: [FileDescriptor]), PlacementError> {
        let final = FinalPath(feed: feed, path: path)
        var createdIn: [FileDescriptor] = []
        for attempt in 0..<2 {
            let folder: FileDescriptor
            switch self.folder(of: final, forPlacement: true, reopen: attempt > 0, folders: &folders, createdIn: &createdIn) {
            case .success(let opened): folder = opened
            case .failure(.system(_, let error)):
                // A folder that could not be made (a full disk, an I/O error) is the disk's failure, not the path's.
                return .failure(.failed("\(self.path)/\(feed)/\(path)", error))
            case .failure(let error): return .failure(.unsafePath(error.description))
            }
            guard let partials else { return .failure(.failed("\(self.path)/\(CacheLayout.meta)", Errno(ENOENT))) }
            let error: Errno
            switch FileSystem.rename(name, in: partials, to: final.leaf, in: folder) {
            case .success: return .success((folder, createdIn))
            case .failure(let failed): error = failed
            }
            if error.code == ENOENT, attempt == 0 { continue }  // folder gone: reopen
            if error.code == EISDIR || error.code == ENOTEMPTY || error.code == EEXIST {
                return .failure(.unsafePath("'\(feed)/\(path)' is a folder"))
            }
            return .failure(.failed("\(self.path)/\(feed)/\(path)", error))
        }
        return .failure(.failed("\(self.path)/\(feed)/\(path)", Errno(ENOENT)))  // the folder keeps disappearing
    }
}

/// Why a file could not be placed: a path the cache cannot hold (a folder in the way, a
/// symlink), or the rename's error.
enum PlacementError: Error, Equatable, CustomStringConvertible {
    case unsafePath(String)
    case failed(String, Errno)

    var description: String {
        switch self {
        case .unsafePath(let why): return why
        case .failed(let path, let error): return "cannot write \(path): \(error)"
        }
    }
}

/// Why the cache could not be used or written.
public enum CacheError: Error, Sendable, CustomStringConvertible {
    case cannotWrite(String, String)
    case unsafePath(String)

    public var description: String {
        switch self {
        case .cannotWrite(let path, let why): return "cannot write \(path): \(why)"
        case .unsafePath(let why): return why
        }
    }
}
