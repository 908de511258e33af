import Foundation

/// What the cached files take against `max_cache_size` (SPEC §8), and what may be removed
/// to make room, as found on disk now.
///
/// Counted: every regular file below each feed's folder (listed feeds, and feeds state.db
/// recorded whose manifest is gone), every generation of a `consistency: release` feed,
/// and the partials (a delta's partial and control file too, SPEC §9); apparent sizes (`st_size`), a hard-linked file once. Not counted:
/// state.db and everything else of `.prefetch/` (feed sources' copies, the lock), the
/// reader indexes (prefetch's own), folders, and folders prefetch never recorded.
///
/// Removable (`Room`): unlisted files of listed `consistency: file` feeds (with `prune:
/// true` they would go at the pass's end anyway: a manifest that drops a file frees its
/// room for the same pass); previous generations of listed `release` feeds once the live
/// generation has been live for `generationGrace` (a reader that resolved the old folder
/// gets that long). Never a listed file, never anything of a removed feed.
/// Walks by descriptor, never following a symlink; creates nothing.
public struct CacheUsage: Sendable {
    /// Bytes in use.
    public var used: UInt64
    /// What may go to make room.
    public var candidates: [Room]
    /// In how many seconds a previous generation not yet live long enough becomes room
    /// (the earliest; nil: none waits): the daemon wakes then for work the cap holds back.
    public var moreRoomIn: Int64?
    /// Files of `consistency: file` feeds with more than one link (SPEC §9: another path
    /// holds the same inode): replacing one frees nothing.
    public var linked: Set<ResourceKey> = []

    /// One thing that may be removed to make room.
    public struct Room: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            /// An unlisted file of a `consistency: file` feed, at `path` in its folder.
            case file(path: String)
            /// A previous generation of a `consistency: release` feed.
            case generation(Int)
        }
        public var feed: String
        public var kind: Kind
        /// The bytes its removal frees (a file hard-linked elsewhere frees none).
        public var bytes: UInt64
        /// When it was placed: the file's mtime (stamped at placement; a 304 leaves it); for
        /// a generation, the newest of the files it alone holds.
        public var placed: Instant

        /// For people: `feed/path`, or `feed (generation N)`.
        public var label: String {
            switch kind {
            case .file(let path): return feed + "/" + path
            case .generation(let n): return "\(feed) (generation \(n))"
            }
        }
    }

    /// How long a generation must have been live before the one before it may go.
    public static let generationGrace: Int64 = 60

    public init(used: UInt64, candidates: [Room] = []) {
        self.used = used
        self.candidates = candidates
    }
}

