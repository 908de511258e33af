/// Checks a file against its detached minisign signature (`.minisig`) and a list of trusted
/// public keys, as `minisign -V` does: the signature's key id picks the key (so any key of a
/// rotation list may sign), the signature must verify over the file (`Ed`) or over its
/// BLAKE2b-512 digest (`ED`), and the global signature over the signature and the trusted
/// comment, so that the comment (its timestamp) is the signer's too.
public struct MinisignVerifier {
    /// The largest signature file read: minisign's lines add up to under 10 KiB.
    public static let maxFileSize = 64 * 1024

    /// The verified signature of `message`, or why it is refused.
    public static func verify(message: [UInt8], signatureFile: [UInt8], keys: [MinisignPublicKey]) throws(SignatureError) -> VerifiedSignature {
        let file = try MinisignSignatureFile(parsing: signatureFile)
        let keyID = MinisignPublicKey.hex(keyID: file.keyID)
        // Every listed key with that id is tried (ids are 8 random bytes: two only by mistake).
        let candidates = keys.filter { $0.keyID == file.keyID }
        guard !candidates.isEmpty else {
            var known: [String] = []
            for key in keys where !known.contains(key.keyIDHex) { known.append(key.keyIDHex) }
            throw .unknownKey(keyID: keyID, known: known)
        }
        let signed: [UInt8]
        switch file.algorithm {
        case .pure:
            signed = message
        case .prehashed:
            guard let digest = BLAKE2b.digest512(message) else { throw .digestUnavailable }
            signed = digest
        }
        guard let key = candidates.first(where: { Ed25519.verify(publicKey: $0.key, signature: file.signature, message: signed) }) else {
            throw .badSignature(keyID: keyID)
        }
        guard Ed25519.verify(publicKey: key.key, signature: file.globalSignature, message: file.signature + file.trustedComment) else {
            throw .badTrustedComment(keyID: keyID)
        }
        return VerifiedSignature(keyID: file.keyID, trustedComment: String(decoding: file.trustedComment, as: UTF8.self))
    }
}
