import Foundation
import Testing
@testable import PrefetchCore

/// Manifest timestamps (`not_before`, `expires`; SPEC §5): RFC 3339 with `Z` or an
/// offset, or a bare date meaning midnight in the feed's zone.
@Suite struct TimestampTests {
    /// Seconds since the epoch of an RFC 3339 text, read by Foundation (not by the code under test).
    static func foundationSeconds(_ text: String) throws -> Int64 {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        let date = try #require(formatter.date(from: text))
        return Int64(date.timeIntervalSince1970)
    }

    struct Example: CustomTestStringConvertible, Sendable {
        let text: String
        let seconds: Int64
        /// The fraction of a second, kept to the nanosecond (SPEC §5: full precision).
        var nanoseconds: Int64 = 0
        var testDescription: String { text }
    }

    // Expected values from `date -u -d TEXT +%s`.
    static let instants: [Example] = [
        Example(text: "2026-12-01T00:00:00Z", seconds: 1_796_083_200),
        Example(text: "2026-12-01T01:00:00+01:00", seconds: 1_796_083_200),
        Example(text: "2026-11-30T18:30:00-05:30", seconds: 1_796_083_200),
        Example(text: "2026-12-01T00:00:00+14:00", seconds: 1_796_032_800),
        Example(text: "2026-12-01T00:00:00-00:00", seconds: 1_796_083_200),
        Example(text: "2026-12-01T00:00:00.5Z", seconds: 1_796_083_200, nanoseconds: 500_000_000),
        Example(text: "2026-12-01T00:00:00.123456789Z", seconds: 1_796_083_200, nanoseconds: 123_456_789),
        Example(text: "2026-12-01T00:00:00.1234567891Z", seconds: 1_796_083_200, nanoseconds: 123_456_789),
        Example(text: "2026-12-01T01:00:00.999+01:00", seconds: 1_796_083_200, nanoseconds: 999_000_000),
        Example(text: "2026-12-01t00:00:00z", seconds: 1_796_083_200),
        Example(text: "2026-12-01 00:00:00Z", seconds: 1_796_083_200),
        Example(text: "1970-01-01T00:00:00Z", seconds: 0),
        Example(text: "1969-07-20T20:17:40Z", seconds: -14_182_940),
        Example(text: "2024-02-29T12:34:56Z", seconds: 1_709_210_096),
        Example(text: "2038-01-19T03:14:08Z", seconds: 2_147_483_648),
    ]

    @Test(arguments: instants)
    func parsesInstants(_ c: Example) throws {
        #expect(try Timestamp.parse(c.text) == .instant(Instant(seconds: c.seconds).advanced(byNanoseconds: c.nanoseconds)))
    }

    @Test(arguments: ["2026-12-01T00:00:00Z", "2026-12-01T01:00:00+01:00", "2026-11-30T18:30:00-05:30",
                      "1969-07-20T20:17:40Z", "2024-02-29T12:34:56Z", "2038-01-19T03:14:08Z"])
    func agreesWithFoundation(_ text: String) throws {
        #expect(try Timestamp.parse(text) == .instant(Instant(seconds: Self.foundationSeconds(text))))
    }

    @Test(arguments: [("2026-12-01", CivilTime(year: 2026, month: 12, day: 1)),
                      ("2024-02-29", CivilTime(year: 2024, month: 2, day: 29)),
                      ("2000-02-29", CivilTime(year: 2000, month: 2, day: 29)),
                      ("1999-12-31", CivilTime(year: 1999, month: 12, day: 31))])
    func bareDateIsLocal(_ text: String, _ date: CivilTime) throws {
        #expect(try Timestamp.parse(text) == .localDate(date))
    }

    typealias Invalid = InvalidValue