extension CacheUsage {
    /// Measures `cache` now. `feeds`: the listed feeds (their manifests in force);
    /// `recorded`: every feed state.db knows, removed ones included. `realNow` judges
    /// generations' ages (symlink mtimes are stamped by the real clock).
    static func measure(_ cache: CacheFolder?, feeds: [Feed], recorded: some Sequence<String>,
                        realNow: Instant = Clock.realNow()) -> CacheUsage {
        guard let cache else { return CacheUsage(used: 0) }
        var walk = Walk()
        let listed = Dictionary(feeds.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var names = Set(recorded)
        names.formUnion(listed.keys)
        for name in names.sorted() {
            let feed = listed[name]
            switch cache.layout(of: name) {
            case .plain:
                guard case .success(let folder) = SafePath.openFolders([Substring(name)], below: cache.root, create: false) else { continue }
                // Unlisted files are room of a listed feed that keeps its files one by one.
                let room = feed.map { $0.consistency == .file } ?? false
                let paths = room ? Set(feed!.resources.map(\.path)) : []
                walk.files(in: folder, relative: "", linkedOf: name, owner: { path in
                    room && !paths.contains(path) ? .room(.file(path: path), feed: name) : .kept
                })
            case .generations, .dangling:
                guard let generations = cache.generationsFolder(name, create: false) else { continue }
                // The previous generations go once the live one has been live long enough.
                var live = 0
                var liveFor: Int64 = 0
                if case .generations(let n, _, _) = cache.layout(of: name),
                   case .success(let link) = FileSystem.status(of: name, in: cache.root) {
                    live = n
                    liveFor = realNow.seconds - Int64(link.st_mtim.tv_sec)
                }
                let room = feed?.consistency == .release && live > 0 && liveFor >= generationGrace
                let waiting = feed?.consistency == .release && live > 0 && !room
                for entry in FileSystem.entries(in: generations) where entry.kind == .directory {
                    guard case .success(let folder) = FileDescriptor.open(entry.name, relativeTo: generations,
                                                                          flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW) else { continue }
                    let n = CacheLayout.generationNumber(entry.name)
                    let previous = room && n.map { $0 < live } == true
                    if waiting, n.map({ $0 < live }) == true {
                        let wait = max(1, generationGrace - liveFor)
                        walk.moreRoomIn = min(walk.moreRoomIn ?? wait, wait)
                    }
                    walk.files(in: folder, relative: "", owner: { _ in previous ? .room(.generation(n!), feed: name) : .kept })
                }
            case .missing, .foreign:
                continue
            }
        }
        if let partials = cache.partials {
            for entry in FileSystem.entries(in: partials)
            where entry.kind == .regular && (CacheLayout.isPartial(entry.name) || CacheLayout.isDeltaFile(entry.name)) {
                if case .success(let info) = FileSystem.status(of: entry.name, in: partials) { walk.count(info, owner: nil) }
            }
        }
        return walk.result()
    }

    /// The walk's tally: bytes, inodes seen more than once, and each candidate's own bytes.
    private struct Walk {
        enum Owner {
            case kept
            case room(Room.Kind, feed: String)
        }
        struct Inode: Hashable {
            var device: UInt64
            var number: UInt64
        }
        /// Hard-linked files (more than one link): where they were seen. -1: outside any
        /// candidate, or in more than one.
        var links: [Inode: (size: UInt64, seen: Int, links: Int, owner: Int)] = [:]
        var used: UInt64 = 0
        var moreRoomIn: Int64?
        var rooms: [Room] = []
        var roomIndex: [String: Int] = [:]
        /// Per candidate: its files' bytes with one link (freed for sure), and its hard-linked inodes.
        var single: [UInt64] = []
        var linked: [[Inode]] = []
        var linkedFiles: Set<ResourceKey> = []

        /// Every regular file below `folder`; the reader index at its top is prefetch's own.
        /// `linkedOf`: the feed whose files with more than one link are noted (`linked`).
        mutating func files(in folder: FileDescriptor, relative: String, linkedOf feed: String? = nil, owner: (String) -> Owner) {
            for entry in FileSystem.entries(in: folder) {
                if relative.isEmpty, entry.name == CacheLayout.index || entry.name == CacheLayout.indexTemp { continue }
                let path = relative.isEmpty ? entry.name : relative + "/" + entry.name
                switch entry.kind {
                case .directory:
                    guard case .success(let sub) = FileDescriptor.open(entry.name, relativeTo: folder,
                                                                       flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW) else { continue }
                    files(in: sub, relative: path, linkedOf: feed, owner: owner)
                case .regular:
                    guard case .success(let info) = FileSystem.status(of: entry.name, in: folder), (info.st_mode & S_IFMT) == S_IFREG else { continue }
                    var index: Int?
                    if case .room(let kind, let feed) = owner(path) { index = room(kind, feed: feed, placed: info) }
                    if let feed, info.st_nlink > 1 { linkedFiles.insert(ResourceKey(feed: feed, path: path)) }
                    count(info, owner: index)
                case .other:
                    continue  // a symlink is never followed, nor counted
                }
            }
        }

        /// The candidate `kind` of `feed`, made on its first file; its placement is its newest file's.
        mutating func room(_ kind: Room.Kind, feed: String, placed info: stat) -> Int {
            let placed = Instant(seconds: Int64(info.st_mtim.tv_sec)).advanced(byNanoseconds: Int64(info.st_mtim.tv_nsec))
            let key: String
            switch kind {
            case .file(let path): key = feed + "\0" + path
            case .generation(let n): key = feed + "\0\0\(n)"
            }
            if let known = roomIndex[key] {
                rooms[known].placed = max(rooms[known].placed, placed)
                return known
            }
            rooms.append(Room(feed: feed, kind: kind, bytes: 0, placed: placed))
            single.append(0)
            linked.append([])
            roomIndex[key] = rooms.count - 1
            return rooms.count - 1
        }

        mutating func count(_ info: stat, owner: Int?) {
            let size = UInt64(max(0, info.st_size))
            guard info.st_nlink > 1 else {
                used += size
                if let owner { single[owner] += size }
                return
            }
            let inode = Inode(device: UInt64(info.st_dev), number: UInt64(info.st_ino))
            if var known = links[inode] {
                known.seen += 1
                if known.owner != (owner ?? -1) { known.owner = -1 }
                links[inode] = known
            } else {
                used += size
                links[inode] = (size, 1, Int(info.st_nlink), owner ?? -1)
                if let owner { linked[owner].append(inode) }
            }
        }

        /// A hard-linked file is freed by a candidate only when every one of its links was
        /// seen, all in that candidate.
        func result() -> CacheUsage {
            var candidates: [Room] = []
            for index in rooms.indices {
                var room = rooms[index]
                room.bytes = single[index]
                for inode in linked[index] {
                    if let known = links[inode], known.owner == index, known.seen >= known.links { room.bytes += known.size }
                }
                if room.bytes > 0 { candidates.append(room) }  // removing it would free nothing
            }
            var usage = CacheUsage(used: used, candidates: candidates)
            usage.moreRoomIn = moreRoomIn
            usage.linked = linkedFiles
            return usage
        }
    }
}

extension CacheFolder {
    /// Removes one candidate to make room (SPEC §8), checking again that it still is one:
    /// a file is unlinked in its folder (reached without following a symlink) and the
    /// folders it leaves empty go; a generation goes only while it is not live nor staged.
    func removeRoom(_ room: CacheUsage.Room) -> Result<Void, Errno> {
        switch room.kind {
        case .file(let path):
            let final = FinalPath(feed: room.feed, path: path)
            guard case .plain = layout(of: room.feed),
                  case .success(let feedFolder) = SafePath.openFolders([Substring(room.feed)], below: root, create: false) else {
                return .failure(Errno(ENOENT))
            }
            var created: [FileDescriptor] = []
            var chain: [FileDescriptor] = []
            guard case .success(let folder) = SafePath.openChain(final.subfolders, below: feedFolder, create: false,
                                                                 createdIn: &created, chain: &chain) else { return .failure(Errno(ENOENT)) }
            if case .failure(let error) = FileSystem.remove(final.leaf, in: folder) { return .failure(error) }
            // The folders it leaves empty, deepest first (one that is not empty stays).
            let parents = [feedFolder] + chain.dropLast()
            for (parent, name) in zip(parents, final.subfolders).reversed() {
                if case .failure = FileSystem.remove(String(name), in: parent, folder: true) { break }
            }
            if !syncIsFree { _ = folder.sync() }
            return .success(())
        case .generation(let n):
            guard case .generations(let live, let staging, _) = layout(of: room.feed), n < live, n != staging,
                  let folder = generationsFolder(room.feed, create: false) else { return .failure(Errno(ENOENT)) }
            if case .failure(let error) = FolderTree.removeTree(String(n), in: folder) { return .failure(error) }
            if !syncIsFree { _ = folder.sync() }
            return .success(())
        }
    }
}
