/// A resource's identity in the cache.
public struct ResourceKey: Sendable, Hashable {
    public var feed: String
    public var path: String

    public init(feed: String, path: String) {
        self.feed = feed
        self.path = path
    }
}
