/// The most UTF-8 bytes a decoded scalar may have in one kind of place, and what to call it.
public struct ScalarLimit: Sendable, Hashable {
    /// The most bytes allowed.
    public let bytes: Int
    /// The subject of the error sentence: "a URL", "a key".
    public let noun: String

    /// Creates a limit of `bytes` for values called `noun`.
    public init(_ bytes: Int, _ noun: String) {
        self.bytes = bytes
        self.noun = noun
    }

    /// Any value no other limit names (SPEC §7: 4 KiB).
    public static let value = ScalarLimit(4 * 1024, "a value")
    /// Any mapping key (4 KiB).
    public static let key = ScalarLimit(4 * 1024, "a key")

    /// Nil when `count` bytes fit, else the sentence saying so.
    public func problem(_ count: Int) -> String? {
        count > bytes ? "\(noun) has at most \(Self.describe(bytes)); this one has \(count)" : nil
    }

    /// `8 KiB (8192 bytes)`, or `4000 bytes` for a limit that is no round binary size.
    static func describe(_ bytes: Int) -> String {
        bytes % 1024 == 0 ? "\(bytes / 1024) KiB (\(bytes) bytes)" : "\(bytes) bytes"
    }
}
