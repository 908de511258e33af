/// A partial file found on disk: its length and inode (what §5's partial trust compares
/// with the partial's record).
public struct PartialFile: Sendable, Equatable {
    public var size: UInt64
    public var inode: UInt64

    public init(size: UInt64, inode: UInt64) {
        self.size = size
        self.inode = inode
    }
}
