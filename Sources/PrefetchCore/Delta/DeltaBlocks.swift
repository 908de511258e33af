/// Which blocks of a delta's file are still missing, and the ranged requests that fetch them
/// (SPEC §9 step 3): runs of adjacent missing blocks merged into one byte range, at most
/// `rangesPerRequest` ranges a request. What an answer brought is kept as byte intervals
/// (parts may come in any order, coalesced or overlapping); a block is had once all its bytes
/// are. Pure.
struct DeltaBlocks: Equatable {
    let blockSize: Int
    let length: UInt64
    /// Per block: its bytes are in the delta partial (from a seed, or fetched).
    private(set) var have: [Bool]
    private(set) var haveCount = 0

    static let rangesPerRequest = 32

    init(blockSize: Int, length: UInt64) {
        self.blockSize = blockSize
        self.length = length
        have = [Bool](repeating: false, count: Int((length + UInt64(blockSize) - 1) / UInt64(blockSize)))
    }

    var blockCount: Int { have.count }

    /// Block `index`'s bytes in the file: `start..<end` (the last one ends at `length`).
    func bytes(of index: Int) -> Range<UInt64> {
        let start = UInt64(index) * UInt64(blockSize)
        return start..<min(start + UInt64(blockSize), length)
    }

    mutating func markHad(_ index: Int) {
        guard !have[index] else { return }
        have[index] = true
        haveCount += 1
    }

    /// The bytes of the blocks still missing.
    var missingBytes: UInt64 {
        var total: UInt64 = 0
        for index in have.indices where !have[index] { total += UInt64(bytes(of: index).count) }
        return total
    }

    var isComplete: Bool { haveCount == have.count }

    /// The missing bytes as ranges, adjacent blocks merged, in file order.
    var missingRanges: [Range<UInt64>] {
        var ranges: [Range<UInt64>] = []
        var index = 0
        while index < have.count {
            guard !have[index] else { index += 1; continue }
            let first = index
            while index < have.count, !have[index] { index += 1 }
            ranges.append(bytes(of: first).lowerBound..<bytes(of: index - 1).upperBound)
        }
        return ranges
    }

    /// The next request's ranges: the first `rangesPerRequest` missing ones.
    var nextRequest: [Range<UInt64>] { Array(missingRanges.prefix(Self.rangesPerRequest)) }

    /// The part of `bytes` (at `offset` in the file) that falls in missing blocks, as
    /// (offset, slice) pieces: bytes beyond what was missing are counted, not used.
    func usable(offset: UInt64, count: Int) -> [Range<UInt64>] {
        var pieces: [Range<UInt64>] = []
        let end = min(offset + UInt64(count), length)
        var at = offset
        while at < end {
            let index = Int(at / UInt64(blockSize))
            let block = bytes(of: index)
            let upTo = min(block.upperBound, end)
            if !have[index] {
                if let last = pieces.last, last.upperBound == at { pieces[pieces.count - 1] = last.lowerBound..<upTo } else { pieces.append(at..<upTo) }
            }
            at = upTo
        }
        return pieces
    }

    /// Marks had every missing block that `received` covers whole; returns how many.
    @discardableResult
    mutating func take(_ received: ByteIntervals) -> Int {
        var count = 0
        for index in have.indices where !have[index] && received.covers(bytes(of: index)) {
            markHad(index)
            count += 1
        }
        return count
    }
}

/// Byte intervals received, kept disjoint and sorted (a response's parts: few).
struct ByteIntervals: Equatable {
    private(set) var intervals: [Range<UInt64>] = []

    mutating func insert(_ range: Range<UInt64>) {
        guard !range.isEmpty else { return }
        var merged = range
        var kept: [Range<UInt64>] = []
        for interval in intervals {
            if interval.upperBound < merged.lowerBound || interval.lowerBound > merged.upperBound {
                kept.append(interval)
            } else {
                merged = min(interval.lowerBound, merged.lowerBound)..<max(interval.upperBound, merged.upperBound)
            }
        }
        kept.append(merged)
        intervals = kept.sorted { $0.lowerBound < $1.lowerBound }
    }

    func covers(_ range: Range<UInt64>) -> Bool {
        intervals.contains { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }
    }
}
