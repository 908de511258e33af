/// A value kept in whole 64-bit words, as `OptionalWords` stores it.
protocol WordPacked {
    /// How many words it takes (1 for a number, 4 for a SHA-256).
    static var wordCount: Int { get }
    /// The value whose word `i` is `word(i)`.
    init(words word: (Int) -> UInt64)
    /// Its word `index` (0 ..< `wordCount`).
    func word(_ index: Int) -> UInt64
}

/// The one presence type: optional values side by side in `count` 64-bit words, with one byte
/// saying which are there (bit `slot` for a value that starts at word `slot`). An `UInt64?`
/// field takes 16 bytes (the value, its flag, padding); here each takes its words, and all
/// of them one byte. A domain type keeps its optional numbers, instants and digests in one of
/// these and gives each a plain optional property:
///
///     private var numbers = OptionalWords<2>()
///     var size: UInt64? { get { numbers[0] } set { numbers[0] = newValue } }
///     var expires: Instant? { get { numbers[1] } set { numbers[1] = newValue } }
///
/// A value absent leaves its words zero, so two of these are equal when their words and
/// bits are. At most 8 slots.
struct OptionalWords<let count: Int>: Sendable, Equatable {
    private var words = InlineArray<count, UInt64>(repeating: 0)
    private var present: UInt8 = 0

    init() {
        precondition(count <= 8, "OptionalWords holds at most 8 words: one presence bit each")
    }

    /// The value that starts at word `slot` (and takes `T.wordCount` words), or nil.
    subscript<T: WordPacked>(slot: Int) -> T? {
        get {
            guard present & (1 << slot) != 0 else { return nil }
            return T(words: { words[slot + $0] })
        }
        set {
            for index in 0..<T.wordCount { words[slot + index] = newValue?.word(index) ?? 0 }
            if newValue != nil { present |= 1 << slot } else { present &= ~(1 << slot) }
        }
    }

    static func == (a: Self, b: Self) -> Bool {
        guard a.present == b.present else { return false }
        for index in 0..<count where a.words[index] != b.words[index] { return false }
        return true
    }
}

extension UInt64: WordPacked {
    static var wordCount: Int { 1 }
    init(words word: (Int) -> UInt64) { self = word(0) }
    func word(_ index: Int) -> UInt64 { self }
}

extension Int64: WordPacked {
    static var wordCount: Int { 1 }
    init(words word: (Int) -> UInt64) { self = Int64(bitPattern: word(0)) }
    func word(_ index: Int) -> UInt64 { UInt64(bitPattern: self) }
}

extension Int: WordPacked {
    static var wordCount: Int { 1 }
    init(words word: (Int) -> UInt64) { self = Int(Int64(bitPattern: word(0))) }
    func word(_ index: Int) -> UInt64 { UInt64(bitPattern: Int64(self)) }
}

extension Instant: WordPacked {
    static var wordCount: Int { 1 }
    init(words word: (Int) -> UInt64) { self.init(nanoseconds: Int64(bitPattern: word(0))) }
    func word(_ index: Int) -> UInt64 { UInt64(bitPattern: nanoseconds) }
}
