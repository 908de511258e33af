import Foundation

/// An owned file descriptor, closed in `deinit`; the calls prefetch makes on it, with
/// typed errno and EINTR retried (as swift-system does).
public final class FileDescriptor {
    public let raw: Int32

    public init(raw: Int32) {
        self.raw = raw
    }

    deinit {
        close(raw)
    }

    /// Opens `path` relative to `directory` (or the working directory).
    public static func open(_ path: String, relativeTo directory: FileDescriptor? = nil, flags: Int32,
                            mode: mode_t = 0o644) -> Result<FileDescriptor, Errno> {
        FileSystem.retryingEINTR { openat(directory?.raw ?? AT_FDCWD, path, flags | O_CLOEXEC, mode) }
            .map { FileDescriptor(raw: $0) }
    }

    /// Writes all of `bytes` at the current offset.
    public func write(_ bytes: UnsafeRawBufferPointer) -> Result<Void, Errno> {
        var offset = 0
        while offset < bytes.count {
            switch FileSystem.retryingEINTR({ Glibc.write(raw, bytes.baseAddress! + offset, bytes.count - offset) }) {
            case .success(let n): offset += n
            case .failure(let error): return .failure(error)
            }
        }
        return .success(())
    }

    /// Writes all of `bytes` at `position` (`pwrite`; the file offset does not move).
    public func write(_ bytes: UnsafeRawBufferPointer, at position: UInt64) -> Result<Void, Errno> {
        var done = 0
        while done < bytes.count {
            switch FileSystem.retryingEINTR({ pwrite(raw, bytes.baseAddress! + done, bytes.count - done, off_t(position) + off_t(done)) }) {
            case .success(let n): done += n
            case .failure(let error): return .failure(error)
            }
        }
        return .success(())
    }

    /// Reads up to `count` bytes into `buffer`; 0 at the end of the file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        FileSystem.retryingEINTR { Glibc.read(raw, buffer.baseAddress, buffer.count) }
    }

    /// Reads up to `buffer.count` bytes from `offset` (`pread`: the file's position is not moved).
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) -> Result<Int, Errno> {
        FileSystem.retryingEINTR { pread(raw, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    public func sync() -> Result<Void, Errno> {
        FileSystem.retryingEINTR { fsync(raw) }.map { _ in () }
    }

    public func truncate(to length: UInt64) -> Result<Void, Errno> {
        FileSystem.retryingEINTR { ftruncate(raw, off_t(length)) }.map { _ in () }
    }

    public func seek(to offset: UInt64) -> Result<Void, Errno> {
        FileSystem.retryingEINTR { lseek(raw, off_t(offset), SEEK_SET) }.map { _ in () }
    }

    /// The file's size and kind (`fstat`).
    public func status() -> Result<stat, Errno> {
        var info = stat()
        return fstat(raw, &info) == 0 ? .success(info) : .failure(.current)
    }

    /// `flock(LOCK_EX | LOCK_NB)`: false when another process holds it.
    public func tryLock() -> Result<Bool, Errno> {
        while true {
            if flock(raw, LOCK_EX | LOCK_NB) == 0 { return .success(true) }
            if errno == EWOULDBLOCK { return .success(false) }
            if errno != EINTR { return .failure(.current) }
        }
    }

    /// `flock(LOCK_EX)`, waiting for the holder to let go.
    public func lock() -> Result<Void, Errno> {
        FileSystem.retryingEINTR { flock(raw, LOCK_EX) }.map { _ in () }
    }
}

/// A folder opened for `*at` calls, reached without following any symlink.
public enum SafePath {
    /// Opens (creating with mode 0755 as needed) every folder of `components` below `root`,
    /// refusing symlinks at every step: SPEC §5 "a symlink anywhere on the way to a final
    /// file is not followed".
    public static func openFolders(_ components: [Substring], below root: FileDescriptor,
                                   create: Bool) -> Result<FileDescriptor, SafePathError> {
        var created: [FileDescriptor] = []
        return openFolders(components, below: root, create: create, createdIn: &created)
    }

    /// The same, adding to `createdIn` each folder in which a new folder was made: its entry
    /// is durable only once that folder is fsynced (the placement's caller does so before it
    /// records a file below).
    public static func openFolders(_ components: [Substring], below root: FileDescriptor, create: Bool,
                                   createdIn: inout [FileDescriptor]) -> Result<FileDescriptor, SafePathError> {
        var chain: [FileDescriptor] = []
        return openChain(components, below: root, create: create, createdIn: &createdIn, chain: &chain)
    }

    /// The same, keeping every folder opened on the way in `chain` (from the first
    /// component's down to the last's).
    public static func openChain(_ components: [Substring], below root: FileDescriptor, create: Bool,
                                 createdIn: inout [FileDescriptor], chain: inout [FileDescriptor]) -> Result<FileDescriptor, SafePathError> {
        var current = root
        var walked = ""
        for component in components {
            walked += (walked.isEmpty ? "" : "/") + component
            let name = String(component)
            var opened = FileDescriptor.open(name, relativeTo: current, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
            if case .failure(let error) = opened, error.code == ENOENT, create {
                if mkdirat(current.raw, name, 0o755) != 0 {
                    if errno != EEXIST { return .failure(.system(walked, Errno.current)) }
                } else if !createdIn.contains(where: { $0 === current }) {
                    createdIn.append(current)
                }
                opened = FileDescriptor.open(name, relativeTo: current, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
            }
            if case .success(let folder) = opened { chain.append(folder) }
            switch opened {
            case .success(let folder): current = folder
            case .failure(let error) where error.code == ELOOP || error.code == ENOTDIR:
                var info = stat()
                if fstatat(current.raw, name, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFLNK {
                    return .failure(.symlink(walked))
                }
                return .failure(.notAFolder(walked))
            case .failure(let error):
                return .failure(.system(walked, error))
            }
        }
        return .success(current)
    }
}

/// Why a path below the cache could not be reached safely.
public enum SafePathError: Error, Sendable, CustomStringConvertible {
    case symlink(String)
    case notAFolder(String)
    case system(String, Errno)

    public var description: String {
        switch self {
        case .symlink(let path): return "'\(path)' is a symlink; prefetch does not follow symlinks in the cache"
        case .notAFolder(let path): return "'\(path)' is in the way: it is not a folder"
        case .system(let path, let error): return "'\(path)': \(error)"
        }
    }
}

extension Result {
    /// True for `.success`.
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
