/// The limits of SPEC §7 on manifests and the config, in one place: what the parser checks
/// every scalar against as it reads (by place: `FeedDecoder.scalars`, `ConfigLoader.scalars`),
/// what the decoders check again (a value an alias moved to a stricter place) and what a
/// request checks once `${VAR}`s are filled in. Measured on the decoded value in UTF-8 bytes.
public enum InputLimits {
    /// A resource's `url` (and the config's `proxy`).
    public static let url = ScalarLimit(8 * 1024, "a URL")
    /// A resource's `path`, in all; each component has at most `pathComponent` bytes.
    public static let path = ScalarLimit(4000, "a path")
    /// One component of a path (a file or folder name).
    public static let pathComponent = ScalarLimit(255, "a path component")
    /// One header value, as written and again once its variables are filled in.
    public static let headerValue = ScalarLimit(8 * 1024, "a header value")
    /// All of a resource's headers: names and values.
    public static let headers = ScalarLimit(64 * 1024, "a resource's headers")
    /// The config's `no_proxy`.
    public static let noProxy = ScalarLimit(64 * 1024, "no_proxy")
    /// Every other value.
    public static let value = ScalarLimit.value
    /// Every mapping key.
    public static let key = ScalarLimit.key

    /// The largest config file read (the config's own `max_manifest_size` cannot apply to it).
    public static let configSize = 1 << 20
    /// The default, smallest and largest `max_manifest_size`.
    public static let defaultManifestSize: UInt64 = 64 << 20
    public static let manifestSizes: ClosedRange<UInt64> = 1024...(1 << 30)

    /// The error for headers that reach `total` bytes at `place` ("header 'X-A'").
    static func headersProblem(_ total: Int, at place: String) -> String {
        "with \(place) this resource's headers have \(total) bytes (names and values); "
            + "a resource's headers have at most \(ScalarLimit.describe(headers.bytes)) in all"
    }

    /// The error for a file of `size` bytes over `limit` (`exact`: the size is known; else
    /// more than `limit` bytes arrived from a file that grew or is no regular file).
    static func tooLarge(_ what: String, size: Int, exact: Bool, limit: String) -> String {
        let measured = exact ? "\(size) bytes (\(ByteSize.format(UInt64(size))))" : "more than \(size - 1) bytes"
        return "the \(what) is \(measured), over \(limit); it is not read"
    }
}
