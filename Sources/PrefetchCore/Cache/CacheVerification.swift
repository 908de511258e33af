import Foundation

extension CacheFolder {
    /// The SHA-256 of the final file `feed/path`, read through its folder's descriptor
    /// (no symlink followed) one `buffer` at a time: memory stays bounded whatever its size.
    /// Nil when there is no regular file there; the read error, when one came.
    func hashFinal(feed: String, path: String, buffer: UnsafeMutableRawBufferPointer) -> Result<String, Errno>? {
        var folders: [String: FileDescriptor] = [:]
        guard finalSize(feed: feed, path: path, folders: &folders) != nil, let folder = folders.values.first else { return nil }
        let leaf = path.lastSlash.map { path.suffix(afterSlash: $0) } ?? path
        let file: FileDescriptor
        switch FileDescriptor.open(leaf, relativeTo: folder, flags: O_RDONLY | O_NOFOLLOW) {
        case .success(let opened): file = opened
        case .failure(let error): return .failure(error)
        }
        let hasher = SHA256()
        while true {
            switch file.read(into: buffer) {
            case .failure(let error): return .failure(error)
            case .success(0): return .success(SHA256.hex(hasher.finish()))
            case .success(let count): hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            }
        }
    }

    /// Removes the final file `feed/path` (in its folder, by descriptor).
    func removeFinal(feed: String, path: String) -> Result<Void, Errno> {
        var folders: [String: FileDescriptor] = [:]
        guard finalSize(feed: feed, path: path, folders: &folders) != nil, let folder = folders.values.first else { return .failure(Errno(ENOENT)) }
        let leaf = path.lastSlash.map { path.suffix(afterSlash: $0) } ?? path
        return FileSystem.remove(leaf, in: folder).flatMap { syncIsFree ? .success(()) : folder.sync() }
    }
}
