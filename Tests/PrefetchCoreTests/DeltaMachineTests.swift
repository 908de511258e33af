import Foundation
import Testing
@testable import PrefetchCore

/// SPEC §9's delta, its pure parts beside the matcher: the delta machine against a table
/// written here from "Whose trouble" (every start, every answer), the refusals' fixed
/// reasons, and the missing blocks and the received intervals against plain per-byte
/// references on seeded random cases (the seed in every message; `PREFETCH_TEST_SEED=N`
/// replays one).
@Suite struct DeltaMachineTests {
    static let seed: UInt64 = ProcessInfo.processInfo.environment["PREFETCH_TEST_SEED"].flatMap { UInt64($0) } ?? 53
    typealias Action = DeltaMachine.Action

    static let controlSHA1 = "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"
    static let otherSHA1 = "de9f2c7fd25e1b3afad3e85a0bd17d9b100db4b3"

    // MARK: The machine against SPEC §9, as a table

    /// What follows the control file's answer, written from SPEC §9: "For a current copy"
    /// (a 304, or the copy's own SHA-1, is fresh), "For a changed entry" (the copy's SHA-1 is
    /// stale), and "Whose trouble" (missing, refused, unusable, or at another origin: a whole
    /// fetch; a failure, 5xx or 429 at the resource URL's own origin: the resource's).
    static func afterControl(_ start: DeltaMachine.Start, _ answer: DeltaMachine.ControlAnswer) -> Action {
        switch answer {
        case .notModified:
            // A kept partial's control file stands ("Resume": a 304 keeps it); else only a request with conditions can be answered 304.
            if start.resumes { return .scan }
            return start.revalidates && start.conditional ? .fresh : .wholeFetch(.controlUnusable("HTTP 304 to a request without conditions"))
        case .file(let sha1) where start.movedWith != nil && sha1 != start.movedWith:
            // Step 3: a delta moves to another URL only when that URL's control file has the same SHA-1.
            return .wholeFetch(.mirrorDiffers("its control file's SHA-1 is \(sha1), the delta began with \(start.movedWith!)"))
        case .file(let sha1) where sha1 == start.copySHA1:
            return start.revalidates ? .fresh : .wholeFetch(.controlStale("its SHA-1 is the cached copy's"))
        case .file:
            return .scan
        case .unusable(let detail):
            return .wholeFetch(.controlUnusable(detail))
        case .status(let status, _) where status == 404 || status == 410:
            return .wholeFetch(.controlMissing(status))
        case .status(let status, _) where status == 401 || status == 403:
            return .wholeFetch(.controlRefused(status))
        case .status(let status, ownOrigin: false):
            return .wholeFetch(.controlUnreachable("HTTP \(status)"))
        case .status(let status, ownOrigin: true) where status == 429 || (500...599).contains(status):
            return .fail("control file: HTTP \(status)", status: status)
        case .status(let status, ownOrigin: true):
            return .wholeFetch(.controlUnusable("HTTP \(status)"))
        case .failed(let detail, ownOrigin: true):
            return .fail(detail, status: nil)
        case .failed(let detail, ownOrigin: false):
            return .wholeFetch(.controlUnreachable(detail))
        }
    }

    /// The phase an action leaves the machine in.
    static func phase(after action: Action) -> DeltaMachine.Phase {
        switch action {
        case .askControl: .control
        case .scan: .scanning
        case .askRanges: .ranges
        case .check, .checkWhole: .checking
        case .fresh, .place, .wholeFetch, .fail: .ended
        }
    }

