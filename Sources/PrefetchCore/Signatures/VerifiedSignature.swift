/// What a signature that verified says: which key made it, and its trusted comment (which
/// the key signed too, so it can be relied on, e.g. its timestamp against rollback).
public struct VerifiedSignature: Sendable, Equatable {
    /// The signing key's id (8 bytes, as stored).
    public let keyID: [UInt8]
    /// The key id as minisign prints it (16 uppercase hex digits).
    public let keyIDHex: String
    /// The trusted comment, without its `trusted comment: ` prefix (valid UTF-8 with no
    /// control character but TAB: minisign's default is `timestamp:N<TAB>file:NAME<TAB>hashed`).
    public let trustedComment: String
    /// The number after `timestamp:` in the trusted comment (Unix seconds, as minisign writes
    /// it), when the comment has one: at its start or after a space or TAB, digits up to the
    /// next space, TAB or the end, fitting in 63 bits. Otherwise nil.
    public let timestamp: Int64?

    init(keyID: [UInt8], trustedComment: String) {
        self.keyID = keyID
        self.keyIDHex = MinisignPublicKey.hex(keyID: keyID)
        self.trustedComment = trustedComment
        self.timestamp = Self.timestamp(in: trustedComment)
    }

    /// The first well-formed `timestamp:N` token of `comment`.
    static func timestamp(in comment: String) -> Int64? {
        let separators: Set<UInt8> = [UInt8(ascii: " "), UInt8(ascii: "\t")]
        for token in comment.utf8.split(whereSeparator: separators.contains) {
            let prefix = "timestamp:".utf8
            guard token.starts(with: prefix) else { continue }
            let digits = token.dropFirst(prefix.count)
            guard !digits.isEmpty, digits.count <= 19, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                  let value = Int64(String(decoding: digits, as: UTF8.self)) else { continue }
            return value
        }
        return nil
    }
}
