internal import CCrypto

/// SHA-256 through OpenSSL's libcrypto, incremental or in one call. Its low-level functions
/// (see `CCrypto/shim.h`): a plain context, no provider state, so a thread may still be
/// hashing while the process exits without touching anything OpenSSL's exit handler frees.
public final class SHA256 {
    private let context = UnsafeMutablePointer<SHA256_CTX>.allocate(capacity: 1)

    public init() {
        prefetch_sha256_init(context)
    }

    deinit {
        context.deallocate()
    }

    /// Adds bytes to the digest.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        prefetch_sha256_update(context, bytes.baseAddress, bytes.count)
    }

    /// The 32-byte digest; the object must not be used afterwards.
    public func finish() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        prefetch_sha256_final(context, &out)
        return out
    }

    /// The digest of `bytes`, in one call (no context kept).
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { digest($0) }
    }

    public static func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        out.withUnsafeMutableBytes { oneShot(bytes, into: $0) }
        return out
    }

    /// Lowercase hex of the digest of `bytes` (as URLs and partial names are hashed, a few
    /// thousand times a run).
    public static func hexDigest(_ bytes: UnsafeRawBufferPointer) -> String {
        withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { out in
            oneShot(bytes, into: out)
            return hex(UnsafeRawBufferPointer(out))
        }
    }

    /// The 32 bytes of the digest of `bytes`, into `out` (at least 32 bytes).
    static func digest(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count >= 32)
        oneShot(bytes, into: out)
    }

    /// One-shot digests skip EVP: `EVP_Digest` allocates a context and the provider's state
    /// on every call (OpenSSL 3), most of the cost of hashing a URL (see `CCrypto/shim.h`).
    private static func oneShot(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        prefetch_sha256_short(bytes.baseAddress, bytes.count, out.baseAddress?.assumingMemoryBound(to: UInt8.self))
    }

    /// Lowercase hex of a digest.
    public static func hex(_ digest: [UInt8]) -> String {
        digest.withUnsafeBytes { hex($0) }
    }

    static func hex(_ digest: UnsafeRawBufferPointer) -> String {
        func digit(_ value: UInt8) -> UInt8 { value < 10 ? 0x30 + value : 0x57 + value }  // 0-9, a-f
        return String(unsafeUninitializedCapacity: digest.count * 2) { out in
            for (index, byte) in digest.enumerated() {
                out[2 * index] = digit(byte >> 4)
                out[2 * index + 1] = digit(byte & 0xf)
            }
            return digest.count * 2
        }
    }
}
