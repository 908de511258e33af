/// What a resource's transfer does with a response body that carries a `Content-Encoding`
/// (SPEC §7 "Encoded bodies"): the manifest key `encoding`, on a feed or a resource.
public enum EncodingMode: String, Sendable, CaseIterable {
    /// The default: identity is asked for, and an encoded body is refused.
    case refuse
    /// Identity is asked for, and an encoded body is stored exactly as sent.
    case keep
    /// gzip, deflate, br and zstd are offered, and the decoded bytes are stored.
    case decode
}

extension Resource {
    /// The resource's effective `encoding`. The manifest key does not exist yet: every
    /// resource is `refuse`. (The key's decoder replaces this with a stored property.)
    public var encoding: EncodingMode { .refuse }
}
