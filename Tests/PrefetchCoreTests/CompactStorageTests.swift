import Foundation
import Testing
@testable import PrefetchCore

/// The storage helpers of `Values/Compact/`, each against the plain Swift it stands for, on
/// seeded random input (`PREFETCH_COMPACT_SEED` replays a run).
@Suite struct CompactStorageTests {
    static let seed = CompactValuesTests.seed

    struct Record: Defaulted, Sendable {
        var name: String?
        var numbers: [Int] = []
        static let absent = Record()
    }

    /// `Boxed` against a plain stored value: it reads back what was set, holds a box exactly
    /// when the value is not `absent`, copies made before a change keep their value, and it
    /// takes one word.
    @Test func aBoxHoldsWhatAPlainValueWould() {
        struct Holder {
            @Boxed var record = Record.absent
            var held: Bool { _record.isHeld }
        }
        var random = SplitMix64(seed: Self.seed)
        var holder = Holder(), plain = Record.absent
        var copies: [(Holder, Record)] = []
        for round in 0..<3000 {
            switch random.next() % 4 {
            case 0: plain = .absent
            case 1: plain.name = random.next() % 2 == 0 ? nil : "n\(random.next() % 5)"
            case 2: plain.numbers = (0..<Int(random.next() % 3)).map { _ in Int(random.next() % 4) }
            default: plain = Record(name: "x", numbers: [1])
            }
            switch random.next() % 2 {
            case 0: holder.record = plain
            default:
                holder.record.name = plain.name
                holder.record.numbers = plain.numbers
            }
            #expect(holder.record == plain, "seed \(Self.seed), round \(round)")
            #expect(holder.held == (plain != .absent), "seed \(Self.seed), round \(round)")
            if random.next() % 40 == 0 { copies.append((holder, plain)) }
        }
        #expect(copies.allSatisfy { $0.0.record == $0.1 }, "seed \(Self.seed): a copy changed with the holder it came from")
        #expect(MemoryLayout<Boxed<Record>>.size == 8)
        var optional = Boxed<String?>(wrappedValue: nil)
        #expect(!optional.isHeld)
        optional.wrappedValue = "a"
        #expect(optional.isHeld && optional.wrappedValue == "a" && optional == Boxed(wrappedValue: "a"))
    }

