/// Why a minisign signature was refused, in words for a `LABEL: error: …` line. No case
/// carries bytes of the signed file or of any key beyond key ids, which are public.
public enum SignatureError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The signature file is larger than any minisign writes (`MinisignVerifier.maxFileSize`).
    case tooLarge(size: Int)
    /// The signature file is not in minisign's four-line form; `line` is 1-based.
    case malformed(line: Int, String)
    /// The signature line names an algorithm other than `Ed` and `ED` (its two bytes).
    case unknownAlgorithm([UInt8])
    /// No listed key has the key id the signature names.
    case unknownKey(keyID: String, known: [String])
    /// The file is not what the key signed (tampered, truncated, another file).
    case badSignature(keyID: String)
    /// The trusted comment, or the signature it is bound to, was altered.
    case badTrustedComment(keyID: String)
    /// libcrypto could not compute BLAKE2b-512 (a prehashed signature cannot be checked).
    case digestUnavailable

    public var description: String { message }

    /// One line, without the label.
    public var message: String {
        switch self {
        case .tooLarge(let size):
            return "the signature file has \(size) bytes, more than the \(MinisignVerifier.maxFileSize) a minisign signature may have"
        case .malformed(let line, let reason):
            return "malformed signature file, line \(line): \(reason)"
        case .unknownAlgorithm(let bytes):
            let printable = bytes.allSatisfy { (0x21...0x7e).contains($0) }
            let name = printable ? "'\(String(decoding: bytes, as: UTF8.self))'" : "0x" + bytes.map { hexByte($0) }.joined()
            return "unknown signature algorithm \(name) (minisign signs with Ed, or ED prehashed)"
        case .unknownKey(let keyID, let known):
            let keys = known.isEmpty ? "no public key is configured" : "the public keys are \(known.joined(separator: ", "))"
            return "signed with key id \(keyID), which is not one of this source's public keys (\(keys))"
        case .badSignature(let keyID):
            return "the signature by key id \(keyID) does not verify: the file is not the one that was signed"
        case .badTrustedComment(let keyID):
            return "the trusted comment's signature by key id \(keyID) does not verify: the trusted comment was altered"
        case .digestUnavailable:
            return "libcrypto cannot compute BLAKE2b-512, which the prehashed (ED) signature needs"
        }
    }

    private func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xf)]])
    }
}
