/// A minisign public key, as `minisign -G` prints it (the second line of `minisign.pub`):
/// base64 of the algorithm `Ed`, an 8-byte key id and the 32-byte Ed25519 key.
public struct MinisignPublicKey: Sendable, Equatable {
    /// The key id a signature names its key by (8 bytes, as stored).
    public let keyID: [UInt8]
    /// The Ed25519 public key (32 bytes).
    let key: [UInt8]

    /// The key id as minisign prints it ("public key 72B8714AD9EFAED7"): the 8 bytes read as
    /// a little-endian number in uppercase hex, always 16 digits (minisign 0.11 drops leading
    /// zeros: its `54360B841172635` is `054360B841172635` here).
    public var keyIDHex: String { Self.hex(keyID: keyID) }

    /// The length of a key string: 42 bytes in base64.
    static let textLength = 56

    /// Reads a key string. Only the string itself: no comment line, no spaces.
    public init(parsing text: String) throws(ValueError) {
        let utf8 = Array(text.utf8)
        guard utf8.count == Self.textLength else {
            if utf8.contains(UInt8(ascii: "\n")) || text.hasPrefix("untrusted comment:") {
                throw ValueError("a minisign public key is the one line of base64 after the comment line of minisign.pub, not the file")
            }
            throw ValueError("a minisign public key is \(Self.textLength) base64 characters (as `minisign -G` prints it), found \(text.count)")
        }
        guard let bytes = Base64.decode(utf8) else {
            throw ValueError("a minisign public key is base64 (A-Z, a-z, 0-9, '+', '/'), found another character or bad padding")
        }
        guard bytes.count == 42 else {  // 56 characters with padding are fewer bytes
            throw ValueError("a minisign public key is 42 bytes (the algorithm, the key id and the key), found \(bytes.count)")
        }
        guard bytes[0] == UInt8(ascii: "E"), bytes[1] == UInt8(ascii: "d") else {
            throw ValueError("not a minisign public key: it does not begin with the algorithm Ed (base64 'RW')")
        }
        keyID = Array(bytes[2..<10])
        key = Array(bytes[10..<42])
    }

    /// Uppercase hex of a key id, most significant byte first as minisign prints it
    /// (`%016llX` of the little-endian number).
    static func hex(keyID: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(keyID.count * 2)
        for byte in keyID.reversed() {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
