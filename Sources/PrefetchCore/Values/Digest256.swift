/// A SHA-256 digest as 32 bytes held inline (four words), not as its 64-character hex
/// text: a manifest's `sha256` values cost no allocation each. `hex` gives the text back,
/// lowercase, exactly as it was read.
struct Digest256: Sendable, Hashable {
    private let words: (UInt64, UInt64, UInt64, UInt64)

    /// The digest whose lowercase hex is `hex`; nil unless it is exactly 64 lowercase hex digits.
    init?(hex: String) {
        var hex = hex  // the same storage; `withUTF8` is mutating
        guard let words = hex.withUTF8({ Self.words(hex: $0) }) else { return nil }
        self.words = words
    }

    /// The four words of 64 lowercase hex digits (no array made on the way: a manifest
    /// has a `sha256` per resource).
    private static func words(hex: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64, UInt64, UInt64)? {
        guard hex.count == 64 else { return nil }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        for part in 0..<4 {
            var word: UInt64 = 0
            for byte in hex[(part * 16)..<(part * 16 + 16)] {
                let value: UInt8
                switch byte {
                case 48...57: value = byte - 48
                case 97...102: value = byte - 87
                default: return nil
                }
                word = word << 4 | UInt64(value)
            }
            switch part {
            case 0: words.0 = word
            case 1: words.1 = word
            case 2: words.2 = word
            default: words.3 = word
            }
        }
        return words
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
        String(unsafeUninitializedCapacity: 64) { buffer in
            for index in 0..<4 {
                let word = index == 0 ? words.0 : index == 1 ? words.1 : index == 2 ? words.2 : words.3
                for nibble in 0..<16 {
                    let value = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * nibble)) & 0xF
                    buffer[index * 16 + nibble] = value < 10 ? 48 + value : 87 + value
                }
            }
            return 64
        }
    }
}
