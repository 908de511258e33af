/// zsync's scan (SPEC §9, a delta's step 2): which blocks of a control file a seed holds, and
/// where. At every byte offset of the seed (its end padded with zeros, as a last short block
/// is) the rolling sum of the block there — with `seq_matches` 2, of it and of the block
/// after — is looked up among the control file's; a hit is confirmed by the truncated MD4 of
/// each block it names. Memory: the block table (a bit per hash slot first, then the blocks
/// of a slot) and a window of the seed, never the seed's size.
struct BlockMatcher {
    let control: ZsyncControl
    /// Blocks by the key of their rolling sums (`key(_:_:)`), and a bit per key's low bits
    /// to skip most offsets without a lookup.
    private var blocks: [UInt64: [Int32]] = [:]
    private var bits: [UInt64]
    private let bitMask: UInt64
    /// Which blocks were found (once found, a block is not confirmed again).
    private(set) var found: [Bool]
    private(set) var foundCount = 0
    private let md4: MD4
    private var digest: [UInt8] = []

    /// The seed is read this much at a time.
    static let window = 1 << 20

    /// Nil when MD4 cannot be had from libcrypto.
    init?(_ control: ZsyncControl) {
        guard let md4 = MD4() else { return nil }
        self.control = control
        self.md4 = md4
        let count = control.blockCount
        found = [Bool](repeating: false, count: count)
        var slots = 64
        while slots < count * 32 { slots <<= 1 }
        bits = [UInt64](repeating: 0, count: slots / 64)
        bitMask = UInt64(slots - 1)
        // With seq_matches 2, a block is looked up with the one after it: the last has none.
        let keyed = control.sequenceMatches == 2 ? count - 1 : count
        for index in 0..<max(0, keyed) {
            let key = Self.key(control.rsum(index), control.sequenceMatches == 2 ? control.rsum(index + 1) : 0)
            blocks[key, default: []].append(Int32(index))
            bits[Int((Self.mix(key) & bitMask) >> 6)] |= 1 << (Self.mix(key) & 63)
        }
    }

    private static func key(_ first: UInt32, _ second: UInt32) -> UInt64 { UInt64(first) << 32 | UInt64(second) }
    @inline(__always) private static func mix(_ key: UInt64) -> UInt64 { ((key ^ (key >> 29)) &* 0xBF58_476D_1CE4_E5B9) >> 20 }

