import Foundation
import Testing
@testable import PrefetchCore

/// Sizes (`512`, `64KiB`, `1GB`) and rates (`20MiB/s`, `200MiB/day`), SPEC §1 "Sizes".
@Suite struct ByteSizeTests {
    struct Valid: CustomTestStringConvertible, Sendable {
        let text: String
        let bytes: UInt64
        var testDescription: String { text }
    }

    static let valid: [Valid] = [
        Valid(text: "0", bytes: 0),
        Valid(text: "512", bytes: 512),
        Valid(text: "512B", bytes: 512),
        Valid(text: "64KiB", bytes: 65_536),
        Valid(text: "20MiB", bytes: 20_971_520),
        Valid(text: "2GiB", bytes: 2_147_483_648),
        Valid(text: "1TiB", bytes: 1_099_511_627_776),
        Valid(text: "1GB", bytes: 1_000_000_000),
        Valid(text: "1kB", bytes: 1_000),
        Valid(text: "3MB", bytes: 3_000_000),
        Valid(text: "1TB", bytes: 1_000_000_000_000),
        Valid(text: "1536MiB", bytes: 1_610_612_736),
        Valid(text: "18446744073709551615", bytes: UInt64.max),
        Valid(text: "16777215TiB", bytes: 16_777_215 * 1_099_511_627_776),
    ]

    @Test(arguments: valid)
    func parsesValid(_ c: Valid) throws {
        #expect(try ByteSize.parse(c.text).bytes == c.bytes)
    }

    typealias Invalid = InvalidValue

    static let invalid: [Invalid] = [
        Invalid(text: "1.5GiB", offset: 1, phrase: "whole numbers"),
        Invalid(text: "2gib", offset: 1, phrase: "did you mean 'GiB'?"),
        Invalid(text: "2mib", offset: 1, phrase: "did you mean 'MiB'?"),
        Invalid(text: "2k", offset: 1, phrase: "did you mean 'KiB'?"),
        Invalid(text: "2XB", offset: 1, phrase: "unknown size unit 'XB'"),
        Invalid(text: "MiB", offset: 0, phrase: "expected a size"),
        Invalid(text: "", offset: 0, phrase: "expected a size"),
        Invalid(text: "-1", offset: 0, phrase: "expected a size"),
        Invalid(text: "99999999999999999999", offset: 0, phrase: "too large"),
        Invalid(text: "16777216TiB", offset: 0, phrase: "too large"),
        Invalid(text: "20 MiB", offset: 2, phrase: "a size has no spaces; write it as 20MiB"),
        Invalid(text: "20MiB ", offset: 2, phrase: "unknown size unit 'MiB '"),
    ]

    @Test(arguments: invalid)
    func rejectsInvalid(_ c: Invalid) {
        expectValueError(at: c.offset, containing: c.phrase) { try ByteSize.parse(c.text) }
    }

    @Test func unknownUnitListsTheUnits() throws {
        let error = try #require(throws: ValueError.self) { try ByteSize.parse("20XB") }
        #expect(error.offset == 2)
        #expect(error.message.hasPrefix("unknown size unit 'XB'; use B, KiB, MiB, GiB, TiB"))
        #expect(error.message.contains("kB, MB, GB, TB"))
        #expect(!error.message.contains("did you mean"))
    }

    struct Formatted: CustomTestStringConvertible, Sendable {
        let bytes: UInt64
        let text: String
        var testDescription: String { "\(bytes) → \(text)" }
    }

    static let formatted: [Formatted] = [
        Formatted(bytes: 0, text: "0B"),
        Formatted(bytes: 512, text: "512B"),
        Formatted(bytes: 1_023, text: "1023B"),
        Formatted(bytes: 1_024, text: "1KiB"),
        Formatted(bytes: 1_536, text: "1.5KiB"),
        Formatted(bytes: 65_536, text: "64KiB"),
        Formatted(bytes: 20_971_520, text: "20MiB"),
        Formatted(bytes: 1_288_490_189, text: "1.2GiB"),
        Formatted(bytes: 2_147_483_648, text: "2GiB"),
        Formatted(bytes: 1_000_000_000, text: "953.7MiB"),
        Formatted(bytes: 1_099_511_627_776, text: "1TiB"),
        Formatted(bytes: 5_497_558_138_880, text: "5TiB"),
        Formatted(bytes: 1_048_575, text: "1MiB"),  // rounding never shows 1024KiB
    ]

    @Test(arguments: formatted)
    func formats(_ c: Formatted) {
        #expect(ByteSize.format(c.bytes) == c.text)
        #expect(ByteSize(bytes: c.bytes).description == c.text)
    }

