internal import CShims

/// The calls on a descriptor that go through the C shim (no Swift binding of their own).
extension FileDescriptor {
    /// The filesystem's magic number (`fstatfs`'s `f_type`), 0 when unknown.
    public var filesystemType: Int { CShims_filesystem_type(raw) }

    /// Starts writing back `count` bytes from `offset` (`sync_file_range`, no waiting): a
    /// hint, so its failure changes nothing.
    public func startWriteback(from offset: UInt64, count: UInt64) {
        _ = CShims_start_writeback(raw, Int64(offset), Int64(count))  // a hint: nothing depends on it
    }
}
