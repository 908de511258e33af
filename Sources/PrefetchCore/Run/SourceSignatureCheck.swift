/// Who signed a feed source's manifest, as its verified signature says.
struct SourceSignature: Sendable, Equatable {
    /// The signing key's id, 16 hex digits.
    var keyID: String
    /// The trusted comment's `timestamp:` (seconds since the epoch), when it has one.
    var timestamp: Int64?
}

/// Verifies a source's detached minisign signature over the exact bytes fetched against its
/// keys (any one may sign, SPEC §8). The error is a sentence for `LABEL: error: …`.
protocol SourceSignatureCheck: Sendable {
    func verify(manifest: [UInt8], signature: [UInt8], keys: [String]) -> Result<SourceSignature, SourceSignatureFailure>
}

struct SourceSignatureFailure: Error, Sendable, Equatable {
    var message: String
}

/// The check a build without a minisign verifier has: every signed source is refused, so
/// that nothing unverified is ever applied.
struct UnavailableSignatureCheck: SourceSignatureCheck {
    func verify(manifest: [UInt8], signature: [UInt8], keys: [String]) -> Result<SourceSignature, SourceSignatureFailure> {
        .failure(SourceSignatureFailure(message: "this build of prefetch cannot verify minisign signatures"))
    }
}
