internal import CCrypto

/// MD4, which zsync's control files use to confirm a block (SPEC §9): libcrypto's, from its
/// legacy provider, loaded once into a library context of prefetch's own (the default
/// context, and every other digest, stay as they were). One context per user, reset per
/// block: a scan confirms a block at each rolling-sum hit.
final class MD4 {
    /// The legacy provider's MD4, fetched once; immutable after (libcrypto's `EVP_MD` is
    /// shared across threads by design).
    private final class Algorithm: @unchecked Sendable {
        let md: OpaquePointer?

        init() {
            guard let library = OSSL_LIB_CTX_new(), OSSL_PROVIDER_load(library, "legacy") != nil,
                  OSSL_PROVIDER_load(library, "default") != nil else {
                md = nil
                return
            }
            md = EVP_MD_fetch(library, "MD4", nil)
        }
    }

    /// Nil when libcrypto cannot load it (the delta is then not used).
    private static let loaded = Algorithm()
    private static var algorithm: OpaquePointer? { loaded.md }

    /// Whether MD4 is there to be used.
    static var isAvailable: Bool { algorithm != nil }

    private let context: OpaquePointer

    init?() {
        guard Self.algorithm != nil, let context = EVP_MD_CTX_new() else { return nil }
        self.context = context
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    /// The 16-byte digest of `bytes` followed by `zeros` zero bytes (a last block padded to
    /// the block size), into `out`.
    func digest(_ bytes: UnsafeRawBufferPointer, zeros: Int = 0, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.append(contentsOf: repeatElement(0, count: 16))
        EVP_DigestInit_ex2(context, Self.algorithm, nil)
        if bytes.count > 0 { EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) }
        if zeros > 0 {
            let padding = [UInt8](repeating: 0, count: zeros)
            padding.withUnsafeBytes { _ = EVP_DigestUpdate(context, $0.baseAddress, zeros) }
        }
        var size: UInt32 = 16
        out.withUnsafeMutableBufferPointer { _ = EVP_DigestFinal_ex(context, $0.baseAddress, &size) }
    }
}
