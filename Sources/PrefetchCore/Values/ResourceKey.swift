/// A resource's identity in the cache: its feed and its path, compared and hashed by their
/// bytes, as the file system and state.db tell paths apart ("é" and "e\u{301}" are two files).
public struct ResourceKey: Sendable, Hashable {
    public var feed: String
    public var path: String

    public init(feed: String, path: String) {
        self.feed = feed
        self.path = path
    }

    public static func == (a: ResourceKey, b: ResourceKey) -> Bool {
        SameBytes.equal(a.path, b.path) && SameBytes.equal(a.feed, b.feed)
    }

    public func hash(into hasher: inout Hasher) {
        SameBytes.combine(feed, into: &hasher)
        SameBytes.combine(path, into: &hasher)
    }
}
