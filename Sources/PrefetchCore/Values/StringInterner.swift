import Foundation

/// Equal strings made into one: the first of each text is kept and handed out for every
/// later one with the same bytes, so they share its storage (a manifest's thousands of
/// URLs name a handful of hosts; state.db's rows repeat a few dates and feed names).
///
/// Texts are the same when their UTF-8 bytes are: Swift's `==` would also join canonically
/// equivalent texts ("é" and "e\u{301}"), whose bytes differ. Bytes already interned are
/// found without making a string of them.
///
/// Not for every string: an interned text lives as long as the interner, so only the few
/// distinct values of a large set belong in one (hosts, not paths).
struct StringInterner {
    /// The kept strings by the hash of their bytes (a bucket holds more than one only when
    /// two hashes collide).
    private var buckets: [Int: [String]] = [:]

    /// How many distinct strings it holds.
    private(set) var count = 0

    /// The string with `text`'s bytes that was interned first (`text` itself when it is new).
    mutating func intern(_ text: String) -> String {
        var bytes = text  // the same storage; `withUTF8` is mutating
        return bytes.withUTF8 { intern($0) { text } }
    }

    /// The string with these bytes that was interned first; a new one (made by `make`, or
    /// decoded from the bytes) when there is none yet.
    mutating func intern(_ bytes: UnsafeBufferPointer<UInt8>, make: (() -> String)? = nil) -> String {
        // Swift's `Hasher`, seeded afresh in every process: texts written to share a hash
        // would otherwise pile into one bucket.
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        let hash = hasher.finalize()
        if let bucket = buckets[hash] {
            for kept in bucket {
                var same = kept  // the same storage; `withUTF8` is mutating
                if same.withUTF8({ $0.count == bytes.count && (bytes.isEmpty || memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0) }) { return kept }
            }
        }
        let text = make?() ?? String(decoding: bytes, as: UTF8.self)
        buckets[hash, default: []].append(text)
        count += 1
        return text
    }
}
