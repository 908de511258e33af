import Foundation

/// A delta's files on disk (SPEC §9): its seed (the cached copy, read without following a
/// symlink), the delta partial it assembles in the partial folder (written at offsets), and
/// the SHA-1 and SHA-256 of what it assembled, read back through that name before placement.
extension CacheFolder {
    /// The final file `feed/path` as the writer sees it, opened for reading, when it is a regular file.
    func openFinal(feed: String, path: String) -> FileDescriptor? {
        var folders: [String: FileDescriptor] = [:]
        let final = FinalPath(feed: feed, path: path)
        guard finalSize(feed: feed, path: path, folders: &folders) != nil, let folder = folders[final.key],
              case .success(let file) = FileDescriptor.open(final.leaf, relativeTo: folder, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK),
              case .success(let info) = file.status(), (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return file
    }

    /// Creates the delta partial `name`, empty then `length` bytes long (sparse: blocks are
    /// written at their offsets), replacing any of that name.
    func createDeltaPartial(_ name: String, length: UInt64) -> Result<FileDescriptor, Errno> {
        createPartial(name).flatMap { file in file.truncate(to: length).map { file } }
    }

    /// The SHA-1 of an open file from its start, read one `buffer` at a time.
    static func sha1(_ file: FileDescriptor, buffer: inout [UInt8]) -> Result<String, Errno> {
        if case .failure(let error) = file.seek(to: 0) { return .failure(error) }
        let hasher = SHA1()
        return readAll(file, buffer: &buffer) { hasher.update($0) }.map { hasher.finishHex() }
    }

    /// The SHA-1, the SHA-256 and the length of an open file from its start, with its fstat's identity.
    static func digests(_ file: FileDescriptor, buffer: inout [UInt8]) -> Result<(sha1: String, sha256: String, length: UInt64, identity: FileIdentity), Errno> {
        let info: stat
        switch file.status() {
        case .success(let found): info = found
        case .failure(let error): return .failure(error)
        }
        if case .failure(let error) = file.seek(to: 0) { return .failure(error) }
        // The SHA-1 on a thread of its own (`pread`), the SHA-256 and the length here: two cores,
        // the file (just written: in the page cache) read by each.
        let sha1 = BackgroundSHA1(file)
        let sha256 = SHA256()
        var length: UInt64 = 0
        if case .failure(let error) = readAll(file, buffer: &buffer, { bytes in
            sha256.update(bytes)
            length += UInt64(bytes.count)
        }) {
            sha1.cancel()
            return .failure(error)
        }
        guard let hex = sha1.result() else { return .failure(Errno(EIO)) }
        return .success((hex, SHA256.hex(sha256.finish()), length, FileIdentity(info)))
    }

    private static func readAll(_ file: FileDescriptor, buffer: inout [UInt8], _ body: (UnsafeRawBufferPointer) -> Void) -> Result<Void, Errno> {
        while true {
            let read = buffer.withUnsafeMutableBytes { buffer in
                file.read(into: buffer).map { count in
                    body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                    return count
                }
            }
            switch read {
            case .failure(let error): return .failure(error)
            case .success(0): return .success(())
            case .success: continue
            }
        }
    }

    /// Writes the `pieces` (file offsets) of `bytes`, which start at `offset` in the file, to
    /// `file` at their offsets (the `delta-write` fault point first); the error, or nil.
    static func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64, pieces: [Range<UInt64>], to file: FileDescriptor,
                      faults: FaultPoints = .none) -> Errno? {
        if let fault = faults.reach(.deltaWrite) { return fault }
        for piece in pieces {
            let slice = UnsafeRawBufferPointer(rebasing: bytes[Int(piece.lowerBound - offset)..<Int(piece.upperBound - offset)])
            if case .failure(let error) = file.write(slice, at: piece.lowerBound) { return error }
        }
        return nil
    }

    /// Opens the partial-folder file `name` for reading and writing (a kept delta partial).
    func openDeltaPartial(_ name: String) -> FileDescriptor? {
        openPartial(name)?.file
    }

    /// The bytes of the partial-folder file `name` (a kept control file), when it is a regular
    /// file of at most `limit` bytes.
    func readPartialFile(_ name: String, limit: Int) -> [UInt8]? {
        guard let (file, size, _) = openPartial(name), size <= UInt64(limit) else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        var filled = 0
        while filled < bytes.count {
            let read = bytes.withUnsafeMutableBytes { file.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
            guard case .success(let count) = read, count > 0 else { return nil }
            filled += count
        }
        return bytes
    }

    /// Writes `bytes` as the partial-folder file `name` (a control file kept beside its delta
    /// partial), fsynced; false when it cannot.
    func writePartialFile(_ name: String, _ bytes: [UInt8]) -> Bool {
        guard case .success(let file) = createPartial(name) else { return false }
        let written = bytes.withUnsafeBytes { file.write($0) }
        return written.isSuccess && file.sync().isSuccess
    }
}