    @Test func everyStartAndEveryControlAnswer() {
        var starts: [DeltaMachine.Start] = []
        for revalidates in [false, true] {
            for conditional in [false, true] {
                for copy in [nil, Self.controlSHA1, Self.otherSHA1] {
                    for resumes in [false, true] {
                        for moved in [nil, Self.controlSHA1, Self.otherSHA1] {
                            starts.append(.init(revalidates: revalidates, conditional: conditional, copySHA1: copy, resumes: resumes,
                                                movedWith: moved))
                        }
                    }
                }
            }
        }
        var answers: [DeltaMachine.ControlAnswer] = [.notModified, .file(sha1: Self.controlSHA1), .file(sha1: Self.otherSHA1),
                                                     .unusable("line 4: 'Blocksize' is not a power of two")]
        for status in [404, 410, 401, 403, 429, 500, 503, 400, 418] {
            answers += [.status(status, ownOrigin: true), .status(status, ownOrigin: false)]
        }
        answers += [.failed("could not connect: connection refused", ownOrigin: true), .failed("could not connect: connection refused", ownOrigin: false)]
        #expect(starts.count == 72 && answers.count == 24)
        for start in starts {
            let fresh = DeltaMachine(start)
            // The control file is asked conditionally only for a current copy with the control file's validators.
            // A kept partial's control file is always asked again on its validators.
            #expect(fresh.first == .askControl(conditional: start.resumes || (start.revalidates && start.conditional)), "\(start)")
            #expect(fresh.phase == .control, "\(start)")
            for answer in answers {
                var machine = fresh
                let action = machine.handle(.control(answer))
                let expected = Self.afterControl(start, answer)
                #expect(action == expected, "\(start), \(answer)")
                #expect(machine.phase == Self.phase(after: expected), "\(start), \(answer)")
            }
        }
    }

    /// A machine past its control file, scanning a seed.
    static func scanning() -> DeltaMachine {
        var machine = DeltaMachine(.init(revalidates: false, conditional: false, copySHA1: otherSHA1))
        _ = machine.handle(.control(.file(sha1: controlSHA1)))
        return machine
    }

    static func little(_ missing: UInt64, _ length: UInt64) -> Action { .wholeFetch(.littleInCommon(missing: missing, length: length)) }

    /// SPEC §9 step 2: more than 90 % of `Length` still missing is one plain GET; exactly 90 % is not more.
    @Test func theNinetyPercentRule() {
        #expect(Self.scanning().phase == .scanning)
        let table: [(missing: UInt64, length: UInt64, expected: Action)] = [
            (0, 1, .check), (0, 1_000, .check), (0, 10_995_116_277_760, .check),
            (1, 1, Self.little(1, 1)),
            (1, 1_000, .askRanges), (899, 1_000, .askRanges), (900, 1_000, .askRanges),
            (901, 1_000, Self.little(901, 1_000)), (999, 1_000, Self.little(999, 1_000)), (1_000, 1_000, Self.little(1_000, 1_000)),
            (9, 10, .askRanges), (10, 10, Self.little(10, 10)),
            (6, 7, .askRanges), (7, 7, Self.little(7, 7)),  // 90 % of 7 is 6.3
            (900, 1_001, .askRanges), (901, 1_001, Self.little(901, 1_001)),  // 90 % of 1001 is 900.9
            (9_895_604_649_984, 10_995_116_277_760, .askRanges),  // 9 TiB of 10 TiB
            (9_895_604_649_985, 10_995_116_277_760, Self.little(9_895_604_649_985, 10_995_116_277_760)),
        ]
        for row in table {
            var machine = Self.scanning()
            let action = machine.handle(.scanned(missing: row.missing, length: row.length))
            #expect(action == row.expected, "\(row.missing) of \(row.length) missing")
            #expect(machine.phase == Self.phase(after: row.expected), "\(row.missing) of \(row.length) missing")
        }
    }

    /// A machine waiting for a ranged answer.
    static func ranging() -> DeltaMachine {
        var machine = scanning()
        _ = machine.handle(.scanned(missing: 100, length: 1_000))
        return machine
    }

