internal import CCrypto

/// Ed25519 signature checks (RFC 8032) through libcrypto's EVP_PKEY_ED25519 (see
/// `CCrypto/shim.h`, which frees everything and clears OpenSSL's error queue).
enum Ed25519 {
    /// Whether `signature` (64 bytes) is `publicKey`'s (32 bytes) signature of `message`.
    /// Wrong sizes are never a valid signature.
    static func verify(publicKey: [UInt8], signature: [UInt8], message: [UInt8]) -> Bool {
        guard publicKey.count == 32, signature.count == 64 else { return false }
        return message.withUnsafeBufferPointer { message in
            prefetch_ed25519_verify(publicKey, signature, message.baseAddress, message.count) == 1
        }
    }
}
