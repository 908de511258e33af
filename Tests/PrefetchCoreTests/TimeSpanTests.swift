import Testing
@testable import PrefetchCore

/// Durations (SPEC §1 "Durations") and signed clock offsets (SPEC §5 `PREFETCH_CLOCK_OFFSET`).
@Suite struct TimeSpanTests {
    struct Valid: CustomTestStringConvertible, Sendable {
        let text: String
        let seconds: Int64
        var signed = false
        var testDescription: String { signed ? "\(text) (signed)" : text }
    }

    static let valid: [Valid] = [
        Valid(text: "90s", seconds: 90),
        Valid(text: "15m", seconds: 900),
        Valid(text: "2h", seconds: 7_200),
        Valid(text: "1d", seconds: 86_400),
        Valid(text: "1h30m", seconds: 5_400),
        Valid(text: "0s", seconds: 0),
        Valid(text: "1d2h3m4s", seconds: 86_400 + 7_200 + 180 + 4),
        Valid(text: "1d30s", seconds: 86_430),
        Valid(text: "36500d", seconds: 36_500 * 86_400),
        Valid(text: "+3h", seconds: 10_800, signed: true),
        Valid(text: "-90s", seconds: -90, signed: true),
        Valid(text: "+1h30m", seconds: 5_400, signed: true),
        Valid(text: "-1d", seconds: -86_400, signed: true),
        Valid(text: "45m", seconds: 2_700, signed: true),
    ]

    @Test(arguments: valid)
    func parsesValid(_ c: Valid) throws {
        let span = try TimeSpan.parse(c.text, signed: c.signed)
        #expect(span.seconds == c.seconds)
    }

    struct Invalid: CustomTestStringConvertible, Sendable {
        let text: String
        let offset: Int
        let phrase: String
        var signed = false
        var testDescription: String { "'\(text)'\(signed ? " (signed)" : "") → \(phrase)" }
    }

    static let invalid: [Invalid] = [
        Invalid(text: "", offset: 0, phrase: "expected a duration"),
        Invalid(text: "10", offset: 2, phrase: "needs a unit"),
        Invalid(text: "1x", offset: 1, phrase: "unknown duration unit 'x'"),
        Invalid(text: "1m1h", offset: 3, phrase: "large to small"),
        Invalid(text: "1h1h", offset: 3, phrase: "each once"),
        Invalid(text: "30s1m", offset: 4, phrase: "large to small"),
        Invalid(text: "-5m", offset: 0, phrase: "expected a number"),
        Invalid(text: "+5m", offset: 0, phrase: "expected a number"),
        Invalid(text: "1.5h", offset: 1, phrase: "unknown duration unit '.'"),
        Invalid(text: "h", offset: 0, phrase: "expected a number"),
        Invalid(text: "1h30", offset: 4, phrase: "needs a unit"),
        Invalid(text: "1H", offset: 1, phrase: "unknown duration unit 'H'"),
        Invalid(text: "1h 30m", offset: 2, phrase: "a duration has no spaces; write it as 1h30m"),
        Invalid(text: "99999999999999999999s", offset: 0, phrase: "too large"),
        Invalid(text: "36501d", offset: 0, phrase: "too large"),
        Invalid(text: "1d99999999999999h", offset: 2, phrase: "too large"),
        Invalid(text: "+", offset: 0, phrase: "expected a duration", signed: true),
        Invalid(text: "-", offset: 0, phrase: "expected a duration", signed: true),
        Invalid(text: "--5m", offset: 1, phrase: "expected a number", signed: true),
        Invalid(text: "+3", offset: 2, phrase: "needs a unit", signed: true),
    ]

    @Test(arguments: invalid)
    func rejectsInvalid(_ c: Invalid) {
        expectValueError(at: c.offset, containing: c.phrase) { try TimeSpan.parse(c.text, signed: c.signed) }
    }

    @Test func missingUnitMessageSuggestsTheUnit() throws {
        let error = try #require(throws: ValueError.self) { try TimeSpan.parse("10") }
        #expect(error == ValueError("duration '10' needs a unit: s, m, h or d (as in 10s)", at: 2))
    }

    struct Spelling: CustomTestStringConvertible, Sendable {
        let seconds: Int64
        let text: String
        var testDescription: String { "\(seconds) → \(text)" }
    }

    static let spellings: [Spelling] = [
        Spelling(seconds: 0, text: "0s"),
        Spelling(seconds: 90, text: "1m30s"),
        Spelling(seconds: 900, text: "15m"),
        Spelling(seconds: 5_400, text: "1h30m"),
        Spelling(seconds: 7_200, text: "2h"),
        Spelling(seconds: 172_800, text: "2d"),
        Spelling(seconds: 93_784, text: "1d2h3m4s"),
        Spelling(seconds: 86_401, text: "1d1s"),
        Spelling(seconds: -90, text: "-1m30s"),
        Spelling(seconds: -10_800, text: "-3h"),
    ]

    @Test(arguments: spellings)
    func descriptionIsTheShortestSpelling(_ c: Spelling) throws {
        #expect(TimeSpan(seconds: c.seconds).description == c.text)
        #expect(try TimeSpan.parse(c.text, signed: true).seconds == c.seconds)
    }

    @Test(arguments: ["90s", "15m", "2h", "1d", "1h30m", "0s", "1d2h3m4s", "25h", "100m", "3600s"])
    func descriptionRoundTrips(_ text: String) throws {
        let span = try TimeSpan.parse(text)
        let again = try TimeSpan.parse(span.description)
        #expect(again == span)
        #expect(again.description == span.description)
    }

    @Test func ordersBySeconds() throws {
        #expect(try TimeSpan.parse("59m") < TimeSpan.parse("1h"))
        #expect(try TimeSpan.parse("-1s", signed: true) < TimeSpan.zero)
        #expect(TimeSpan.minutes(90).seconds == 5_400)
        #expect(TimeSpan.hours(2) == TimeSpan(seconds: 7_200))
    }
}
