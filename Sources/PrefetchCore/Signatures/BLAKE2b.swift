internal import CCrypto

/// BLAKE2b-512 (RFC 7693) through libcrypto's EVP_blake2b512: what minisign's prehashed `ED`
/// signatures sign instead of the file itself.
enum BLAKE2b {
    /// The 64-byte digest of `bytes`, or nil when libcrypto could not make it.
    static func digest512(_ bytes: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 64)
        let done = bytes.withUnsafeBytes { input in
            out.withUnsafeMutableBufferPointer { prefetch_blake2b512(input.baseAddress, input.count, $0.baseAddress) }
        }
        return done == 1 ? out : nil
    }
}
