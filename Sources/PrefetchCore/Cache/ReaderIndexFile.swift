import Foundation

extension CacheLayout {
    /// `CACHE/<feed>/.prefetch-index.json`: what a reader application reads (SPEC §6).
    public static let index = ".prefetch-index.json"
    /// Its temporary name while it is written (hidden, never taken for the index).
    static let indexTemp = ".prefetch-index.json.tmp"
}

extension CacheFolder {
    /// Replaces `CACHE/<feed>/.prefetch-index.json` with `text` atomically: a hidden
    /// temporary file in the feed's folder, fsync, rename, then the folder's fsync — all
    /// under the feed folder's descriptor (the writer's view: for `consistency: release`, the
    /// release being staged when there is one), opened without following a symlink.
    /// A reader sees the old index or the new one, whole.
    func writeIndex(feed: String, _ bytes: [UInt8], view: FeedView = .writer) -> Result<Void, CacheError> {
        writeIndex(feed: feed, view: view) { hand in hand(bytes) }
    }

    /// The same with the text made while it is written: `produce` hands its pieces to the
    /// function it is given (a large feed's index runs to tens of MB: never held whole).
    func writeIndex(feed: String, view: FeedView = .writer,
                    _ produce: (_ write: ([UInt8]) -> Void) -> Void) -> Result<Void, CacheError> {
        let where_ = "\(path)/\(feed)/\(CacheLayout.index)"
        let folder: FileDescriptor
        var none: [FileDescriptor] = []
        // A feed without a folder yet gets a plain one, as its first placement would.
        let missing: Bool
        if case .missing = layout(of: feed) { missing = true } else { missing = false }
        switch missing ? SafePath.openFolders([Substring(feed)], below: root, create: true, createdIn: &none) : feedFolder(feed, view) {
        case .success(let opened): folder = opened
        case .failure(let error): return .failure(.unsafePath(error.description))
        }
        let file: FileDescriptor
        switch FileDescriptor.open(CacheLayout.indexTemp, relativeTo: folder, flags: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW) {
        case .success(let opened): file = opened
        case .failure(let error): return .failure(.cannotWrite(where_, error.description))
        }
        var written: Result<Void, Errno> = .success(())
        produce { piece in
            if case .success = written { written = piece.withUnsafeBytes { file.write($0) } }  // after a failure, nothing more
        }
        written = written.flatMap { syncIsFree ? .success(()) : file.sync() }
        if case .failure(let error) = written {
            _ = FileSystem.remove(CacheLayout.indexTemp, in: folder)  // the old index stays; a stale temp is overwritten next time
            return .failure(.cannotWrite(where_, error.description))
        }
        if case .failure(let error) = FileSystem.rename(CacheLayout.indexTemp, in: folder, to: CacheLayout.index, in: folder) {
            return .failure(.cannotWrite(where_, error.description))
        }
        if !syncIsFree, case .failure(let error) = folder.sync() { return .failure(.cannotWrite("\(path)/\(feed)", "fsync: \(error)")) }
        return .success(())
    }

    /// The bytes of the feed's index as `view` sees it, when there is one.
    func readIndex(feed: String, view: FeedView) -> [UInt8]? {
        guard case .success(let folder) = feedFolder(feed, view),
              case .success(let file) = FileDescriptor.open(CacheLayout.index, relativeTo: folder, flags: O_RDONLY | O_NOFOLLOW) else { return nil }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { file.read(into: $0) }
            guard case .success(let n) = count else { return nil }
            if n == 0 { return bytes }
            bytes += buffer[0..<n]
        }
    }

    /// Whether the feed's index exists (a first pass writes it even when nothing changed).
    func hasIndex(feed: String) -> Bool {
        guard case .success(let folder) = feedFolder(feed) else { return false }
        return FileSystem.status(of: CacheLayout.index, in: folder).isSuccess
    }
}