    /// SPEC §9 step 3 and "Whose trouble": invalid, stale, 416, a 200 or nothing brought is the
    /// delta's; a connection failure, 5xx or 429 the resource's.
    @Test func everyRangedAnswer() {
        #expect(Self.ranging().phase == .ranges)
        let invalid = "a part 0-9 outside the ranges asked for", stale = "its complete length 5 is not the control file's 1000"
        let table: [(answer: DeltaMachine.RangesAnswer, expected: Action)] = [
            (.brought(missing: 0), .check),
            (.brought(missing: 1), .askRanges),
            (.brought(missing: 4_096), .askRanges),
            (.nothing, .wholeFetch(.rangesBroughtNothing)),
            (.whole, .wholeFetch(.rangesIgnored)),
            (.wholeBody, .checkWhole),
            (.invalid(invalid), .wholeFetch(.rangesInvalid(invalid))),
            (.stale(stale), .wholeFetch(.rangesStale(stale))),
            (.status(416), .wholeFetch(.rangeNotSatisfiable)),
            (.status(500), .fail("HTTP 500", status: 500)),
            (.status(503), .fail("HTTP 503", status: 503)),
            (.status(429), .fail("HTTP 429", status: 429)),
            (.status(404), .wholeFetch(.rangesRefused(404))),
            (.status(403), .wholeFetch(.rangesRefused(403))),
            (.failed("connection reset by peer"), .fail("connection reset by peer", status: nil)),
        ]
        for row in table {
            var machine = Self.ranging()
            let action = machine.handle(.ranges(row.answer))
            #expect(action == row.expected, "\(row.answer)")
            #expect(machine.phase == Self.phase(after: row.expected), "\(row.answer)")
        }
        // Ranges are asked again while blocks are missing, then the file is checked.
        var machine = Self.ranging()
        for missing: UInt64 in [900, 500, 1] {
            let action = machine.handle(.ranges(.brought(missing: missing)))
            #expect(action == .askRanges && machine.phase == .ranges, "\(missing) missing")
        }
        let last = machine.handle(.ranges(.brought(missing: 0)))
        #expect(last == .check && machine.phase == .checking)
    }

    /// SPEC §9 step 4: placed only when the assembled file checks; a mismatch is the delta's.
    @Test func theCheckPlacesOrFallsBack() {
        for viaRanges in [false, true] {
            var machine = viaRanges ? Self.ranging() : Self.scanning()
            let check = machine.handle(viaRanges ? .ranges(.brought(missing: 0)) : .scanned(missing: 0, length: 1_000))
            #expect(check == .check && machine.phase == .checking, "via ranges: \(viaRanges)")
            var mismatched = machine
            let placed = machine.handle(.checked(mismatch: nil))
            #expect(placed == .place && machine.phase == .ended, "via ranges: \(viaRanges)")
            let detail = "SHA-1 \(Self.otherSHA1), the control file says \(Self.controlSHA1)"
            let fallback = mismatched.handle(.checked(mismatch: detail))
            #expect(fallback == .wholeFetch(.mismatch(detail)) && mismatched.phase == .ended, "via ranges: \(viaRanges)")
        }
    }

    /// A 200 to a range request whose body was read: it is the whole fetch (SPEC §9), judged
    /// as any — placed when it checks, else the resource's failure (no second whole fetch).
    @Test func aWholeBodyIsJudgedAsAWholeFetch() {
        var machine = Self.ranging()
        #expect(machine.handle(.ranges(.wholeBody)) == .checkWhole && machine.phase == .checking && machine.whole)
        var mismatched = machine
        #expect(machine.handle(.checked(mismatch: nil)) == .place && machine.phase == .ended)
        #expect(mismatched.handle(.checked(mismatch: "sha256 mismatch")) == .fail("sha256 mismatch", status: 200) && mismatched.phase == .ended)
    }

