/// A SHA-256 digest as 32 bytes held inline (four words), not as its 64-character hex
/// text: a manifest's `sha256` values cost no allocation each. `hex` gives the text back,
/// lowercase, exactly as it was read.
struct Digest256: Sendable, Hashable {
    private let words: (UInt64, UInt64, UInt64, UInt64)

    /// The digest whose lowercase hex is `hex`; nil unless it is exactly 64 lowercase hex digits.
    init?(hex: String) {
        // No array, no per-byte iterator: state.db's snapshot parses two of these a row
        // (callgrind, the daemon's start over 20,000 rows: 3,450 instructions a call before).
        var hex = hex
        let parsed: (UInt64, UInt64, UInt64, UInt64)? = hex.withUTF8 { bytes in
            guard bytes.count == 64 else { return nil }
            var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            for index in 0..<4 {
                var word: UInt64 = 0
                for offset in 0..<16 {
                    let byte = bytes[index * 16 + offset]
                    let value: UInt8
                    switch byte {
                    case 48...57: value = byte - 48
                    case 97...102: value = byte - 87
                    default: return nil
                    }
                    word = word << 4 | UInt64(value)
                }
                switch index {
                case 0: words.0 = word
                case 1: words.1 = word
                case 2: words.2 = word
                default: words.3 = word
                }
            }
            return words
        }
        guard let parsed else { return nil }
        self.words = parsed
    }

    static func == (a: Digest256, b: Digest256) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }

    /// The 64 lowercase hex digits.
    var hex: String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: 64) { buffer in
            for (index, word) in [words.0, words.1, words.2, words.3].enumerated() {
                for nibble in 0..<16 {
                    buffer[index * 16 + nibble] = digits[Int((word >> UInt64(60 - 4 * nibble)) & 0xF)]
                }
            }
            return 64
        }
    }
}