    /// Scans a seed read by `fill` (bytes into the buffer from its start; 0 at the end).
    /// `block` is told each block found, with the seed's bytes for it (the last block's only
    /// up to `Length`), in the order found. `keepGoing` is asked between windows (a stop, a
    /// pause, the window's end): false ends the scan.
    ///
    /// As zsync's client does, a match moves the scan on by a whole block (the next block of
    /// the file is most likely the seed's next block too), so a seed mostly in common costs a
    /// rolling sum and an MD4 a block, not a lookup a byte. Between matches the sums roll a
    /// byte at a time over the window's bytes, unchecked, and only a hit in the bit filter
    /// (32 bits a block: about one offset in 32 of a seed with nothing in common) is looked up.
    mutating func scan(fill: (UnsafeMutableRawBufferPointer) -> Int, block: (Int, UnsafeRawBufferPointer) -> Void,
                       keepGoing: () -> Bool = { true }) {
        let size = control.blockSize, shift = size.trailingZeroBitCount, seq = control.sequenceMatches
        let span = size * seq
        var buffer = [UInt8](repeating: 0, count: Self.window + 2 * span)
        var filled = 0, start = 0, ended = false
        var seedEnd = Int.max  // where the seed ends in the buffer, once it has
        // Fills the buffer from `start` on: the bytes before `start` are dropped; the seed's
        // end is followed by `span` zeros.
        func refill() {
            if start > 0 {
                buffer.withUnsafeMutableBytes { raw in
                    let base = raw.baseAddress!
                    base.copyMemory(from: base + start, byteCount: filled - start)
                }
                filled -= start
                start = 0
            }
            while !ended && filled < buffer.count - span {
                let end = buffer.count - span, from = filled
                let got = buffer.withUnsafeMutableBytes { fill(UnsafeMutableRawBufferPointer(rebasing: $0[from..<end])) }
                if got <= 0 {
                    ended = true
                    for i in filled..<(filled + span) { buffer[i] = 0 }
                    seedEnd = filled
                    filled += span
                } else {
                    filled += got
                }
            }
        }
        refill()
        if ended && seedEnd == 0 { return }  // an empty seed
        let mask: UInt32 = control.rsumBytes == 4 ? .max : (1 << (8 * UInt32(control.rsumBytes))) - 1
        var first = RollingChecksum(), second = RollingChecksum()
        var offset = 0  // in the buffer
        var recompute = true  // the sums are of the blocks at `offset` (false), or must be made there (true)
        while foundCount < found.count {
            if ended && offset >= seedEnd { return }
            if offset + span >= filled {
                if ended { return }
                guard keepGoing() else { return }
                start = min(offset, filled)
                let dropped = start
                refill()
                offset -= dropped
                if seedEnd != Int.max, offset >= seedEnd { return }
                if offset + span > filled { return }
                if offset + span >= filled { continue }
            }
            if recompute {
                first = RollingChecksum(buffer[offset..<(offset + size)])
                second = seq == 2 ? RollingChecksum(buffer[(offset + size)..<(offset + 2 * size)]) : RollingChecksum()
                recompute = false
            }
            // The offsets this window holds, rolled with no bounds checks until the bit filter hits.
            let limit = min(filled - span, seedEnd)
            var hit = false
            buffer.withUnsafeBufferPointer { bytes in
                bits.withUnsafeBufferPointer { words in
                    var at = offset
                    while at < limit {
                        let key = UInt64((UInt32(first.a) << 16 | UInt32(first.b)) & mask) << 32
                            | UInt64(seq == 2 ? (UInt32(second.a) << 16 | UInt32(second.b)) & mask : 0)
                        let mixed = Self.mix(key)
                        if words[Int((mixed & bitMask) >> 6)] & (1 << (mixed & 63)) != 0 {
                            hit = true
                            break
                        }
                        let out = bytes[at], middle = bytes[at + size]
                        first.roll(out: out, into: middle, shift: shift)
                        if seq == 2 { second.roll(out: middle, into: bytes[at + 2 * size], shift: shift) }
                        at += 1
                    }
                    offset = at
                }
            }
            guard hit else { continue }
            let key = Self.key(control.kept(first), seq == 2 ? control.kept(second) : 0)
            if let candidates = blocks[key], confirm(candidates, at: offset, in: buffer, block: block) {
                offset += size  // past the block matched: its successor most likely follows
                recompute = true
                continue
            }
            // Slide one byte.
            let out = buffer[offset], middle = buffer[offset + size]
            first.roll(out: out, into: middle, shift: shift)
            if seq == 2 { second.roll(out: middle, into: buffer[offset + 2 * size], shift: shift) }
            offset += 1
        }
    }

    /// Confirms each candidate block (and, with seq_matches 2, the one after it) at `offset`
    /// by its truncated MD4; a confirmed block is told with its bytes.
    /// Returns whether a block matched there.
    private mutating func confirm(_ candidates: [Int32], at offset: Int, in buffer: [UInt8], block: (Int, UnsafeRawBufferPointer) -> Void) -> Bool {
        var matchedAny = false
        let size = control.blockSize, seq = control.sequenceMatches
        var digests: [[UInt8]] = []  // of the block at offset, and of the one after: each computed once
        func digestAt(_ n: Int) -> ArraySlice<UInt8> {
            while digests.count <= n {
                let from = offset + digests.count * size
                buffer.withUnsafeBytes { md4.digest(UnsafeRawBufferPointer(rebasing: $0[from..<(from + size)]), into: &digest) }
                digests.append(digest)
            }
            return digests[n][0..<control.checksumBytes]
        }
        for candidate in candidates {
            let index = Int(candidate)
            let pair = seq == 2 ? [index, index + 1] : [index]
            guard pair.contains(where: { !found[$0] }) else { continue }
            guard pair.indices.allSatisfy({ digestAt($0) == control.checksum(pair[$0]) }) else { continue }
            matchedAny = true
            for (n, matched) in pair.enumerated() where !found[matched] {
                found[matched] = true
                foundCount += 1
                let length = min(size, Int(control.length - UInt64(matched) * UInt64(size)))
                let from = offset + n * size
                buffer.withUnsafeBytes { block(matched, UnsafeRawBufferPointer(rebasing: $0[from..<(from + length)])) }
            }
        }
        return matchedAny
    }
}
