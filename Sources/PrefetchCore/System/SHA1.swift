internal import CCrypto

/// SHA-1 through libcrypto, incremental: the whole-file check of a zsync control file (SPEC
/// §9), computed as a delta's file is assembled and as a zsync resource's file streams in.
/// The low-level functions, as `SHA256`'s, for the same reasons.
final class SHA1 {
    private let context = UnsafeMutablePointer<SHA_CTX>.allocate(capacity: 1)

    init() {
        prefetch_sha1_init(context)
    }

    deinit {
        context.deallocate()
    }

    func update(_ bytes: UnsafeRawBufferPointer) {
        prefetch_sha1_update(context, bytes.baseAddress, bytes.count)
    }

    /// The digest in lowercase hex; the object must not be used afterwards.
    func finishHex() -> String {
        var out = [UInt8](repeating: 0, count: 20)
        prefetch_sha1_final(context, &out)
        return SHA256.hex(out)
    }
}