    /// The form `format` had with `String(format: "%.Nf")` (the reference: printf's digits,
    /// trailing zeros dropped), against the arithmetic that replaced it: every decimal count,
    /// each unit's boundaries, and seeded random sizes of every magnitude
    /// (`PREFETCH_BYTESIZE_SEED` replays one).
    @Test func formatsAsPrintfWould() {
        func reference(_ bytes: UInt64, _ decimals: Int) -> String {
            let steps: [(String, Double)] = [("TiB", 1_099_511_627_776), ("GiB", 1_073_741_824), ("MiB", 1_048_576), ("KiB", 1024)]
            let scale = Double((0..<decimals).reduce(1) { value, _ in value * 10 })
            for (index, (unit, size)) in steps.enumerated() where Double(bytes) >= size {
                let rounded = (Double(bytes) / size * scale).rounded() / scale
                if rounded >= 1024, index > 0 { return "1\(steps[index - 1].0)" }
                if rounded == rounded.rounded() { return "\(Int(rounded))\(unit)" }
                var text = String(format: "%.\(decimals)f", rounded)
                while text.hasSuffix("0") { text.removeLast() }
                return text + unit
            }
            return "\(bytes)B"
        }
        let seed = ProcessInfo.processInfo.environment["PREFETCH_BYTESIZE_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        var random = SplitMix64(seed: seed)
        var sizes: [UInt64] = []
        for shift in stride(from: 10, through: 50, by: 10) {
            let unit = UInt64(1) << UInt64(shift)
            sizes += [unit - 1, unit, unit + 1, unit * 1023, unit * 1024 - 1, unit + unit / 20, unit + unit / 20 - 1, unit * 3 / 2]
        }
        for _ in 0..<20_000 { sizes.append(random.next() >> (random.next() % 64)) }
        for bytes in sizes {
            for decimals in 1...3 {
                #expect(ByteSize.format(bytes, decimals: decimals) == reference(bytes, decimals),
                        "PREFETCH_BYTESIZE_SEED=\(seed): \(bytes) bytes, \(decimals) decimals")
            }
        }
    }

    /// Two different figures never read alike (`free space 1GiB < 1GiB` said nothing), and
    /// each reads as close to its value as the other lets it.
    @Test func differentFiguresReadDifferently() {
        #expect(ByteSize.formatApart(1034 << 20, 1044 << 20) == ("1.01GiB", "1.02GiB"))
        #expect(ByteSize.formatApart(424 << 20, 600 << 20) == ("424MiB", "600MiB"))
        #expect(ByteSize.formatApart(1 << 30, (1 << 30) + (1 << 20)) == ("1GiB", "1.001GiB"))
        #expect(ByteSize.formatApart(1 << 30, (1 << 30) + 1) == ("1073741824B", "1073741825B"))
        #expect(ByteSize.formatApart(5, 5) == ("5B", "5B"))
        // Seeded pairs near each other: whatever they are, distinct bytes give distinct texts.
        var generator = SplitMix64(seed: 11)
        for _ in 0..<2000 {
            let a = generator.next() % (1 << 42)
            let b = a + generator.next() % (1 << UInt64(generator.next() % 30)) + 1
            let (x, y) = ByteSize.formatApart(a, b)
            #expect(x != y, "seed 11: \(a) and \(b) both read \(x)")
        }
    }

    @Test func ordersByBytes() throws {
        #expect(try ByteSize.parse("1GB") < ByteSize.parse("1GiB"))
        #expect(try ByteSize.parse("1024") == ByteSize.parse("1KiB"))
    }

    struct Rate: CustomTestStringConvertible, Sendable {
        let text: String
        let period: String
        let bytes: UInt64
        var testDescription: String { "\(text) per \(period)" }
    }

    static let rates: [Rate] = [
        Rate(text: "20MiB/s", period: "s", bytes: 20_971_520),
        Rate(text: "512/s", period: "s", bytes: 512),
        Rate(text: "1GB/s", period: "s", bytes: 1_000_000_000),
        Rate(text: "200MiB/day", period: "day", bytes: 209_715_200),
        Rate(text: "1GiB/day", period: "day", bytes: 1_073_741_824),
    ]

    @Test(arguments: rates)
    func parsesRates(_ c: Rate) throws {
        #expect(try ByteRate.parse(c.text, per: c.period) == ByteRate(bytes: c.bytes))
    }

    struct BadRate: CustomTestStringConvertible, Sendable {
        let text: String
        let period: String
        let offset: Int
        let phrase: String
        var testDescription: String { "'\(text)' per \(period) → \(phrase)" }
    }

    static let badRates: [BadRate] = [
        BadRate(text: "20MiB", period: "s", offset: 5, phrase: "expected SIZE/s, as in 20MiB/s"),
        BadRate(text: "200MiB", period: "day", offset: 6, phrase: "expected SIZE/day, as in 20MiB/day"),
        BadRate(text: "20MiB/h", period: "s", offset: 6, phrase: "expected '/s' after the size, found '/h'"),
        BadRate(text: "20MiB/s", period: "day", offset: 6, phrase: "expected '/day' after the size, found '/s'"),
        BadRate(text: "20MiB/", period: "s", offset: 6, phrase: "expected '/s'"),
        BadRate(text: "0/s", period: "s", offset: 0, phrase: "more than 0"),
        BadRate(text: "0MiB/day", period: "day", offset: 0, phrase: "more than 0"),
        BadRate(text: "/s", period: "s", offset: 0, phrase: "expected a size"),
        BadRate(text: "1.5MiB/s", period: "s", offset: 1, phrase: "whole numbers"),
    ]

    @Test(arguments: badRates)
    func rejectsBadRates(_ c: BadRate) {
        expectValueError(at: c.offset, containing: c.phrase) { try ByteRate.parse(c.text, per: c.period) }
    }
}