    static let invalid: [Invalid] = [
        Invalid(text: "2026-12-01T00:00:00", offset: 19, phrase: "needs a zone"),
        Invalid(text: "2026-12-01T00:00:00.25", offset: 22, phrase: "needs a zone"),
        Invalid(text: "2026-02-30", offset: 8, phrase: "day 30 does not exist"),
        Invalid(text: "2026-02-29", offset: 8, phrase: "day 29 does not exist"),
        Invalid(text: "2100-02-29", offset: 8, phrase: "does not exist"),
        Invalid(text: "2026-04-31T00:00:00Z", offset: 8, phrase: "does not exist"),
        Invalid(text: "2026-12-00", offset: 8, phrase: "does not exist"),
        Invalid(text: "2026-13-01", offset: 5, phrase: "month 13 is out of range"),
        Invalid(text: "2026-00-01", offset: 5, phrase: "month 0 is out of range"),
        Invalid(text: "2026-12-01T25:00:00Z", offset: 11, phrase: "hour 25 is out of range"),
        Invalid(text: "2026-12-01T24:00:00Z", offset: 11, phrase: "hour 24 is out of range"),
        Invalid(text: "2026-12-01T00:60:00Z", offset: 14, phrase: "minute 60 is out of range"),
        Invalid(text: "2026-12-01T00:00:61Z", offset: 17, phrase: "second 61 is out of range"),
        Invalid(text: "2026-12-01T00:00:00Zjunk", offset: 20, phrase: "unexpected text"),
        Invalid(text: "2026-12-01T00:00:00+01:00 ", offset: 25, phrase: "unexpected text"),
        Invalid(text: "2026-12-01T00:00:00+0100", offset: 19, phrase: "expected Z or an offset"),
        Invalid(text: "2026-12-01T00:00:00+1:00", offset: 19, phrase: "expected Z or an offset"),
        Invalid(text: "2026-12-01T00:00:00+24:00", offset: 19, phrase: "expected Z or an offset"),
        Invalid(text: "2026-12-01T00:00:00UTC", offset: 19, phrase: "expected Z or an offset"),
        Invalid(text: "2026-12-01T00:00:00.Z", offset: 20, phrase: "digits after '.'"),
        Invalid(text: "2026-12-01T00:00Z", offset: 0, phrase: "expected an RFC 3339 time"),
        Invalid(text: "2026-12-01X00:00:00Z", offset: 0, phrase: "expected an RFC 3339 time"),
        Invalid(text: "2026-12-1", offset: 0, phrase: "expected an RFC 3339 time"),
        Invalid(text: "26-12-01", offset: 0, phrase: "expected an RFC 3339 time"),
        Invalid(text: "2026/12/01", offset: 0, phrase: "expected an RFC 3339 time"),
        Invalid(text: "", offset: 0, phrase: "expected an RFC 3339 time"),
        Invalid(text: "tomorrow", offset: 0, phrase: "expected an RFC 3339 time"),
    ]

    @Test(arguments: invalid)
    func rejectsInvalid(_ c: Invalid) {
        expectValueError(at: c.offset, containing: c.phrase) { try Timestamp.parse(c.text) }
    }

    static func clock(_ identifier: String) throws -> ZoneClock {
        ZoneClock(try #require(TimeZone(identifier: identifier)))
    }

    @Test func instantIgnoresTheZone() throws {
        let stamp = try Timestamp.parse("2026-12-01T00:00:00Z")
        #expect(stamp.resolved(in: try Self.clock("Europe/Berlin")).seconds == 1_796_083_200)
        #expect(stamp.resolved(in: try Self.clock("Pacific/Chatham")).seconds == 1_796_083_200)
    }

    @Test func bareDateIsMidnightInTheFeedZone() throws {
        let stamp = try Timestamp.parse("2026-12-01")
        let berlin = try Self.clock("Europe/Berlin")
        // Midnight CET (+01:00) is 23:00Z the day before.
        #expect(stamp.resolved(in: berlin).seconds == 1_796_079_600)
        #expect(try stamp.resolved(in: berlin).seconds == Self.foundationSeconds("2026-11-30T23:00:00Z"))
        #expect(stamp.resolved(in: try Self.clock("UTC")).seconds == 1_796_083_200)
        let newYork = try Self.clock("America/New_York")
        #expect(try stamp.resolved(in: newYork).seconds == Self.foundationSeconds("2026-12-01T05:00:00Z"))
    }

    @Test func bareDateInASummerTimeZone() throws {
        let stamp = try Timestamp.parse("2026-07-01")
        let berlin = try Self.clock("Europe/Berlin")
        #expect(try stamp.resolved(in: berlin).seconds == Self.foundationSeconds("2026-06-30T22:00:00Z"))
    }

    @Test func bareDateWhoseMidnightIsInAGap() throws {
        // zdump: America/Santiago springs forward at Sat Sep 5 23:59:59 -04 → Sun Sep 6 01:00:00 -03,
        // so 2026-09-06 00:00 does not exist; the first instant after the gap is 04:00:00Z.
        let stamp = try Timestamp.parse("2026-09-06")
        let santiago = try Self.clock("America/Santiago")
        #expect(stamp.resolved(in: santiago).seconds == 1_788_667_200)
        #expect(try stamp.resolved(in: santiago).seconds == Self.foundationSeconds("2026-09-06T04:00:00Z"))
    }
}
