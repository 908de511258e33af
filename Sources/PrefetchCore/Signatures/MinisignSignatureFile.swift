/// A `.minisig` file taken apart, nothing verified yet. Four lines, as minisign writes them:
///
///     untrusted comment: <anything>
///     <base64: algorithm (2 bytes) ‖ key id (8) ‖ Ed25519 signature (64)>
///     trusted comment: <text>
///     <base64: Ed25519 signature of (the signature ‖ the trusted comment's bytes)>
///
/// Lines end in LF or CR LF; the last may have no line end, and empty lines may follow it;
/// anything else is refused (strictly: the file is fetched from the network).
struct MinisignSignatureFile: Equatable {
    enum Algorithm: Equatable {
        /// `Ed`: Ed25519 over the file's bytes (minisign's legacy `-l` format).
        case pure
        /// `ED`: Ed25519 over BLAKE2b-512 of the file (minisign's default since 0.11).
        case prehashed
    }

    let algorithm: Algorithm
    let keyID: [UInt8]
    let signature: [UInt8]
    /// The trusted comment's bytes, after `trusted comment: `.
    let trustedComment: [UInt8]
    let globalSignature: [UInt8]

    /// The longest comment lines read, their line ends left out: what fits minisign's own
    /// buffers (1,024 and 8,192 bytes with the line end and C's NUL), so that nothing
    /// verifies here that `minisign -V` would refuse.
    static let maxUntrustedLine = 1022
    static let maxTrustedLine = 8190

    private static let untrustedPrefix = Array("untrusted comment: ".utf8)
    private static let trustedPrefix = Array("trusted comment: ".utf8)

    /// Takes `bytes` apart; never reads past them and never traps, whatever they are.
    init(parsing bytes: [UInt8]) throws(SignatureError) {
        guard bytes.count <= MinisignVerifier.maxFileSize else { throw .tooLarge(size: bytes.count) }
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        while start < bytes.endIndex, lines.count < 4 {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            var line = bytes[start..<end]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            lines.append(line)
            start = end < bytes.endIndex ? end + 1 : end
        }
        for (index, byte) in bytes[start...].enumerated() where byte != UInt8(ascii: "\n") && byte != UInt8(ascii: "\r") {
            let line = 5 + bytes[start..<(start + index)].filter { $0 == UInt8(ascii: "\n") }.count
            throw .malformed(line: line, "text after the fourth line (the trusted comment's signature)")
        }
        let what = ["an 'untrusted comment: ' line", "the signature line (base64)", "a 'trusted comment: ' line",
                    "the trusted comment's signature line (base64)"]
        guard lines.count == 4 else {
            throw .malformed(line: lines.count + 1, "the file ends where \(what[lines.count]) should be")
        }

        // Line 1: an untrusted comment, only its form checked.
        guard lines[0].count <= Self.maxUntrustedLine else { throw .malformed(line: 1, "the line is longer than \(Self.maxUntrustedLine) bytes") }
        guard lines[0].starts(with: Self.untrustedPrefix) else { throw .malformed(line: 1, "it does not begin with 'untrusted comment: '") }
        // minisign reads lines as C strings: a NUL would hide the rest of the line from it.
        guard !lines[0].contains(0) else { throw .malformed(line: 1, "a NUL byte in the untrusted comment") }

        // Line 2: algorithm, key id, signature.
        let signatureLine = try Self.base64(lines[1], line: 2, bytes: 74)
        switch (signatureLine[0], signatureLine[1]) {
        case (UInt8(ascii: "E"), UInt8(ascii: "d")): algorithm = .pure
        case (UInt8(ascii: "E"), UInt8(ascii: "D")): algorithm = .prehashed
        default: throw .unknownAlgorithm(Array(signatureLine[0..<2]))
        }
        keyID = Array(signatureLine[2..<10])
        signature = Array(signatureLine[10..<74])

        // Line 3: the trusted comment.
        guard lines[2].count <= Self.maxTrustedLine else { throw .malformed(line: 3, "the line is longer than \(Self.maxTrustedLine) bytes") }
        guard lines[2].starts(with: Self.trustedPrefix) else { throw .malformed(line: 3, "it does not begin with 'trusted comment: '") }
        let comment = lines[2].dropFirst(Self.trustedPrefix.count)
        if let control = comment.firstIndex(where: { $0 < 0x20 && $0 != UInt8(ascii: "\t") || $0 == 0x7f }) {
            throw .malformed(line: 3, "a control character (0x\(String(comment[control], radix: 16))) in the trusted comment")
        }
        guard String(validating: comment, as: UTF8.self) != nil else {
            throw .malformed(line: 3, "the trusted comment is not valid UTF-8")
        }
        trustedComment = Array(comment)

        // Line 4: the global signature.
        globalSignature = try Self.base64(lines[3], line: 4, bytes: 64)
    }

    /// The bytes of a base64 line that must decode to exactly `bytes` bytes.
    private static func base64(_ text: ArraySlice<UInt8>, line: Int, bytes: Int) throws(SignatureError) -> [UInt8] {
        let length = (bytes + 2) / 3 * 4
        guard text.count == length else {
            throw .malformed(line: line, "expected \(length) base64 characters (\(bytes) bytes), found \(text.count) characters")
        }
        guard let decoded = Base64.decode(text), decoded.count == bytes else {
            throw .malformed(line: line, "not base64 (A-Z, a-z, 0-9, '+', '/', '=' padding)")
        }
        return decoded
    }
}
