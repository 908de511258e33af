/// How much of a partial on disk a resume may keep (SPEC §5's partial-trust rule, FAULTS 2
/// and 3): a pure decision over the partial's record and the file found.
///
/// - No record, a record of another URL, or no file: discarded.
/// - A record of another inode: the file is not that partial — discarded.
/// - Written in this boot (the record's boot id is the kernel's now): a process that died
///   lost nothing the kernel had accepted, and the writer only ever appends in order, so
///   the file's whole length is a prefix of the body and is trusted.
/// - Written in another boot, or recorded by state.db version 1 (no boot id or inode): only
///   the offset recorded after an fsync is trusted; a longer file is cut back to it.
/// - Either way, a file shorter than its record resumes at its length.
///
/// Whether the trusted bytes are then resumed depends on the validators (FAULTS 7, 8):
/// `Transfer.prepareResume`.
enum PartialTrust {
    /// The bytes of the partial to keep; nil when it must be discarded.
    static func trustedLength(record: PartialState?, urlHash: String, file: (size: UInt64, inode: UInt64)?,
                              bootID: String) -> UInt64? {
        guard let record, record.urlHash == urlHash, let file else { return nil }
        if let inode = record.inode, inode != file.inode { return nil }
        if record.inode != nil, let boot = record.bootID, boot == bootID, boot != BootID.unknown { return file.size }
        return min(file.size, record.syncedOffset)
    }

    /// The record must be committed before the partial holds this much (SPEC §5).
    static let recordBefore: UInt64 = 1 << 20
}
