import Foundation

/// `consistency: release` on disk (SPEC §6, "All-or-nothing releases"):
///
/// ```
/// CACHE/<feed> -> .prefetch/generations/<feed>/<n>    relative symlink: what readers see
/// CACHE/.prefetch/generations/<feed>/<n>              the live generation
/// CACHE/.prefetch/generations/<feed>/<n+1>            the release being staged, when one is
/// CACHE/.prefetch/generations/<feed>/<n-1>            the previous one, kept until the next switch
/// ```
///
/// The symlink is the one prefetch follows, and only after `readlinkat` shows it points at
/// one of its own generations; below it, every folder is opened without following any.
extension CacheLayout {
    static let generations = "generations"

    /// `CACHE/<feed>`'s text for generation `n`, relative to the cache.
    static func generationLink(feed: String, _ n: Int) -> String { "\(meta)/\(generations)/\(feed)/\(n)" }

    /// The generation a symlink's text names, when it is exactly one of `feed`'s.
    static func generation(fromLink text: String, feed: String) -> Int? {
        let prefix = "\(meta)/\(generations)/\(feed)/"
        guard text.hasPrefix(prefix) else { return nil }
        return generationNumber(String(text.dropFirst(prefix.count)))
    }

    /// A generation folder's number: digits, no leading zero.
    static func generationNumber(_ name: String) -> Int? {
        guard let first = name.utf8.first, first != UInt8(ascii: "0"), name.utf8.count <= 18,
              name.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(name)
    }

    /// The name in `.prefetch/` of what is about to replace `CACHE/<feed>` (a new symlink, or
    /// a plain folder), and of what it replaced until it is removed.
    static func switchName(feed: String) -> String { "switch-\(feed)" }

    /// A generation's name while it is built (never taken for a generation).
    static func buildingName(_ n: Int) -> String { "\(n).building" }
}

/// How a feed's folder is laid out on disk.
enum FeedLayout {
    /// No `CACHE/<feed>` yet.
    case missing
    /// A plain folder (`consistency: file`).
    case plain
    /// A symlink to one of prefetch's own generations: the live one; the one being staged
    /// (live + 1), when a release is under way; and the others (the previous one, leftovers).
    case generations(live: Int, staging: Int?, others: [Int])
    /// prefetch's own symlink whose generation is gone (removed by hand): only the link
    /// itself is replaced, by laying the feed out again.
    case dangling
    /// Something prefetch did not make (a symlink elsewhere, a file): never followed nor touched.
    case foreign(SafePathError)
}

extension FeedLayout {
    /// Laid out as generations (whole, or with its live one gone).
    var isGenerations: Bool {
        switch self {
        case .generations, .dangling: return true
        case .missing, .plain, .foreign: return false
        }
    }
}

/// Which generation of a `consistency: release` feed a command works on; for a plain
/// folder both are the folder.
enum FeedView {
    /// What readers see: the live generation.
    case live
    /// What prefetch works on: the release being staged when there is one, else the live one.
    case writer
}

