/// Which of the feeds' resources have their final file in the cache (`CacheListing.present`):
/// a bit per resource, by its place in its feed's `resources`: far smaller than a `Set` of
/// their keys (two strings each), and no path is hashed to ask.
public struct CachedFiles: Sendable, Equatable {
    /// A feed's bits, resource `i` at bit `i % 64` of word `i / 64`.
    private var bits: [String: [UInt64]] = [:]

    public init() {}

    /// Those of `keys` that `feeds` list (for a caller that knows the files by key).
    public init(_ keys: some Sequence<ResourceKey>, in feeds: [Feed]) {
        let wanted = Set(keys)
        for feed in feeds {
            for (position, resource) in feed.resources.enumerated()
            where wanted.contains(ResourceKey(feed: feed.name, path: resource.path)) {
                insert(feed: feed.name, position: position)
            }
        }
    }

    public var isEmpty: Bool { bits.isEmpty }

    /// Whether the resource at `position` of feed `feed` has its file in the cache.
    public func contains(feed: String, position: Int) -> Bool {
        guard let words = bits[feed], position / 64 < words.count else { return false }
        return words[position / 64] & (1 << UInt64(position % 64)) != 0
    }

    mutating func insert(feed: String, position: Int) {
        let word = position / 64
        bits[feed, default: []].withGrowth(to: word + 1) { $0[word] |= 1 << UInt64(position % 64) }
    }
}

private extension Array where Element == UInt64 {
    mutating func withGrowth(to count: Int, _ change: (inout [UInt64]) -> Void) {
        if self.count < count { append(contentsOf: repeatElement(0, count: count - self.count)) }
        change(&self)
    }
}
