/// A text that is usually 64 lowercase hex digits (a SHA-256, as state.db records URL and
/// content hashes): then held as its 32 bytes inline (`Digest256`), else as the text
/// itself (version 1's `v1:` marks, anything else). `text` gives back exactly what was given.
struct HexText: Sendable, Equatable {
    private enum Storage: Sendable, Equatable {
        case digest(Digest256)
        case other(String)
    }

    private let storage: Storage

    init(_ text: String) {
        storage = Digest256(hex: text).map(Storage.digest) ?? .other(text)
    }

    /// From the text's UTF-8 bytes: a string is made of them only when they are not a digest.
    init(bytes: UnsafeBufferPointer<UInt8>) {
        storage = Digest256(hexBytes: bytes).map(Storage.digest) ?? .other(String(decoding: bytes, as: UTF8.self))
    }

    /// Whether it is the hex of `digest`.
    func isHex(of digest: Digest256) -> Bool {
        if case .digest(let mine) = storage { return mine == digest }
        return false
    }

    var text: String {
        switch storage {
        case .digest(let digest): return digest.hex
        case .other(let text): return text
        }
    }

    /// Equal when the texts are equal byte for byte (a digest is never held as `other`).
    static func == (a: HexText, b: HexText) -> Bool {
        switch (a.storage, b.storage) {
        case (.digest(let x), .digest(let y)): return x == y
        case (.other(let x), .other(let y)): return SameBytes.equal(x, y)
        default: return false
        }
    }
}
