import Foundation

/// A file with hard links, as `verify` knows it: its inode, and the size and mtime it had.
struct LinkedInode: Hashable {
    let device: UInt64, inode: UInt64, size: Int64, mtime: Int64

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
    }
}

extension CacheFolder {
    /// The SHA-256 of the final file `feed/path`, read through its folder's descriptor
    /// (no symlink followed) one `buffer` at a time: memory stays bounded whatever its size.
    /// Nil when there is no regular file there; the read error, when one came. `between`
    /// is called after each buffer (the daemon's watchdog: a 16 GiB file on an SD card takes minutes).
    /// `linked`: the hashes of files with more than one link met so far, by inode (SPEC §9:
    /// `verify` hashes an inode once, and reports every path that links it).
    func hashFinal(feed: String, path: String, buffer: inout [UInt8], linked: inout [LinkedInode: String],
                   between: () -> Void = {}) -> Result<String, Errno>? {
        var folders: [String: FileDescriptor] = [:]
        guard finalSize(feed: feed, path: path, folders: &folders) != nil, let folder = folders.values.first else { return nil }
        let leaf = path.lastSlash.map { path.suffix(afterSlash: $0) } ?? path
        let file: FileDescriptor
        switch FileDescriptor.open(leaf, relativeTo: folder, flags: O_RDONLY | O_NOFOLLOW) {
        case .success(let opened): file = opened
        case .failure(let error): return .failure(error)
        }
        var inode: LinkedInode?
        if case .success(let info) = file.status(), info.st_nlink > 1 {
            inode = LinkedInode(info)
            if let known = linked[inode!] { return .success(known) }
        }
        let hashed = Self.hashRest(file, buffer: &buffer, between: between)
        if case .success(let hex) = hashed, let inode { linked[inode] = hex }
        return hashed
    }

    /// Removes the final file `feed/path` (in its folder, by descriptor). While a release is
    /// staged, the live generation's copy goes too when it is the same file (a hard link):
    /// readers must not keep a copy that failed its check. Returns whether it went from
    /// such a live generation too (whose index the caller then corrects).
    func removeFinal(feed: String, path: String) -> Result<Bool, Errno> {
        let final = FinalPath(feed: feed, path: path)
        var folders: [String: FileDescriptor] = [:]
        guard finalSize(feed: feed, path: path, folders: &folders) != nil, let folder = folders.values.first,
              case .success(let info) = FileSystem.status(of: final.leaf, in: folder) else { return .failure(Errno(ENOENT)) }
        if case .failure(let error) = FileSystem.remove(final.leaf, in: folder).flatMap({ syncIsFree ? .success(()) : folder.sync() }) {
            return .failure(error)
        }
        // No release staged: the writer's view was the live one.
        guard case .generations(_, _?, _) = layout(of: feed) else { return .success(false) }
        guard case .success(let live) = feedFolder(feed, .live),
              case .success(let liveFolder) = SafePath.openFolders(final.subfolders, below: live, create: false),
              case .success(let copy) = FileSystem.status(of: final.leaf, in: liveFolder), copy.st_ino == info.st_ino else { return .success(false) }
        return FileSystem.remove(final.leaf, in: liveFolder).flatMap { syncIsFree ? .success(()) : liveFolder.sync() }.map { true }
    }
}
