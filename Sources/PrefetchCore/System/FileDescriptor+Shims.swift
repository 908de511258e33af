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

    /// Copies up to `count` bytes from `source`'s offset to this file's (`copy_file_range`: in
    /// the kernel, shared extents where the filesystem can); the bytes copied, 0 at its end.
    func copyRange(from source: FileDescriptor, count: UInt64) -> Result<Int, Errno> {
        FileSystem.retryingEINTR { CShims_copy_file_range(source.raw, raw, Int64(min(count, 1 << 30))) }.map { Int($0) }
    }
}
