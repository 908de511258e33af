/// Strict base64 (RFC 4648 §4, the standard alphabet with `=` padding), as minisign writes
/// keys and signatures: a length that is a multiple of 4, padding only at the end, and no
/// bits set past the data (one text per byte string), so that a key or a signature has one
/// spelling. No whitespace, no line breaks, no URL alphabet.
enum Base64 {
    /// The bytes `text` encodes, or nil when it is not canonical base64.
    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3)
        var group: UInt32 = 0, inGroup = 0, padding = 0
        for byte in text {
            if byte == UInt8(ascii: "=") {
                padding += 1
                group <<= 6
            } else {
                guard padding == 0, let value = Self.value(byte) else { return nil }  // nothing after padding
                group = group << 6 | UInt32(value)
            }
            inGroup += 1
            if inGroup == 4 {
                guard padding <= 2 else { return nil }
                out.append(UInt8(truncatingIfNeeded: group >> 16))
                if padding < 2 { out.append(UInt8(truncatingIfNeeded: group >> 8)) }
                if padding < 1 { out.append(UInt8(truncatingIfNeeded: group)) }
                // The bits the padding stands for must be zero: `QQ==` is "A", `QR==` is not base64.
                if padding == 1 && group & 0xff != 0 || padding == 2 && group & 0xffff != 0 { return nil }
                group = 0
                inGroup = 0
            }
        }
        return out
    }

    private static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
