/// A SHA-256 digest as 32 bytes held inline (four words), not as its 64-character hex
/// text: a manifest's `sha256` values cost no allocation each. `hex` gives the text back,
/// lowercase, exactly as it was read.
struct Digest256: Sendable, Hashable {
    private let words: (UInt64, UInt64, UInt64, UInt64)

    /// The digest whose lowercase hex is `hex`; nil unless it is exactly 64 lowercase hex digits.
    /// (No allocation: state.db gives two of these per row, for every row it reads.)
    init?(hex: String) {
        var text = hex
        guard let digest = text.withUTF8({ Digest256(hexBytes: $0) }) else { return nil }
        self = digest
    }

    private init(words: (UInt64, UInt64, UInt64, UInt64)) { self.words = words }

    /// The digest of these 32 bytes (as `SHA256.digest` gives them).
    init(bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count == 32)
        func word(_ start: Int) -> UInt64 { (0..<8).reduce(0) { $0 << 8 | UInt64(bytes[start + $1]) } }
        words = (word(0), word(8), word(16), word(24))
    }

    /// The same from the text's UTF-8 bytes (a state.db column, read with no string made).
    init?(hexBytes bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count == 64 else { return nil }
        func word(_ start: Int) -> UInt64? {
            var word: UInt64 = 0
            for byte in bytes[start..<(start + 16)] {
                switch byte {
                case 48...57: word = word << 4 | UInt64(byte - 48)
                case 97...102: word = word << 4 | UInt64(byte - 87)
                default: return nil
                }
            }
            return word
        }
        guard let a = word(0), let b = word(16), let c = word(32), let d = word(48) else { return nil }
        words = (a, b, c, d)
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
            func put(_ word: UInt64, at start: Int) {
                for nibble in 0..<16 {
                    let value = UInt8((word >> UInt64(60 - 4 * nibble)) & 0xF)
                    buffer[start + nibble] = value < 10 ? 48 + value : 87 + value
                }
            }
            put(words.0, at: 0)
            put(words.1, at: 16)
            put(words.2, at: 32)
            put(words.3, at: 48)
            return 64
        }
    }
}

extension Digest256: WordPacked {
    static var wordCount: Int { 4 }
    init(words word: (Int) -> UInt64) { self.init(words: (word(0), word(1), word(2), word(3))) }
    func word(_ index: Int) -> UInt64 { index == 0 ? words.0 : index == 1 ? words.1 : index == 2 ? words.2 : words.3 }
}
