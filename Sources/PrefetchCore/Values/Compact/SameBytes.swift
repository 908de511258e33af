import Foundation

/// The one byte comparison (and the hash that goes with it): texts that name files, ETags,
/// hosts and hashes are their UTF-8 bytes. Swift's `==` on strings also joins canonically
/// equivalent texts ("é" and "e\u{301}"), whose bytes differ, and walking two `UTF8View`s
/// costs a call per byte; these compare the bytes as the C library would, in one `memcmp`.
enum SameBytes {
    /// Whether the two texts are the same bytes.
    static func equal(_ a: String, _ b: String) -> Bool {
        var a = a, b = b  // the same storage; `withUTF8` is mutating
        return a.withUTF8 { x in b.withUTF8 { y in equal(x, y) } }
    }

    /// Whether `b` is the bytes of `a` at `offset` (UTF-8 offsets; false when they run past its end).
    static func equal(_ a: String, at offset: Int, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in offset >= 0 && offset + y.count <= x.count && equal(UnsafeBufferPointer(rebasing: x[offset..<(offset + y.count)]), y) }
        }
    }

    /// Whether the two runs of bytes are equal (a byte array's parts, such as path components in one arena).
    static func equal(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
        a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in equal(x, y) } }
    }

    /// Whether the text is these bytes (a part of a byte array, such as keys kept in one arena).
    static func equal(_ a: String, _ b: ArraySlice<UInt8>) -> Bool {
        b.withUnsafeBufferPointer { equal(a, $0) }
    }

    /// Whether the text is these bytes (a C library's buffer, such as a SQLite column).
    static func equal(_ a: String, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        var a = a
        return a.withUTF8 { equal($0, b) }
    }

    static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
    }

    /// The text of UTF-8 bytes `range` of `text` (offsets that fall on its characters' edges).
    static func text(_ text: String, bytes range: Range<Int>) -> String {
        var text = text
        return text.withUTF8 { String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }

    /// Swift's `Hasher` over the bytes (and `seed`, such as a parent's index): seeded afresh in
    /// every process, so input cannot be written to make its keys collide.
    static func hash(_ text: String, seed: Int = 0) -> Int {
        var text = text
        return text.withUTF8 { hash($0, seed: seed) }
    }

    /// The text's bytes and their count into `hasher` (a key of several texts hashes each so).
    static func combine(_ text: String, into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { combine($0, into: &hasher) }
    }

    static func combine(_ bytes: UnsafeBufferPointer<UInt8>, into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
    }

    /// The hash of a key of two texts, the second given as bytes: what `hashValue` is for a
    /// type that `combine`s the two texts in that order (`ResourceKey`).
    static func hash(_ first: String, then second: ArraySlice<UInt8>) -> Int {
        var hasher = Hasher()
        combine(first, into: &hasher)
        second.withUnsafeBufferPointer { combine($0, into: &hasher) }
        return hasher.finalize()
    }

    static func hash(_ bytes: ArraySlice<UInt8>, seed: Int = 0) -> Int {
        bytes.withUnsafeBufferPointer { hash($0, seed: seed) }
    }

    static func hash(_ bytes: UnsafeBufferPointer<UInt8>, seed: Int = 0) -> Int {
        var hasher = Hasher()
        hasher.combine(seed)
        hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        return hasher.finalize()
    }
}

/// A text as a key by its bytes: equal when its bytes are (`SameBytes`), not by Swift's
/// canonical equivalence.
struct ExactText: Hashable, Sendable {
    let text: String

    init(_ text: String) { self.text = text }

    static func == (a: ExactText, b: ExactText) -> Bool { SameBytes.equal(a.text, b.text) }

    func hash(into hasher: inout Hasher) { hasher.combine(SameBytes.hash(text)) }
}