extension CacheFolder {
    /// How `feed`'s folder is laid out now.
    func layout(of feed: String) -> FeedLayout {
        guard case .success(let info) = FileSystem.status(of: feed, in: root) else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFDIR:
            return .plain
        case S_IFLNK:
            guard let text = FolderTree.readLink(feed, in: root), let live = CacheLayout.generation(fromLink: text, feed: feed) else {
                return .foreign(.symlink(feed))
            }
            guard let folder = generationsFolder(feed, create: false) else { return .dangling }
            let numbers = FileSystem.entries(in: folder).filter { $0.kind == .directory }.compactMap { CacheLayout.generationNumber($0.name) }
            guard numbers.contains(live) else { return .dangling }
            let staging = numbers.contains(live + 1) ? live + 1 : nil
            return .generations(live: live, staging: staging, others: numbers.filter { $0 != live && $0 != live + 1 }.sorted())
        default:
            return .foreign(.notAFolder(feed))
        }
    }

    /// `feed`'s folder as `view` sees it, opened without following any symlink but the
    /// feed's own checked one; creates nothing.
    func feedFolder(_ feed: String, _ view: FeedView = .writer) -> Result<FileDescriptor, SafePathError> {
        switch layout(of: feed) {
        case .missing, .dangling: return .failure(.system(feed, Errno(ENOENT)))
        case .plain: return SafePath.openFolders([Substring(feed)], below: root, create: false)
        case .generations(let live, let staging, _): return generation(feed, view == .writer ? staging ?? live : live)
        case .foreign(let error): return .failure(error)
        }
    }

    /// The folder a new file of `feed` is placed in: a plain feed's folder (created as
    /// needed, its parent added to `createdIn`), or the release being staged — made on the
    /// first placement of a release, with hard links of every file of the live generation.
    func placementFolder(_ feed: String, createdIn: inout [FileDescriptor]) -> Result<FileDescriptor, SafePathError> {
        stagingLock.lock()
        defer { stagingLock.unlock() }
        switch layout(of: feed) {
        case .missing, .plain:
            return SafePath.openFolders([Substring(feed)], below: root, create: true, createdIn: &createdIn)
        case .generations(_, let staging?, _):
            return generation(feed, staging)
        case .generations(let live, nil, _):
            return stage(feed, after: live)
        case .dangling:
            return .failure(.system(feed, Errno(ENOENT)))  // the next pass lays it out again
        case .foreign(let error):
            return .failure(error)
        }
    }

    /// `.prefetch/generations/<feed>/`; when it is created, the folders it was made in are
    /// fsynced, so the generations below it survive a power cut.
    func generationsFolder(_ feed: String, create: Bool) -> FileDescriptor? {
        var createdIn: [FileDescriptor] = []
        let folder = try? SafePath.openFolders([Substring(CacheLayout.meta), Substring(CacheLayout.generations), Substring(feed)],
                                               below: root, create: create, createdIn: &createdIn).get()
        if !syncIsFree { for parent in createdIn where parent.sync().isSuccess == false { return nil } }
        return folder
    }

    /// Removes `.prefetch/generations/<feed>/` and every generation in it.
    func removeGenerations(of feed: String) -> Result<Void, Errno> {
        guard let generations = try? SafePath.openFolders([Substring(CacheLayout.meta), Substring(CacheLayout.generations)],
                                                          below: root, create: false).get() else { return .success(()) }
        return FolderTree.removeTree(feed, in: generations)
    }

    func generation(_ feed: String, _ n: Int) -> Result<FileDescriptor, SafePathError> {
        SafePath.openFolders([Substring(CacheLayout.meta), Substring(CacheLayout.generations), Substring(feed), Substring(String(n))],
                             below: root, create: false)
    }

    /// Builds generation `n` of `feed` under a temporary name from `source`'s files (hard
    /// links), fsyncs it, and gives it its name: a generation is whole or absent.
    private func build(_ feed: String, _ n: Int, from source: FileDescriptor?, in folder: FileDescriptor) -> Result<FileDescriptor, SafePathError> {
        let building = CacheLayout.buildingName(n)
        let name = CacheLayout.generationLink(feed: feed, n)
        _ = FolderTree.removeTree(building, in: folder)  // a build a crash cut short
        let made: FileDescriptor
        switch FolderTree.makeFolder(building, in: folder) {
        case .success(let opened): made = opened
        case .failure(let error): return .failure(.system(name, error))
        }
        if let source, case .failure(let error) = FolderTree.linkTree(from: source, to: made, sync: !syncIsFree) {
            return .failure(.system(name, error))
        }
        if case .failure(let error) = FileSystem.rename(building, in: folder, to: String(n), in: folder) { return .failure(.system(name, error)) }
        if !syncIsFree, case .failure(let error) = folder.sync() { return .failure(.system(name, error)) }
        return generation(feed, n)
    }

    /// The release after generation `live`, staged: every file of `live` hard-linked.
    private func stage(_ feed: String, after live: Int) -> Result<FileDescriptor, SafePathError> {
        guard let folder = generationsFolder(feed, create: false) else { return .failure(.system(feed, Errno(ENOENT))) }
        let source: FileDescriptor
        switch generation(feed, live) {
        case .success(let opened): source = opened
        case .failure(let error): return .failure(error)
        }
        return build(feed, live + 1, from: source, in: folder)
    }

    /// Points `CACHE/<feed>` at generation `n` with one atomic rename of a new symlink over
    /// it (or, when `exchange`, one `RENAME_EXCHANGE` with the plain folder there, which
    /// `.prefetch/switch-<feed>` then holds), then fsyncs the cache's root.
    private func point(_ feed: String, at n: Int, exchange: Bool) -> Result<Void, CacheError> {
        guard let meta else { return .failure(.cannotWrite("\(path)/\(CacheLayout.meta)", "missing")) }
        let name = CacheLayout.switchName(feed: feed)
        let where_ = "\(path)/\(feed)"
        _ = FolderTree.removeTree(name, in: meta)
        if case .failure(let error) = FolderTree.makeSymlink(name, in: meta, to: CacheLayout.generationLink(feed: feed, n)) {
            return .failure(.cannotWrite(where_, error.description))
        }
        let moved = exchange ? FolderTree.exchange(name, in: meta, with: feed, in: root) : FileSystem.rename(name, in: meta, to: feed, in: root)
        if case .failure(let error) = moved { return .failure(.cannotWrite(where_, error.description)) }
        if !syncIsFree, case .failure(let error) = root.sync() { return .failure(.cannotWrite(path, "fsync: \(error)")) }
        return .success(())
    }

    /// Switches readers of `feed` to the release staged for it, when there is one: one
    /// atomic rename of the symlink. The generation before the one that was live goes; the
    /// one that was live stays until the next switch, so a reader in the middle of it is
    /// not cut off. Returns whether it switched.
    func switchGeneration(_ feed: String) -> Result<Bool, CacheError> {
        stagingLock.lock()
        defer { stagingLock.unlock() }
        guard case .generations(_, let staging?, let others) = layout(of: feed) else { return .success(false) }
        if case .failure(let error) = point(feed, at: staging, exchange: false) { return .failure(error) }
        if let folder = generationsFolder(feed, create: false) {
            for n in others { _ = FolderTree.removeTree(String(n), in: folder) }  // one left is removed at the next switch
        }
        return .success(true)
    }

    /// Lays `feed`'s folder out for `consistency`, keeping every cached file (hard links)
    /// and never leaving `CACHE/<feed>` missing for a reader: plain → generations, or back.
    /// Returns whether it changed anything.
    func lay(_ feed: String, for consistency: Consistency) -> Result<Bool, CacheError> {
        stagingLock.lock()
        defer { stagingLock.unlock() }
        let where_ = "\(path)/\(feed)"
        guard let meta else { return .failure(.cannotWrite("\(path)/\(CacheLayout.meta)", "missing")) }
        let switchName = CacheLayout.switchName(feed: feed)
        var layout = self.layout(of: feed)
        if case .dangling = layout {  // its own link, to nothing: replaced as if there were none
            if case .failure(let error) = FileSystem.remove(feed, in: root) { return .failure(.cannotWrite(where_, error.description)) }
            layout = .missing
        }
        switch (layout, consistency) {
        case (.missing, .release), (.plain, .release):
            let plain: Bool
            if case .plain = layout { plain = true } else { plain = false }
            guard let folder = generationsFolder(feed, create: true) else { return .failure(.cannotWrite(where_, "cannot make its generations folder")) }
            for entry in FileSystem.entries(in: folder) { _ = FolderTree.removeTree(entry.name, in: folder) }  // a conversion cut short
            var source: FileDescriptor?
            if plain {
                switch SafePath.openFolders([Substring(feed)], below: root, create: false) {
                case .success(let opened): source = opened
                case .failure(let error): return .failure(.unsafePath(error.description))
                }
            }
            if case .failure(let error) = build(feed, 1, from: source, in: folder) { return .failure(.unsafePath(error.description)) }
            if case .failure(let error) = point(feed, at: 1, exchange: plain) { return .failure(error) }
            if plain, case .failure(let error) = FolderTree.removeTree(switchName, in: meta) {  // the plain folder, now out of sight
                return .failure(.cannotWrite("\(path)/\(CacheLayout.metaEntry(switchName))", error.description))
            }
            return .success(true)
        case (.generations(let live, let staging, _), .file):
            _ = FolderTree.removeTree(switchName, in: meta)
            let made: FileDescriptor
            switch FolderTree.makeFolder(switchName, in: meta) {
            case .success(let opened): made = opened
            case .failure(let error): return .failure(.cannotWrite(where_, error.description))
            }
            // What the writer had: the release being staged keeps what it already fetched.
            switch generation(feed, staging ?? live) {
            case .success(let source):
                if case .failure(let error) = FolderTree.linkTree(from: source, to: made, sync: !syncIsFree) {
                    return .failure(.cannotWrite(where_, error.description))
                }
            case .failure(let error): return .failure(.unsafePath(error.description))
            }
            if case .failure(let error) = FolderTree.exchange(switchName, in: meta, with: feed, in: root) {
                return .failure(.cannotWrite(where_, error.description))
            }
            if !syncIsFree, case .failure(let error) = root.sync() { return .failure(.cannotWrite(path, "fsync: \(error)")) }
            _ = FileSystem.remove(switchName, in: meta)  // the old symlink
            if case .failure(let error) = removeGenerations(of: feed) {
                return .failure(.cannotWrite("\(path)/\(CacheLayout.generationLink(feed: feed, live))", error.description))
            }
            return .success(true)
        default:  // laid out already; or something foreign, which placements refuse one by one
            return .success(false)
        }
    }
}