    /// A copy with no SHA-1 recorded is read beside the scan (SPEC §9: once from the file):
    /// when it is the control file's version, a changed entry's control file is stale and a
    /// revalidated copy is fresh, whatever the scan found; else the scan decides.
    @Test func aCopyReadBesideTheScan() {
        for revalidates in [false, true] {
            for missing: UInt64 in [0, 1, 100, 900, 901, 1_000] {
                for matches in [false, true] {
                    var machine = DeltaMachine(.init(revalidates: revalidates, conditional: false, copySHA1: nil))
                    #expect(machine.handle(.control(.file(sha1: Self.controlSHA1))) == .scan)
                    let action = machine.handle(.scanned(missing: missing, length: 1_000, copyMatches: matches))
                    let expected: Action = matches ? (revalidates ? .fresh : .wholeFetch(.controlStale("its SHA-1 is the cached copy's")))
                        : missing == 0 ? .check : missing > 900 ? .wholeFetch(.littleInCommon(missing: missing, length: 1_000)) : .askRanges
                    #expect(action == expected, "revalidates \(revalidates), missing \(missing), matches \(matches)")
                }
            }
        }
    }

    // MARK: The refusals

    @Test func refusalsHaveFifteenFixedReasons() {
        let all: [DeltaRefusal] = [
            .controlMissing(404), .controlRefused(401), .controlUnusable("no blank line after the header"),
            .controlStale("its SHA-1 is the cached copy's"), .controlUnreachable("HTTP 502"),
            .littleInCommon(missing: 950, length: 1_000), .rangesIgnored, .rangesInvalid("a part outside the ranges asked for"),
            .rangesStale("another ETag"), .rangeNotSatisfiable, .rangesRefused(403), .rangesBroughtNothing,
            .mismatch("SHA-1 differs"), .mirrorDiffers("its control file's SHA-1 is another"), .noMD4,
        ]
        // Exhaustive: a new case does not compile here until it is listed above.
        func position(_ refusal: DeltaRefusal) -> Int {
            switch refusal {
            case .controlMissing: 0
            case .controlRefused: 1
            case .controlUnusable: 2
            case .controlStale: 3
            case .controlUnreachable: 4
            case .littleInCommon: 5
            case .rangesIgnored: 6
            case .rangesInvalid: 7
            case .rangesStale: 8
            case .rangeNotSatisfiable: 9
            case .rangesRefused: 10
            case .rangesBroughtNothing: 11
            case .mismatch: 12
            case .mirrorDiffers: 13
            case .noMD4: 14
            }
        }
        #expect(all.map(position) == Array(0..<15))
        let reasons = ["control file missing", "control file refused", "control file unusable", "control file stale",
                       "control file unreachable", "little in common", "ranges ignored", "ranges invalid", "ranges stale",
                       "range not satisfiable", "ranges refused", "ranges brought nothing", "mismatch", "mirror differs", "no MD4"]
        #expect(Set(reasons).count == 15)
        #expect(all.map(\.reason) == reasons)
        for refusal in all { #expect(!refusal.detail.isEmpty, "\(refusal)") }
        #expect(DeltaRefusal.controlMissing(410).detail == "HTTP 410" && DeltaRefusal.rangesRefused(403).detail == "HTTP 403")
        #expect(DeltaRefusal.rangesInvalid("a part 5-9").detail == "a part 5-9")
        #expect(DeltaRefusal.littleInCommon(missing: 950, length: 1_000).detail.contains("over 90 %"))
    }

    // MARK: The missing blocks against a per-byte reference

    /// The maximal runs of `true` in `flags` within `bounds` (all of it by default), in order.
    static func runs(_ flags: [Bool], in bounds: Range<Int>? = nil) -> [Range<UInt64>] {
        var runs: [Range<UInt64>] = []
        var start: Int?
        let bounds = bounds ?? flags.indices
        for index in bounds {
            if flags[index] {
                if start == nil { start = index }
            } else if let first = start {
                runs.append(UInt64(first)..<UInt64(index))
                start = nil
            }
        }
        if let first = start { runs.append(UInt64(first)..<UInt64(bounds.upperBound)) }
        return runs
    }

    @Test func missingBlocksAgainstAPerByteReference() {
        var random = SplitMix64(seed: Self.seed)
        for index in 0..<200 {
            let blockSize = 256 << Int.random(in: 0...4, using: &random)
            let length = Int.random(in: 1...50_000, using: &random)
            let count = (length + blockSize - 1) / blockSize
            var blocks = DeltaBlocks(blockSize: blockSize, length: UInt64(length))
            let density = Int.random(in: 0...4, using: &random)  // 0: nothing had, 4: everything
            var had = Set<Int>()
            for block in 0..<count {
                guard Int.random(in: 0..<4, using: &random) < density else { continue }
                had.insert(block)
                blocks.markHad(block)
                if Int.random(in: 0..<8, using: &random) == 0 { blocks.markHad(block) }  // twice: still one block
            }
            let label = "seed \(Self.seed) (PREFETCH_TEST_SEED), case \(index): block \(blockSize), length \(length), \(had.count) of \(count) had"
            let missingBlock = (0..<count).map { !had.contains($0) }
            let missing = (0..<length).map { missingBlock[$0 / blockSize] }  // per byte
            let expected = Self.runs(missing)
            #expect(blocks.blockCount == count && blocks.haveCount == had.count, "\(label)")
            #expect(blocks.bytes(of: count - 1).upperBound == UInt64(length), "\(label)")
            #expect(blocks.missingBytes == UInt64(missing.filter { $0 }.count), "\(label)")
            #expect(blocks.isComplete == (had.count == count), "\(label)")
            let ranges = blocks.missingRanges
            #expect(ranges == expected, "\(label): \(ranges.count) ranges, the reference \(expected.count)")
            // Sorted and apart (adjacent blocks merged), on block bounds but for the end at `length`.
            #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound }, "\(label)")
            #expect(ranges.allSatisfy { range in
                !range.isEmpty && range.lowerBound % UInt64(blockSize) == 0 && range.upperBound <= UInt64(length)
                    && (range.upperBound % UInt64(blockSize) == 0 || range.upperBound == UInt64(length))
            }, "\(label)")
            #expect(had.contains(count - 1) != (ranges.last?.upperBound == UInt64(length)), "\(label)")
            #expect(blocks.nextRequest == Array(expected.prefix(32)), "\(label)")
            // What of a piece of an answer falls in missing blocks (clamped at `length`).
            for _ in 0..<5 {
                let offset = Int.random(in: 0..<(length + 300), using: &random)
                let size = Int.random(in: 0...(3 * blockSize), using: &random)
                let reference = Self.runs(missing, in: min(offset, length)..<min(offset + size, length))
                #expect(blocks.usable(offset: UInt64(offset), count: size) == reference, "\(label): usable(\(offset), \(size))")
            }
            if ranges != expected { return }
        }
    }

    @Test func takingMarksTheMissingBlocksCoveredWhole() {
        var random = SplitMix64(seed: Self.seed)
        for index in 0..<200 {
            let blockSize = 256 << Int.random(in: 0...4, using: &random)
            let length = Int.random(in: 1...50_000, using: &random)
            var blocks = DeltaBlocks(blockSize: blockSize, length: UInt64(length))
            let count = blocks.blockCount
            let before = (0..<count).map { _ in Bool.random(using: &random) }
            for block in 0..<count where before[block] { blocks.markHad(block) }
            func bounds(_ block: Int) -> Range<Int> { (block * blockSize)..<min(length, (block + 1) * blockSize) }
            var received = ByteIntervals()
            var covered = [Bool](repeating: false, count: length)
            for _ in 0..<Int.random(in: 0...12, using: &random) {
                let block = Int.random(in: 0..<count, using: &random), whole = bounds(block)
                let pieces: [Range<Int>]
                switch Int.random(in: 0..<5, using: &random) {
                case 0:  // anywhere, up to three blocks long
                    let start = Int.random(in: 0..<length, using: &random)
                    pieces = [start..<min(length, start + Int.random(in: 1...(3 * blockSize), using: &random))]
                case 1: pieces = [whole]
                case 2:  // one block in two touching pieces, the later one first
                    let cut = Int.random(in: whole, using: &random)
                    pieces = [cut..<whole.upperBound, whole.lowerBound..<cut]
                case 3: pieces = [whole.lowerBound..<(whole.upperBound - 1)]  // all but its last byte
                default:  // a range a request asks for
                    pieces = blocks.nextRequest.randomElement(using: &random).map { [Int($0.lowerBound)..<Int($0.upperBound)] } ?? []
                }
                for piece in pieces {
                    received.insert(UInt64(piece.lowerBound)..<UInt64(piece.upperBound))
                    for byte in piece { covered[byte] = true }
                }
            }
            let label = "seed \(Self.seed) (PREFETCH_TEST_SEED), case \(index): block \(blockSize), length \(length), received \(received.intervals)"
            let expected = (0..<count).filter { block in !before[block] && covered[bounds(block)].allSatisfy { $0 } }
            let taken = blocks.take(received)
            #expect(taken == expected.count, "\(label)")
            #expect(blocks.have == (0..<count).map { before[$0] || expected.contains($0) }, "\(label)")
            #expect(blocks.haveCount == blocks.have.filter { $0 }.count, "\(label)")
            let again = blocks.take(received)
            #expect(again == 0, "\(label)")
            let stillMissing = (0..<count).filter { !blocks.have[$0] }.map { bounds($0).count }.reduce(0, +)
            #expect(blocks.missingBytes == UInt64(stillMissing), "\(label)")
        }
    }

    // MARK: Received intervals against a reference set

    @Test func receivedIntervalsAgainstAReferenceSet() {
        var random = SplitMix64(seed: Self.seed)
        for index in 0..<200 {
            var intervals = ByteIntervals()
            var reference = Set<UInt64>()
            for step in 0..<Int.random(in: 1...20, using: &random) {
                var lower = UInt64.random(in: 0..<2_000, using: &random)
                var upper = min(2_000, lower + UInt64.random(in: 0...200, using: &random))  // empty ones too
                let existing = intervals.intervals.randomElement(using: &random)
                switch (Int.random(in: 0..<3, using: &random), existing) {
                case (1, let some?):  // touching one after it
                    lower = some.upperBound
                    upper = min(2_000, lower + UInt64.random(in: 1...100, using: &random))
                case (2, let some?):  // touching one before it
                    upper = some.lowerBound
                    lower = upper - min(upper, UInt64.random(in: 1...100, using: &random))
                default: break
                }
                intervals.insert(lower..<upper)
                reference.formUnion(lower..<upper)
                let kept = intervals.intervals
                let label = "seed \(Self.seed) (PREFETCH_TEST_SEED), case \(index), insert \(step) of \(lower)..<\(upper): \(kept)"
                #expect(kept.allSatisfy { !$0.isEmpty }, "\(label)")
                // Sorted and apart: touching intervals are merged into one.
                #expect(zip(kept, kept.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound }, "\(label)")
                #expect(Set(kept.flatMap { $0 }) == reference, "\(label)")
                if Set(kept.flatMap { $0 }) != reference { return }
            }
            // Ranges anywhere, and each interval kept, one byte wider on either side.
            var queries: [Range<UInt64>] = []
            for kept in intervals.intervals {
                let wider: UInt64 = kept.lowerBound > 0 ? 1 : 0
                queries += [kept, (kept.lowerBound - wider)..<kept.upperBound, kept.lowerBound..<(kept.upperBound + 1)]
            }
            for _ in 0..<30 {
                let lower = UInt64.random(in: 0..<2_000, using: &random)
                queries.append(lower..<(lower + UInt64.random(in: 1...300, using: &random)))
            }
            for range in queries {
                let label = "seed \(Self.seed) (PREFETCH_TEST_SEED), case \(index): covers(\(range)) of \(intervals.intervals)"
                #expect(intervals.covers(range) == range.allSatisfy { reference.contains($0) }, "\(label)")
            }
        }
    }
}
