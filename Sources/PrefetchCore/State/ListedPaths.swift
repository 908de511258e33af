import Foundation

/// The paths the loaded feeds list (`ListedFeedPaths`), found from the bytes of a state.db row without making a
/// string of them: the row's key then holds the resource's own path string (one storage for
/// both). A path over 15 bytes is an allocation of its own: 6.4 MB for 100,000 rows of
/// 17-byte paths, made again at every read of state.db.
///
/// Built for one read and dropped after it (a slot table of 4 bytes per 2 paths).
struct ListedPaths {
    private struct Table {
        let name: String
        let paths: ListedFeedPaths
        /// Positions in `resources` + 1 by the hash of their path (0: empty); a power of two
        /// at least twice the paths it holds.
        var slots: [Int32]
    }
    private var tables: [Table] = []
    /// Where each feed's table is in `tables`; rows come feed by feed, so the last one found
    /// is asked first (no hashing of the name for most rows).
    private var places: [String: Int] = [:]
    private var last = 0

    init(_ feeds: [ListedFeedPaths]) {
        for feed in feeds where feed.count < Int(Int32.max) {
            let long = (0..<feed.count).lazy.filter { (feed.path($0)?.utf8.count ?? 0) > 15 }.count
            guard long > 0 else { continue }
            var slots = [Int32](repeating: 0, count: max(4, (2 * long).nextPowerOfTwo))
            let mask = slots.count - 1
            for position in 0..<feed.count {
                guard var path = feed.path(position), path.utf8.count > 15 else { continue }  // the same storage; `withUTF8` is mutating
                var slot = path.withUTF8 { Self.hash($0) } & mask
                while slots[slot] != 0 { slot = (slot + 1) & mask }
                slots[slot] = Int32(position + 1)
            }
            places[feed.feed] = tables.count
            tables.append(Table(name: feed.feed, paths: feed, slots: slots))
        }
    }

    /// The listed path of feed `feed` with these bytes, when there is one of over 15 bytes.
    mutating func path(feed: String, _ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard bytes.count > 15, !tables.isEmpty else { return nil }
        if tables[last].name != feed {
            guard let place = places[feed] else { return nil }
            last = place
        }
        let table = tables[last]
        let mask = table.slots.count - 1
        var slot = Self.hash(bytes) & mask
        while table.slots[slot] != 0 {
            var path = table.paths.path(Int(table.slots[slot]) - 1)!
            if path.withUTF8({ $0.count == bytes.count && memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }) { return path }
            slot = (slot + 1) & mask
        }
        return nil
    }

    /// Swift's `Hasher`, seeded afresh in every process: paths written to collide in an
    /// unseeded hash would make the table's work grow with their square.
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        return hasher.finalize()
    }
}

/// One feed's listed paths as state.db's reads are given them (`StateStore.sharePaths`): the
/// feed's name, how many it lists, and the path at each place in its list — nil where the
/// resource has no string of its own to share (a path read from its URL's text,
/// `Resource.pathIsShared`: a row's key then makes one of the row's bytes).
public struct ListedFeedPaths: Sendable {
    public let feed: String
    public let count: Int
    public let path: @Sendable (Int) -> String?

    public init(feed: String, count: Int, path: @escaping @Sendable (Int) -> String?) {
        self.feed = feed
        self.count = count
        self.path = path
    }
}

private extension Int {
    var nextPowerOfTwo: Int { self <= 1 ? 1 : 1 << (Int.bitWidth - (self - 1).leadingZeroBitCount) }
}
