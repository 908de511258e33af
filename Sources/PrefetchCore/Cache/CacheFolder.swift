import Foundation

/// The cache folder of SPEC §3: final files under `CACHE/<feed>/`, and `.prefetch/` with
/// state.db, the lock and partials (on the same filesystem, so a rename is atomic).
public final class CacheFolder {
    public let path: String
    let root: FileDescriptor
    let meta: FileDescriptor
    let partials: FileDescriptor
    private var lockFile: FileDescriptor?

    /// Opens the cache, creating it and `.prefetch/partial/` (mode 0755) as needed.
    public static func open(_ path: String) -> Result<CacheFolder, CacheError> {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o755])
        } catch {
            return .failure(.cannotWrite(path, "\(error.localizedDescription)"))
        }
        guard case .success(let root) = FileDescriptor.open(path, flags: O_RDONLY | O_DIRECTORY) else {
            return .failure(.cannotWrite(path, Errno.current.description))
        }
        switch SafePath.openFolders([".prefetch"], below: root, create: true) {
        case .failure(let error): return .failure(.cannotWrite(path + "/.prefetch", error.description))
        case .success(let meta):
            switch SafePath.openFolders(["partial"], below: meta, create: true) {
            case .failure(let error): return .failure(.cannotWrite(path + "/.prefetch/partial", error.description))
            case .success(let partials):
                return .success(CacheFolder(path: path, root: root, meta: meta, partials: partials))
            }
        }
    }

    private init(path: String, root: FileDescriptor, meta: FileDescriptor, partials: FileDescriptor) {
        self.path = path
        self.root = root
        self.meta = meta
        self.partials = partials
    }

    public var statePath: String { StateStore.path(inCache: path) }

    /// Takes `.prefetch/lock` (flock). `wait: false` returns false when another writer holds it.
    public func lock(wait: Bool) -> Result<Bool, CacheError> {
        guard case .success(let file) = FileDescriptor.open("lock", relativeTo: meta, flags: O_RDWR | O_CREAT, mode: 0o644) else {
            return .failure(.cannotWrite(path + "/.prefetch/lock", Errno.current.description))
        }
        let result = wait ? file.lock().map { true } : file.tryLock()
        switch result {
        case .success(true):
            lockFile = file
            return .success(true)
        case .success(false): return .success(false)
        case .failure(let error): return .failure(.cannotWrite(path + "/.prefetch/lock", error.description))
        }
    }

    /// The partial's file name: a hash of feed and path, so any path fits one flat folder.
    public static func partialName(feed: String, path: String) -> String {
        SHA256.hex(SHA256.digest(Array((feed + "\0" + path).utf8))) + ".part"
    }

    /// Opens (creating) a partial for writing.
    func openPartial(_ name: String) -> Result<FileDescriptor, Errno> {
        FileDescriptor.open(name, relativeTo: partials, flags: O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o644)
    }

    /// Size of a partial, or nil when there is none.
    func partialSize(_ name: String) -> UInt64? {
        var info = stat()
        guard fstatat(partials.raw, name, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return UInt64(info.st_size)
    }

    func removePartial(_ name: String) {
        unlinkat(partials.raw, name, 0)
    }

    /// Names of every partial on disk.
    func partialNames() -> [String] {
        guard case .success(let names) = FileSystem.listDirectory(path + "/.prefetch/partial") else { return [] }
        return names.filter { $0.hasSuffix(".part") }
    }

    /// Moves a complete, fsynced partial to `CACHE/<feed>/<path>` with one rename. Folders
    /// on the way are created (0755); a symlink on the way fails the placement and nothing
    /// is written outside the feed's folder. Returns the folder, which the caller fsyncs
    /// (once per batch of files) before recording the placement.
    func place(partial name: String, feed: String, path: String) -> Result<FileDescriptor, CacheError> {
        var components = path.split(separator: "/")
        let leaf = String(components.removeLast())
        let folder: FileDescriptor
        switch SafePath.openFolders([Substring(feed)] + components, below: root, create: true) {
        case .success(let opened): folder = opened
        case .failure(let error): return .failure(.unsafePath(error.description))
        }
        var info = stat()
        if fstatat(folder.raw, leaf, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            return .failure(.unsafePath("'\(feed)/\(path)' is a folder"))
        }
        guard renameat(partials.raw, name, folder.raw, leaf) == 0 else {
            return .failure(.cannotWrite("\(self.path)/\(feed)/\(path)", Errno.current.description))
        }
        return .success(folder)
    }

    /// True when `CACHE/<feed>/<path>` is a regular file (never following a symlink).
    func hasFinal(feed: String, path: String) -> Bool {
        FileSystem.isRegularFileNoFollow(self.path + "/" + feed + "/" + path)
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
