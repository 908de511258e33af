import Foundation

/// SPEC §9's local sources on disk: a recorded file found again (no symlink followed), and
/// its bytes made a new name in the partial folder — a hard link where allowed, else a copy —
/// then hashed through that new name. Placing that name is `place(partial:…)`, as for a
/// transfer's file.
extension CacheFolder {
    /// A local source opened for reading, with the folder and name it was found under.
    struct OpenedSource {
        let file: FileDescriptor
        let folder: FileDescriptor
        let leaf: String
        let info: stat
        var identity: FileIdentity { FileIdentity(info) }
    }

    /// The file `record` names, when it is a regular file (of any length: the caller compares): a copy at
    /// its feed's path as the writer sees it, or an older generation's file, found in the
    /// feed's generations by its recorded inode.
    /// `folders`: the folders opened so far (as `place` keeps them).
    func openSource(_ record: LocalSourceRecord, folders opened: inout [String: FileDescriptor]) -> OpenedSource? {
        let final = FinalPath(feed: record.key.feed, path: record.key.path)
        var folders: [FileDescriptor] = []
        if record.kept {
            guard let inode = record.inode, case .generations(let live, let staging, let others) = layout(of: record.key.feed) else { return nil }
            for n in [live] + others + (staging.map { [$0] } ?? []) {
                guard case .success(let generation) = generation(record.key.feed, n),
                      case .success(let folder) = SafePath.openFolders(final.subfolders, below: generation, create: false),
                      case .success(let info) = FileSystem.status(of: final.leaf, in: folder), UInt64(info.st_ino) == inode else { continue }
                folders = [folder]
                break
            }
        } else {
            guard finalSize(feed: record.key.feed, path: record.key.path, folders: &opened) != nil, let folder = opened[final.key] else { return nil }
            folders = [folder]
        }
        guard let folder = folders.first,
              case .success(let file) = FileDescriptor.open(final.leaf, relativeTo: folder, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK),
              case .success(let info) = file.status(), (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return OpenedSource(file: file, folder: folder, leaf: final.leaf, info: info)
    }

    /// The inode at `feed/path` as the writer sees it (a placement target), when a regular file is there.
    func finalIdentity(feed: String, path: String, folders opened: inout [String: FileDescriptor]) -> FileIdentity? {
        let final = FinalPath(feed: feed, path: path)
        guard finalSize(feed: feed, path: path, folders: &opened) != nil, let folder = opened[final.key],
              case .success(let info) = FileSystem.status(of: final.leaf, in: folder) else { return nil }
        return FileIdentity(info)
    }

    /// How a local source's bytes came to the partial folder.
    enum LocalCopyKind: Equatable { case linked, copied }

    /// Makes `name` in the partial folder hold `source`'s bytes: a hard link when `mayLink`
    /// and the filesystem allows one, else a copy (`copy_file_range`, or read and write where
    /// the kernel cannot copy between the two filesystems), fsynced. Any file of that name
    /// (one a crash left) goes first.
    func copySource(_ source: OpenedSource, to name: String, mayLink: Bool) -> Result<LocalCopyKind, Errno> {
        guard let partials else { return .failure(Errno(ENOENT)) }
        _ = FileSystem.remove(name, in: partials)
        if mayLink {
            if linkat(source.folder.raw, source.leaf, partials.raw, name, 0) == 0 { return .success(.linked) }
            let error = Errno.current
            guard [EXDEV, EMLINK, EPERM, EACCES, ENOTSUP, EOPNOTSUPP].contains(error.code) else { return .failure(error) }
        }
        let target: FileDescriptor
        switch FileDescriptor.open(name, relativeTo: partials, flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o644) {
        case .success(let opened): target = opened
        case .failure(let error): return .failure(error)
        }
        let copied = Self.copyBytes(from: source.file, to: target, count: UInt64(source.info.st_size))
            .flatMap { syncIsFree ? .success(()) : target.sync() }
        if case .failure(let error) = copied {
            _ = FileSystem.remove(name, in: partials)
            return .failure(error)
        }
        return .success(.copied)
    }

    /// `count` bytes from `source`'s start to `target`'s.
    private static func copyBytes(from source: FileDescriptor, to target: FileDescriptor, count: UInt64) -> Result<Void, Errno> {
        if case .failure(let error) = source.seek(to: 0) { return .failure(error) }
        var left = count
        while left > 0 {
            switch target.copyRange(from: source, count: left) {
            case .success(0): return .failure(Errno(EIO))  // shorter than its size said
            case .success(let n): left -= UInt64(n)
            case .failure(let error) where [EXDEV, EINVAL, ENOSYS, EOPNOTSUPP, ENOTSUP].contains(error.code) && left == count:
                return readAndWrite(from: source, to: target, count: count)
            case .failure(let error): return .failure(error)
            }
        }
        return .success(())
    }

    private static func readAndWrite(from source: FileDescriptor, to target: FileDescriptor, count: UInt64) -> Result<Void, Errno> {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var left = count
        while left > 0 {
            let read = buffer.withUnsafeMutableBytes { source.read(into: $0) }
            switch read {
            case .failure(let error): return .failure(error)
            case .success(0): return .failure(Errno(EIO))
            case .success(let n):
                let wrote = buffer.withUnsafeBytes { target.write(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                if case .failure(let error) = wrote { return .failure(error) }
                left -= min(left, UInt64(n))
            }
        }
        return .success(())
    }

    /// The SHA-256 of `name` in the partial folder, read through that name, with what its
    /// descriptor's fstat says (the inode and mtime placed).
    func hashPartial(_ name: String, buffer: inout [UInt8]) -> Result<(sha256: String, identity: FileIdentity), Errno> {
        guard let partials else { return .failure(Errno(ENOENT)) }
        switch FileDescriptor.open(name, relativeTo: partials, flags: O_RDONLY | O_NOFOLLOW) {
        case .failure(let error): return .failure(error)
        case .success(let file): return Self.hash(file, buffer: &buffer)
        }
    }

    /// The SHA-256 of an open file from its start, and its fstat's identity.
    static func hash(_ file: FileDescriptor, buffer: inout [UInt8]) -> Result<(sha256: String, identity: FileIdentity), Errno> {
        let info: stat
        switch file.status() {
        case .success(let found): info = found
        case .failure(let error): return .failure(error)
        }
        if case .failure(let error) = file.seek(to: 0) { return .failure(error) }
        return hashRest(file, buffer: &buffer).map { ($0, FileIdentity(info)) }
    }

    /// The SHA-256 of an open file from its offset to its end, read one `buffer` at a time;
    /// `between` is called after each (the daemon's watchdog).
    static func hashRest(_ file: FileDescriptor, buffer: inout [UInt8], between: () -> Void = {}) -> Result<String, Errno> {
        let hasher = SHA256()
        while true {
            let read = buffer.withUnsafeMutableBytes { buffer in
                file.read(into: buffer).map { count in
                    hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                    return count
                }
            }
            switch read {
            case .failure(let error): return .failure(error)
            case .success(0): return .success(SHA256.hex(hasher.finish()))
            case .success: between()
            }
        }
    }

    /// Removes `name` from the partial folder (a local source's link or copy not placed).
    func removeSourceCopy(_ name: String) {
        guard let partials else { return }
        _ = FileSystem.remove(name, in: partials)
    }
}
