/// A resource's partial as the run sees it (SPEC §7 "Partials as the run sees them"): one
/// that is resumable (`ResumeRule`) and trusted (`PartialTrust`) for some bytes, with the
/// offset the next run resumes from — within the same boot the file's length, after a
/// reboot its fsynced offset. Any other partial counts as none: `plan` treats the resource
/// as having no partial, `status` does not list it, and the next run discards it.
public struct ResumePoint: Sendable, Equatable {
    /// The partial file's length.
    public var bytesOnDisk: UInt64
    /// Where the next run resumes.
    public var resumeFrom: UInt64
    /// The length of the version being fetched, when known (`size`, else the partial's record).
    public var total: UInt64?

    /// The resume point of `resource`'s partial, or nil when it has none the run would
    /// resume. `identity`: the URL's identity hash; `file`: the partial on disk, if any.
    public static func of(_ resource: Resource, state: ResourceState?, identity: String, file: PartialFile?,
                          bootID: String) -> ResumePoint? {
        guard let partial = state?.partial, let file,
              let trusted = trustedLength(resource, partial, state: state, identity: identity, file: file, bootID: bootID)
        else { return nil }
        return ResumePoint(bytesOnDisk: file.size, resumeFrom: trusted, total: resource.size ?? partial.totalLength)
    }

    /// The bytes a resume keeps of `partial`, when it is resumable and some are trusted.
    /// A partial begun at another URL than the next pass asks first (SPEC §8) is judged as moving there.
    static func trustedLength(_ resource: Resource, _ partial: PartialState, state: ResourceState?, identity: String, file: PartialFile,
                              bootID: String) -> UInt64? {
        guard ResumeRule.judge(partial.response, sha256Given: resource.sha256 != nil, encoding: resource.encoding,
                               atAnotherURL: MirrorOrder.partialMoves(partial, resource: resource, state: state)).isResumable,
              let trusted = PartialTrust.trustedLength(record: partial, urlHash: identity, file: (file.size, file.inode), bootID: bootID),
              trusted > 0 else { return nil }
        return trusted
    }
}
