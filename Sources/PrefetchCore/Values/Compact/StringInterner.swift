/// Equal strings made into one: the first of each text is kept and handed out for every
/// later one with the same bytes, so they share its storage (a manifest's thousands of
/// URLs name a handful of hosts; state.db's rows repeat a few dates and feed names).
///
/// Texts are the same when their UTF-8 bytes are (`SameBytes`), and bytes already interned
/// are found without making a string of them.
///
/// Not for every string: an interned text lives as long as the interner, so only the few
/// distinct values of a large set belong in one (hosts, not paths).
struct StringInterner {
    /// The kept strings, in the order interned.
    private var kept: [String] = []
    private var table = PositionTable()

    /// How many distinct strings it holds.
    var count: Int { kept.count }

    /// The string with `text`'s bytes that was interned first (`text` itself when it is new).
    mutating func intern(_ text: String) -> String {
        let hash = SameBytes.hash(text)
        if let found = find(hash, { SameBytes.equal($0, text) }) { return found }
        add(text, hash: hash)
        return text
    }

    /// The string with these bytes that was interned first; a new one (made by `make`, or
    /// decoded from the bytes) when there is none yet.
    mutating func intern(_ bytes: UnsafeBufferPointer<UInt8>, make: (() -> String)? = nil) -> String {
        let hash = SameBytes.hash(bytes)
        if let found = find(hash, { SameBytes.equal($0, bytes) }) { return found }
        let text = make?() ?? String(decoding: bytes, as: UTF8.self)
        add(text, hash: hash)
        return text
    }

    private func find(_ hash: Int, _ isMatch: (String) -> Bool) -> String? {
        table.position(hash: hash, where: { isMatch(kept[$0]) }).map { kept[$0] }
    }

    private mutating func add(_ text: String, hash: Int) {
        kept.append(text)
        table.append(hash: hash)
    }
}
