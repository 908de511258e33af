/// zsync's rolling checksum of a block (its `rsum`): `a` the sum of the block's bytes, `b`
/// the sum of `a` after each byte (the first byte counted block-size times), both modulo
/// 2^16. Sliding the block one byte along the data updates it in O(1) (`roll`).
struct RollingChecksum: Equatable, Sendable {
    var a: UInt16 = 0
    var b: UInt16 = 0

    init(a: UInt16 = 0, b: UInt16 = 0) {
        self.a = a
        self.b = b
    }

    /// The checksum of `bytes` as one block.
    init(_ bytes: some Sequence<UInt8>) {
        for byte in bytes {
            a &+= UInt16(byte)
            b &+= a
        }
    }

    /// Slides the block one byte: `out` leaves at its start, `into` comes at its end;
    /// `shift` is log2 of the block size.
    @inline(__always)
    mutating func roll(out: UInt8, into: UInt8, shift: Int) {
        a = a &+ UInt16(into) &- UInt16(out)
        b = b &+ a &- UInt16(truncatingIfNeeded: UInt32(out) << shift)
    }
}
