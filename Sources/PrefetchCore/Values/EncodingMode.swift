/// What a resource's transfer does with a response body that carries a `Content-Encoding`
/// (SPEC §7 "Encoded bodies"): the manifest key `encoding`, on a feed (the default of its
/// resources) or a resource (which wins).
public enum EncodingMode: String, Sendable, CaseIterable {
    /// The default: identity is asked for, and an encoded body is refused.
    case refuse
    /// Identity is asked for, and an encoded body is stored exactly as sent.
    case keep
    /// gzip, deflate, br and zstd are offered (those libcurl supports, `ContentCodings`), and
    /// the decoded bytes are stored.
    case decode

    /// The key's words, for the manifest's checks.
    static let choices = allCases.map { ($0.rawValue, $0) }

    /// A hint for a value that names a content coding instead of what to do with one.
    static func hint(for value: String) -> String? {
        guard ["gzip", "x-gzip", "deflate", "br", "zstd", "compress", "identity"].contains(value.lowercased()) else { return nil }
        return "encoding says what to do with an encoded body: keep stores it as sent, decode stores the decoded bytes"
    }
}