    /// `OptionalWords` against an array of optionals: numbers, instants and 4-word digests at
    /// random slots, set and cleared in any order; equal exactly when the model is.
    @Test func optionalWordsHoldWhatOptionalsWould() throws {
        var random = SplitMix64(seed: Self.seed &+ 1)
        let digests = try [String(repeating: "0", count: 64), String(repeating: "f", count: 64), String(repeating: "3a", count: 32)]
            .map { try #require(Digest256(hex: $0)) }
        for round in 0..<500 {
            var words = OptionalWords<8>(), other = OptionalWords<8>()
            var model = [UInt64?](repeating: nil, count: 8)  // slots 0–3: numbers; 4: a digest over 4–7
            var digest: Digest256?
            for step in 0..<30 {
                let context = "seed \(Self.seed), round \(round), step \(step)"
                switch random.next() % 4 {
                case 0:
                    let slot = Int(random.next() % 4)
                    let value: UInt64? = random.next() % 3 == 0 ? nil : [0, 1, UInt64.max, random.next()][Int(random.next() % 4)]
                    words[slot] = value
                    model[slot] = value
                case 1:
                    let slot = Int(random.next() % 4)
                    let value: Instant? = random.next() % 3 == 0 ? nil : Instant(nanoseconds: Int64(bitPattern: random.next()))
                    words[slot] = value
                    model[slot] = value.map { UInt64(bitPattern: $0.nanoseconds) }
                case 2:
                    digest = random.next() % 3 == 0 ? nil : digests[Int(random.next() % 3)]
                    words[4] = digest
                default:
                    let slot = Int(random.next() % 4)
                    let value: Int? = random.next() % 2 == 0 ? nil : Int(Int64(bitPattern: random.next()))
                    words[slot] = value
                    model[slot] = value.map { UInt64(bitPattern: Int64($0)) }
                }
                for slot in 0..<4 { #expect(words[slot] as UInt64? == model[slot], "\(context), slot \(slot)") }
                #expect(words[4] as Digest256? == digest, "\(context)")
                // Another set to the same values by another way is equal; one value apart is not.
                other = OptionalWords<8>()
                for slot in (0..<4).reversed() { other[slot] = model[slot] }
                other[4] = digest
                #expect(other == words, "\(context)")
                other[Int(random.next() % 4)] = (model[0] ?? 7) &+ 1
                #expect((other == words) == (0..<4).allSatisfy { other[$0] as UInt64? == model[$0] }, "\(context)")
            }
        }
        #expect(MemoryLayout<OptionalWords<6>>.size == 49 && MemoryLayout<OptionalWords<8>>.size == 65)
    }

    /// `SameBytes` against comparing the UTF-8 arrays: texts from pieces that include
    /// canonically equivalent spellings, at every offset; its hash is the same for the same bytes.
    @Test func sameBytesIsByteEquality() {
        var random = SplitMix64(seed: Self.seed &+ 2)
        for round in 0..<3000 {
            let a = CompactValuesTests.text(&random), b = random.next() % 3 == 0 ? a : CompactValuesTests.text(&random)
            let bytes = Array(a.utf8), other = Array(b.utf8)
            let context = "seed \(Self.seed), round \(round): \(a.debugDescription) \(b.debugDescription)"
            #expect(SameBytes.equal(a, b) == (bytes == other), "\(context)")
            #expect(ExactText(a) == ExactText(b) ? bytes == other : bytes != other, "\(context)")
            #expect(SameBytes.equal(bytes[...], other[...]) == (bytes == other), "\(context)")
            if bytes == other { #expect(SameBytes.hash(a) == SameBytes.hash(String(decoding: other, as: UTF8.self)), "\(context)") }
            // A key read back from bytes (state.db's rows) hashes as the key made of strings.
            #expect(ResourceKey(feed: a, path: b).hashValue == SameBytes.hash(a, then: other[...]), "\(context)")
            let offset = Int(random.next() % UInt64(bytes.count + 2)) - 1
            let atOffset = offset >= 0 && offset + other.count <= bytes.count && Array(bytes[offset..<(offset + other.count)]) == other
            #expect(SameBytes.equal(a, at: offset, b) == atOffset, "\(context), offset \(offset)")
            if offset >= 0, offset <= bytes.count {
                let end = offset + Int(random.next() % UInt64(bytes.count - offset + 1))
                let text = SameBytes.text(a, bytes: offset..<end)
                #expect(text == String(decoding: bytes[offset..<end], as: UTF8.self), "\(context)")
            }
        }
        #expect(!SameBytes.equal("caf\u{E9}", "cafe\u{301}") && "caf\u{E9}" == "cafe\u{301}")
        #expect(Set([ExactText("caf\u{E9}"), ExactText("cafe\u{301}")]).count == 2)
    }

    /// `PositionTable` against a `Dictionary`, with a hash that collides on purpose (long
    /// probe runs, wrapping at the end of the table), growth, reserved room and removals.
    @Test func aPositionTableFindsWhatADictionaryWould() {
        var random = SplitMix64(seed: Self.seed &+ 3)
        for round in 0..<40 {
            var keys: [Int] = [], table = PositionTable(), reference: [Int: Int] = [:]
            let collide = round % 2 == 0
            func hash(_ key: Int) -> Int { collide ? key % 3 : key &* 0x9E37_79B9 }
            if round % 4 == 1 { table.reserveCapacity(Int(random.next() % 300)) }
            for step in 0..<600 {
                let key = Int(random.next() % 400)
                let context = "seed \(Self.seed), round \(round), step \(step)"
                let found = table.position(hash: hash(key)) { keys[$0] == key }
                #expect(found == reference[key], "\(context)")
                if random.next() % 8 == 0, let found {
                    keys.remove(at: found)
                    table.remove(at: found)
                    reference = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, $0) })
                } else if found == nil {
                    keys.append(key)
                    table.append(hash: hash(key))
                    reference[key] = keys.count - 1
                }
                #expect(table.count == keys.count, "\(context)")
            }
            for (key, position) in reference { #expect(table.position(hash: hash(key)) { keys[$0] == key } == position) }
        }
    }

    /// `DecimalDigits` writes what `String(n)` does, at the edges and in between.
    @Test func decimalDigitsAreStringsDigits() {
        var random = SplitMix64(seed: Self.seed &+ 4)
        let edges: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, Int64.max, Int64.min, Int64.max - 1, Int64.min + 1]
        for value in edges + (0..<5000).map({ _ in Int64(bitPattern: random.next()) >> (random.next() % 64) }) {
            #expect(Array(DecimalDigits(value)) == Array(String(value).utf8), "seed \(Self.seed): \(value)")
        }
        for value in [UInt64.max, UInt64(Int64.max) + 1, 0, random.next()] {
            #expect(Array(DecimalDigits(value)) == Array(String(value).utf8), "\(value)")
        }
    }
}
