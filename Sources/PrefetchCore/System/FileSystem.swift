import Foundation

/// A failed system call's errno, with the C library's words for it.
public struct Errno: Error, Sendable, Equatable, CustomStringConvertible {
    /// The raw errno value.
    public let code: Int32

    /// Wraps an errno value.
    public init(_ code: Int32) {
        self.code = code
    }

    /// The current thread's errno.
    public static var current: Errno { Errno(errno) }

    public var description: String { String(cString: strerror(code)) }
}

/// The few file-system calls prefetch needs, wrapped once: typed errno, EINTR retried.
public enum FileSystem {
    /// Calls `body` until it does not fail with EINTR; returns its result or the errno.
    @inline(__always)
    static func retryingEINTR<T: SignedInteger>(_ body: () -> T) -> Result<T, Errno> {
        while true {
            let result = body()
            if result >= 0 { return .success(result) }
            if errno != EINTR { return .failure(.current) }
        }
    }

    /// The mode a file prefetch creates gets (0644 less the umask, read from
    /// /proc/self/status, else assumed 022): a local source with another is copied, not linked.
    static let newFileMode: mode_t = {
        var mask: mode_t = 0o022
        if case .success(let bytes) = readFile("/proc/self/status"),
           let line = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
           let value = mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8) {
            mask = value
        }
        return 0o644 & ~mask
    }()

    /// Opens `path` with `flags` and takes its fstat; a folder is EISDIR. The descriptor is
    /// the caller's to close.
    private static func openForReading(_ path: String, _ flags: Int32) -> Result<(Int32, stat), Errno> {
        let fd: Int32
        switch retryingEINTR({ open(path, flags) }) {
        case .success(let value): fd = value
        case .failure(let error): return .failure(error)
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let error = Errno.current
            close(fd)
            return .failure(error)
        }
        guard (info.st_mode & S_IFMT) != S_IFDIR else {
            close(fd)
            return .failure(Errno(EISDIR))
        }
        return .success((fd, info))
    }

    /// `path` opened for reading when it is a regular file; nil for anything else, or when
    /// it cannot be opened. Opening does not wait for a FIFO's writer.
    public static func openRegularFile(_ path: String) -> FileDescriptor? {
        // Not even opened unless it is a regular file: opening a FIFO and closing it again
        // would end its writer's stream (EPIPE), and the caller then reads it through its
        // other path (HostileManifestTests.theConfigsLimitHoldsForFilesOfEveryKind).
        var first = stat()
        guard stat(path, &first) == 0, (first.st_mode & S_IFMT) == S_IFREG else { return nil }
        guard case .success(let (fd, info)) = openForReading(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) else { return nil }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            return nil
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return FileDescriptor(raw: fd)
    }

    /// The whole content of a regular file.
    public static func readFile(_ path: String) -> Result<[UInt8], Errno> {
        let fd: Int32, info: stat
        switch openForReading(path, O_RDONLY | O_CLOEXEC) {
        case .success(let opened): (fd, info) = opened
        case .failure(let error): return .failure(error)
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(info.st_size) + 1)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in
                retryingEINTR { read(fd, buffer.baseAddress, buffer.count) }
            }
            switch count {
            case .success(0): return .success(bytes)
            case .success(let n): bytes.append(contentsOf: chunk[0..<n])
            case .failure(let error): return .failure(error)
            }
        }
    }

    /// What `readFile(_:limit:)` found: the bytes, or a file larger than the limit.
    public enum LimitedRead: Sendable, Equatable {
        case bytes([UInt8])
        /// `size` bytes by fstat (`exact`), or more than the limit arrived (a file that
        /// grows, a FIFO, a device: then `size` is the limit + 1).
        case tooLarge(size: Int, exact: Bool)
    }

    /// The content of `path` when it has at most `limit` bytes. The size is taken with
    /// fstat on the opened file (nothing is read from a file already too large), and no more
    /// than `limit` + 1 bytes are ever read, so neither a file that grows nor a FIFO nor
    /// `/dev/zero` gets past it. Opening does not wait for a FIFO's writer.
    public static func readFile(_ path: String, limit: Int) -> Result<LimitedRead, Errno> {
        let fd: Int32, info: stat
        switch openForReading(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) {
        case .success(let opened): (fd, info) = opened
        case .failure(let error): return .failure(error)
        }
        defer { close(fd) }
        let regular = (info.st_mode & S_IFMT) == S_IFREG
        if regular, info.st_size > limit { return .success(.tooLarge(size: Int(info.st_size), exact: true)) }
        // Reads block again (a pipe's data may come later); the open only was not to wait.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var bytes = [UInt8](repeating: 0, count: min(limit, regular ? Int(info.st_size) : 1 << 16) + 1)
        var filled = 0
        while filled <= limit {
            if filled == bytes.count { bytes.append(contentsOf: repeatElement(0, count: min(bytes.count, limit + 1 - filled))) }
            let count = bytes.withUnsafeMutableBytes { buffer in
                retryingEINTR { read(fd, buffer.baseAddress! + filled, buffer.count - filled) }
            }
            switch count {
            case .success(0):
                bytes.removeSubrange(filled...)
                return .success(.bytes(bytes))
            case .success(let n): filled += n
            case .failure(let error): return .failure(error)
            }
        }
        return .success(.tooLarge(size: filled, exact: false))
    }

    /// The mode (type and permission bits) of `path` as this process opens it for reading:
    /// a file it cannot read is the open's errno, as the reader of the file would meet it
    /// (not `access`'s guess). Opening does not wait for a FIFO's writer; nothing is read.
    public static func modeOfReadable(_ path: String) -> Result<mode_t, Errno> {
        openForReading(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK).map { fd, info in
            close(fd)
            return info.st_mode
        }
    }

    /// Writes all of `text` to `fd`, retrying short writes and EINTR; errors are dropped
    /// (there is nowhere left to report a failing stdout or stderr).
    public static func writeAll(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                guard case .success(let n) = retryingEINTR({ write(fd, buffer.baseAddress! + offset, buffer.count - offset) }),
                      n > 0 else { return }
                offset += n
            }
        }
    }

    /// What kind of thing is at `path`, following symlinks; nil when nothing is there.
    public static func kind(of path: String) -> FileKind? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFREG: return .regular
        default: return .other
        }
    }

    /// True when `path` is a regular file and not a symlink (`lstat`).
    public static func isRegularFileNoFollow(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// The names of the regular files (not symlinks) directly in an opened folder, read
    /// with one `getdents` stream: the entry types come with the names, so a folder of
    /// 100,000 files costs no `stat` per file (only where the filesystem gives no type).
    public static func regularFiles(in folder: FileDescriptor) -> Set<String> {
        var files = Set<String>()
        let copy = dup(folder.raw)
        guard copy >= 0 else { return files }
        guard let dir = fdopendir(copy) else { close(copy); return files }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let type = entry.pointee.d_type
            guard type == UInt8(DT_REG) || type == UInt8(DT_UNKNOWN) else { continue }
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if type == UInt8(DT_UNKNOWN) {
                var info = stat()
                guard fstatat(folder.raw, name, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            }
            files.insert(name)
        }
        return files
    }

    /// Every entry directly in an opened folder, with its kind as the entry says it (symlinks
    /// are `.other`, never followed), sorted bytewise; one `getdents` stream, an `fstatat`
    /// only where the filesystem gives no type.
    public static func entries(in folder: FileDescriptor) -> [(name: String, kind: FileKind)] {
        var out: [(name: String, kind: FileKind)] = []
        readEntries(of: folder) { name, type in
            let kind: FileKind
            switch type == UInt8(DT_UNKNOWN) ? typeByStatus(name, in: folder) : type {
            case UInt8(DT_DIR): kind = .directory
            case UInt8(DT_REG): kind = .regular
            case nil: return
            default: kind = .other
            }
            out.append((String(cString: name), kind))
        }
        out.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }  // bytewise, nothing copied per comparison
        return out
    }

    /// The names of the folders directly in an opened folder (never a symlink), unsorted; a
    /// name is made only for a folder (`CacheStamp` walks trees of many files this way).
    public static func folders(in folder: FileDescriptor) -> [String] {
        var out: [String] = []
        readEntries(of: folder) { name, type in
            guard type == UInt8(DT_DIR) || type == UInt8(DT_UNKNOWN) && typeByStatus(name, in: folder) == UInt8(DT_DIR) else { return }
            out.append(String(cString: name))
        }
        return out
    }

    /// Each entry of an opened folder but `.` and `..`, as its name (valid during the call)
    /// and `d_type`, from one `getdents` stream over a duplicate of the descriptor.
    private static func readEntries(of folder: FileDescriptor, _ body: (UnsafePointer<CChar>, UInt8) -> Void) {
        let copy = dup(folder.raw)
        guard copy >= 0 else { return }
        guard let dir = fdopendir(copy) else { close(copy); return }
        defer { closedir(dir) }
        rewinddir(dir)  // the duplicate shares the folder's offset: start from the beginning
        while let entry = readdir(dir) {
            withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { name in
                    // "." and "..": skipped without making a string of them
                    if name[0] == 0x2E && (name[1] == 0 || name[1] == 0x2E && name[2] == 0) { return }
                    body(name, entry.pointee.d_type)
                }
            }
        }
    }

    /// The `d_type` an entry's `fstatat` gives (a symlink is `DT_LNK`, never followed), for a
    /// filesystem whose entries carry none; nil when it is gone.
    private static func typeByStatus(_ name: UnsafePointer<CChar>, in folder: FileDescriptor) -> UInt8? {
        var info = stat()
        guard fstatat(folder.raw, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return UInt8(DT_DIR)
        case S_IFREG: return UInt8(DT_REG)
        default: return UInt8(DT_LNK)
        }
    }

    /// `fstatat` of `name` in `folder`, never following a symlink.
    public static func status(of name: String, in folder: FileDescriptor) -> Result<stat, Errno> {
        var info = stat()
        return fstatat(folder.raw, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? .success(info) : .failure(.current)
    }

    /// `unlinkat`: removes the file (or, with `folder: true`, the empty folder) `name` in
    /// `parent`; a symlink is removed itself, never its target.
    public static func remove(_ name: String, in parent: FileDescriptor, folder: Bool = false) -> Result<Void, Errno> {
        unlinkat(parent.raw, name, folder ? AT_REMOVEDIR : 0) == 0 ? .success(()) : .failure(.current)
    }

    /// `renameat`: moves `name` in `from` to `newName` in `to` (atomic on one filesystem).
    public static func rename(_ name: String, in from: FileDescriptor, to newName: String, in to: FileDescriptor) -> Result<Void, Errno> {
        renameat(from.raw, name, to.raw, newName) == 0 ? .success(()) : .failure(.current)
    }

    /// Creates `path` and every missing folder above it with mode 0755 (less the umask, as
    /// `mkdir -p` does); an existing folder is fine.
    public static func makeFolders(_ path: String) -> Result<Void, Errno> {
        var partial = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            partial += "/" + component
            if case .failure(let error) = retryingEINTR({ mkdir(partial, 0o755) }), error.code != EEXIST { return .failure(error) }
        }
        return .success(())
    }

    /// Bytes free for an unprivileged writer on the filesystem holding `path` (`statvfs`).
    public static func freeBytes(at path: String) -> Result<UInt64, Errno> {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return .failure(.current) }
        return .success(UInt64(info.f_bavail) * UInt64(info.f_frsize))
    }

    /// The names in a folder, sorted bytewise, without `.` and `..`.
    public static func listDirectory(_ path: String) -> Result<[String], Errno> {
        guard let dir = opendir(path) else { return .failure(.current) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return .success(names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
    }
}

/// The kinds of file-system entries prefetch tells apart.
public enum FileKind: Sendable {
    case regular, directory, other
}

extension FileSystem {
    /// Replaces the file at `path` with `bytes` for readers at once: written to `temporary`
    /// in the same folder (mode 0644, less the umask), then renamed over it. Not fsynced —
    /// for files a next pass rewrites anyway (the metrics).
    public static func replaceFile(_ path: String, with bytes: [UInt8], temporary: String) -> Result<Void, Errno> {
        let fd = retryingEINTR { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644) }
        guard case .success(let raw) = fd else { return fd.map { _ in () } }
        let file = FileDescriptor(raw: raw)
        if case .failure(let error) = bytes.withUnsafeBytes({ file.write($0) }) {
            unlink(temporary)
            return .failure(error)
        }
        return Glibc.rename(temporary, path) == 0 ? .success(()) : .failure(.current)
    }
}
