import Foundation
import Testing
@testable import PrefetchCore

/// Bytes YAML does not allow — invalid UTF-8, NUL, other control characters — are reported
/// at their own line and column (columns count characters, lines end as libyaml ends them:
/// LF, CR LF, CR, NEL, LS, PS), on seeded random files against the generator's own count.
/// `PREFETCH_TEXT_SEED` replays a run.
@Suite struct YAMLTextTests {
    /// Characters a comment may hold, by their UTF-8 bytes.
    static let good: [[UInt8]] = ["a", "Z", " ", "\t", "#", "é", "€", "日", "😀", "\u{A0}", "\u{FEFF}", "\u{FFFD}", "\u{10FFFD}"].map { Array(String($0).utf8) }
    static let breaks: [[UInt8]] = [[0x0A], [0x0D, 0x0A], [0x0D], [0xC2, 0x85], [0xE2, 0x80, 0xA8], [0xE2, 0x80, 0xA9]]
    /// Bytes that are refused, and the message.
    static let bad: [([UInt8], String)] = [
        ([0x00], "a NUL byte is not allowed in a YAML file"),
        ([0x07], "control character U+0007 is not allowed in a YAML file (only tab and line breaks are)"),
        ([0x1B], "control character U+001B is not allowed in a YAML file (only tab and line breaks are)"),
        ([0x7F], "control character U+007F is not allowed in a YAML file (only tab and line breaks are)"),
        ([0xC2, 0x80], "control character U+0080 is not allowed in a YAML file (only tab and line breaks are)"),
        ([0xC2, 0x9F], "control character U+009F is not allowed in a YAML file (only tab and line breaks are)"),
        ([0xEF, 0xBF, 0xBE], "character U+FFFE is not allowed in a YAML file"),
        ([0xEF, 0xBF, 0xBF], "character U+FFFF is not allowed in a YAML file"),
        ([0xFF], "invalid UTF-8 (byte 0xFF); save the file as UTF-8"),
        ([0x80], "invalid UTF-8 (byte 0x80); save the file as UTF-8"),
        ([0xC3, 0x28], "invalid UTF-8 (byte 0xC3); save the file as UTF-8"),        // a lead without its continuation
        ([0xC0, 0xAF], "invalid UTF-8 (byte 0xC0); save the file as UTF-8"),        // overlong '/'
        ([0xE0, 0x80, 0xAF], "invalid UTF-8 (byte 0xE0); save the file as UTF-8"),  // overlong
        ([0xED, 0xA0, 0x80], "invalid UTF-8 (byte 0xED); save the file as UTF-8"),  // a surrogate
        ([0xF4, 0x90, 0x80, 0x80], "invalid UTF-8 (byte 0xF4); save the file as UTF-8"),  // past U+10FFFF
        ([0xF8, 0x88, 0x80, 0x80, 0x80], "invalid UTF-8 (byte 0xF8); save the file as UTF-8"),
    ]

    static let seed: UInt64 = {
        let environment = ProcessInfo.processInfo.environment["PREFETCH_TEXT_SEED"]
        return environment.flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64(UInt32.max))
    }()

    /// Comment lines of random characters, broken by random line breaks, and (in most
    /// files) one refused byte sequence at a random place; then a valid feed.
    @Test func aRefusedByteIsReportedAtItsPlace() {
        print("YAMLTextTests: PREFETCH_TEXT_SEED=\(Self.seed)")
        var random = SplitMix64(seed: Self.seed)
        func pick(_ count: Int) -> Int { Int(random.next() % UInt64(count)) }
        for round in 0..<300 {
            var bytes: [UInt8] = []
            var expected: (line: Int, column: Int, message: String)?
            let lines = pick(8) + 1
            let badLine = pick(lines + 2)  // sometimes none
            for line in 0..<lines {
                bytes += Array("#".utf8)
                let length = pick(30)
                let badColumn = pick(length + 1)
                for column in 0...length {
                    if line == badLine, column == badColumn, expected == nil {
                        let (sequence, message) = Self.bad[pick(Self.bad.count)]
                        expected = (line + 1, column + 2, message)  // after the '#'
                        bytes += sequence
                    }
                    if column < length { bytes += Self.good[pick(Self.good.count)] }
                }
                bytes += Self.breaks[pick(Self.breaks.count)]
            }
            bytes += Array("resources:\n  - url: https://a.example/x\n".utf8)
            let diagnostics = FeedDecoder(config: Config()).decode(bytes, file: "t.yaml").diagnostics.map(\.headline)
            if let expected {
                #expect(diagnostics == ["t.yaml:\(expected.line):\(expected.column): error: \(expected.message)"],
                        "seed \(Self.seed), round \(round): \(bytes.map { String($0, radix: 16) })")
            } else {
                #expect(diagnostics == [], "seed \(Self.seed), round \(round): \(bytes.map { String($0, radix: 16) })")
            }
        }
    }

    /// The lines libyaml counts are the lines the excerpt quotes.
    @Test func excerptsFindLinesAsLibyamlCountsThem() {
        let text = SourceText(bytes: Array("one\ntwo\r\nthree\rfour\u{85}five\u{2028}six\u{2029}seven".utf8))
        #expect((1...7).map { text.line($0) } == ["one", "two", "three", "four", "five", "six", "seven"])
        #expect(text.line(8) == nil && text.line(0) == nil)
    }
}
