import Foundation
import Testing
@testable import PrefetchCore

/// Local times ↔ instants around DST changes (SPEC §1 "DST"): a time in a spring-forward
/// gap resolves to the first instant after the gap; a repeated time to its first occurrence.
/// Transition times below were read with `zdump -v ZONE | grep 2026`.
@Suite struct ZoneClockTests {
    /// Seconds since the epoch of an RFC 3339 text, read by Foundation (not by the code under test).
    static func utc(_ text: String) -> Int64 {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        guard let date = formatter.date(from: text) else { fatalError("bad test timestamp \(text)") }
        return Int64(date.timeIntervalSince1970)
    }

    static func clock(_ identifier: String) throws -> ZoneClock {
        ZoneClock(try #require(TimeZone(identifier: identifier)))
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let zone: String
        let local: CivilTime
        /// Every instant with that local time, as RFC 3339 UTC.
        let instants: [String]
        /// What the fixed-time rule resolves it to.
        let resolved: String
        let note: String
        var testDescription: String {
            "\(zone) \(local.year)-\(local.month)-\(local.day) \(local.hour):\(local.minute):\(local.second) (\(note))"
        }
    }

    static func at(_ y: Int, _ mo: Int, _ d: Int, _ h: Int, _ mi: Int, _ s: Int = 0) -> CivilTime {
        CivilTime(year: y, month: mo, day: d, hour: h, minute: mi, second: s)
    }

    static let cases: [Case] = [
        // Europe/Berlin: 2026-03-29 01:59:59 CET → 03:00:00 CEST; 2026-10-25 02:59:59 CEST → 02:00:00 CET.
        Case(zone: "Europe/Berlin", local: at(2026, 7, 1, 12, 0), instants: ["2026-07-01T10:00:00Z"],
             resolved: "2026-07-01T10:00:00Z", note: "summer"),
        Case(zone: "Europe/Berlin", local: at(2026, 1, 15, 12, 0), instants: ["2026-01-15T11:00:00Z"],
             resolved: "2026-01-15T11:00:00Z", note: "winter"),
        Case(zone: "Europe/Berlin", local: at(2026, 3, 29, 1, 59, 59), instants: ["2026-03-29T00:59:59Z"],
             resolved: "2026-03-29T00:59:59Z", note: "last second before the gap"),
        Case(zone: "Europe/Berlin", local: at(2026, 3, 29, 2, 0), instants: [],
             resolved: "2026-03-29T01:00:00Z", note: "gap start"),
        Case(zone: "Europe/Berlin", local: at(2026, 3, 29, 2, 30), instants: [],
             resolved: "2026-03-29T01:00:00Z", note: "gap: 03:00 CEST"),
        Case(zone: "Europe/Berlin", local: at(2026, 3, 29, 2, 59, 59), instants: [],
             resolved: "2026-03-29T01:00:00Z", note: "gap end"),
        Case(zone: "Europe/Berlin", local: at(2026, 3, 29, 3, 0), instants: ["2026-03-29T01:00:00Z"],
             resolved: "2026-03-29T01:00:00Z", note: "first time after the gap"),
        Case(zone: "Europe/Berlin", local: at(2026, 10, 25, 1, 59, 59), instants: ["2026-10-24T23:59:59Z"],
             resolved: "2026-10-24T23:59:59Z", note: "before the repeat"),
        Case(zone: "Europe/Berlin", local: at(2026, 10, 25, 2, 0), instants: ["2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z"],
             resolved: "2026-10-25T00:00:00Z", note: "repeat start"),
        Case(zone: "Europe/Berlin", local: at(2026, 10, 25, 2, 30), instants: ["2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"],
             resolved: "2026-10-25T00:30:00Z", note: "repeated"),
        Case(zone: "Europe/Berlin", local: at(2026, 10, 25, 3, 0), instants: ["2026-10-25T02:00:00Z"],
             resolved: "2026-10-25T02:00:00Z", note: "after the repeat"),
        // America/New_York: 2026-03-08 01:59:59 EST → 03:00 EDT; 2026-11-01 01:59:59 EDT → 01:00 EST.
        Case(zone: "America/New_York", local: at(2026, 3, 8, 2, 30), instants: [],
             resolved: "2026-03-08T07:00:00Z", note: "gap"),
        Case(zone: "America/New_York", local: at(2026, 3, 8, 1, 30), instants: ["2026-03-08T06:30:00Z"],
             resolved: "2026-03-08T06:30:00Z", note: "before the gap"),
        Case(zone: "America/New_York", local: at(2026, 11, 1, 1, 30), instants: ["2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z"],
             resolved: "2026-11-01T05:30:00Z", note: "repeated"),
        Case(zone: "America/New_York", local: at(2026, 11, 1, 2, 0), instants: ["2026-11-01T07:00:00Z"],
             resolved: "2026-11-01T07:00:00Z", note: "after the repeat"),
        // Australia/Lord_Howe (30-minute shift): 2026-04-05 01:59:59 +11 → 01:30 +1030;
        // 2026-10-04 01:59:59 +1030 → 02:30 +11.
        Case(zone: "Australia/Lord_Howe", local: at(2026, 4, 5, 1, 45), instants: ["2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z"],
             resolved: "2026-04-04T14:45:00Z", note: "repeated half hour"),
        Case(zone: "Australia/Lord_Howe", local: at(2026, 4, 5, 1, 29), instants: ["2026-04-04T14:29:00Z"],
             resolved: "2026-04-04T14:29:00Z", note: "before the repeat"),
        Case(zone: "Australia/Lord_Howe", local: at(2026, 4, 5, 2, 0), instants: ["2026-04-04T15:30:00Z"],
             resolved: "2026-04-04T15:30:00Z", note: "after the repeat"),
        Case(zone: "Australia/Lord_Howe", local: at(2026, 10, 4, 2, 15), instants: [],
             resolved: "2026-10-03T15:30:00Z", note: "half-hour gap"),
        Case(zone: "Australia/Lord_Howe", local: at(2026, 10, 4, 2, 30), instants: ["2026-10-03T15:30:00Z"],
             resolved: "2026-10-03T15:30:00Z", note: "end of the gap"),
        // Pacific/Chatham (+12:45/+13:45): 2026-04-05 03:44:59 +1345 → 02:45 +1245;
        // 2026-09-27 02:44:59 +1245 → 03:45 +1345.
        Case(zone: "Pacific/Chatham", local: at(2026, 4, 5, 3, 0), instants: ["2026-04-04T13:15:00Z", "2026-04-04T14:15:00Z"],
             resolved: "2026-04-04T13:15:00Z", note: "repeated"),
        Case(zone: "Pacific/Chatham", local: at(2026, 9, 27, 3, 0), instants: [],
             resolved: "2026-09-26T14:00:00Z", note: "gap"),
        Case(zone: "Pacific/Chatham", local: at(2026, 9, 27, 2, 44), instants: ["2026-09-26T13:59:00Z"],
             resolved: "2026-09-26T13:59:00Z", note: "before the gap"),
        // America/Santiago: midnight itself is skipped (2026-09-05 23:59:59 -04 → 2026-09-06 01:00 -03)
        // and the hour before midnight repeats (2026-04-04 23:59:59 -03 → 23:00 -04).
        Case(zone: "America/Santiago", local: at(2026, 9, 6, 0, 0), instants: [],
             resolved: "2026-09-06T04:00:00Z", note: "midnight in the gap"),
        Case(zone: "America/Santiago", local: at(2026, 9, 6, 0, 30), instants: [],
             resolved: "2026-09-06T04:00:00Z", note: "gap"),
        Case(zone: "America/Santiago", local: at(2026, 4, 4, 23, 30), instants: ["2026-04-05T02:30:00Z", "2026-04-05T03:30:00Z"],
             resolved: "2026-04-05T02:30:00Z", note: "repeated"),
        // A zone without DST.
        Case(zone: "UTC", local: at(2026, 3, 29, 2, 30), instants: ["2026-03-29T02:30:00Z"],
             resolved: "2026-03-29T02:30:00Z", note: "no DST"),
        Case(zone: "Asia/Kolkata", local: at(2026, 3, 29, 2, 30), instants: ["2026-03-28T21:00:00Z"],
             resolved: "2026-03-28T21:00:00Z", note: "+05:30"),
    ]

    @Test(arguments: cases)
    func instantsAndResolve(_ c: Case) throws {
        let clock = try Self.clock(c.zone)
        #expect(clock.instants(of: c.local) == c.instants.map(Self.utc))
        #expect(clock.resolve(c.local) == Self.utc(c.resolved))
    }

    @Test func constantsAgreeWithZdump() {
        // Guards the helper: `date -u -d 2026-03-29T01:00:00Z +%s`.
        #expect(Self.utc("2026-03-29T01:00:00Z") == 1_774_746_000)
        #expect(Self.utc("2026-10-25T00:30:00Z") == 1_792_888_200)
    }

    struct Offset: CustomTestStringConvertible, Sendable {
        let zone: String
        let instant: String
        let seconds: Int64
        var testDescription: String { "\(zone) at \(instant)" }
    }

    static let offsets: [Offset] = [
        Offset(zone: "Europe/Berlin", instant: "2026-03-29T00:59:59Z", seconds: 3_600),
        Offset(zone: "Europe/Berlin", instant: "2026-03-29T01:00:00Z", seconds: 7_200),
        Offset(zone: "Australia/Lord_Howe", instant: "2026-04-04T14:59:59Z", seconds: 39_600),
        Offset(zone: "Australia/Lord_Howe", instant: "2026-04-04T15:00:00Z", seconds: 37_800),
        Offset(zone: "Pacific/Chatham", instant: "2026-09-26T13:59:59Z", seconds: 45_900),
        Offset(zone: "Pacific/Chatham", instant: "2026-09-26T14:00:00Z", seconds: 49_500),
        Offset(zone: "America/Santiago", instant: "2026-09-06T04:00:00Z", seconds: -10_800),
        Offset(zone: "America/Santiago", instant: "2026-09-06T03:59:59Z", seconds: -14_400),
    ]

    @Test(arguments: offsets)
    func offsetAtAnInstant(_ c: Offset) throws {
        #expect(try Self.clock(c.zone).offset(at: Self.utc(c.instant)) == c.seconds)
    }

    @Test func civilAtAnInstant() throws {
        let berlin = try Self.clock("Europe/Berlin")
        #expect(berlin.civil(at: Self.utc("2026-03-29T00:59:59Z")) == Self.at(2026, 3, 29, 1, 59, 59))
        #expect(berlin.civil(at: Self.utc("2026-03-29T01:00:00Z")) == Self.at(2026, 3, 29, 3, 0))
        #expect(berlin.civil(at: Self.utc("2026-10-25T00:30:00Z")) == Self.at(2026, 10, 25, 2, 30))
        #expect(berlin.civil(at: Self.utc("2026-10-25T01:30:00Z")) == Self.at(2026, 10, 25, 2, 30))
        let lordHowe = try Self.clock("Australia/Lord_Howe")
        #expect(lordHowe.civil(at: Self.utc("2026-04-04T15:00:00Z")) == Self.at(2026, 4, 5, 1, 30))
        let chatham = try Self.clock("Pacific/Chatham")
        #expect(chatham.civil(at: Self.utc("2026-09-26T14:00:00Z")) == Self.at(2026, 9, 27, 3, 45))
    }

    /// Every instant, every 5 minutes for two days around each 2026 transition, maps to a
    /// local time whose instants include it; outside a repeat it is the only one. `repeats`
    /// counts the instants whose local time occurs twice (5-minute steps: 12 per repeated hour).
    @Test(arguments: [("Europe/Berlin", "2026-03-28T12:00:00Z", 0), ("Europe/Berlin", "2026-10-24T12:00:00Z", 24),
                      ("America/New_York", "2026-03-07T12:00:00Z", 0), ("America/New_York", "2026-10-31T12:00:00Z", 24),
                      ("Australia/Lord_Howe", "2026-04-04T00:00:00Z", 12), ("Australia/Lord_Howe", "2026-10-03T00:00:00Z", 0),
                      ("Pacific/Chatham", "2026-04-04T00:00:00Z", 24), ("Pacific/Chatham", "2026-09-26T00:00:00Z", 0),
                      ("America/Santiago", "2026-04-04T12:00:00Z", 24), ("America/Santiago", "2026-09-05T12:00:00Z", 0)])
    func civilRoundTrips(_ zone: String, _ from: String, _ repeats: Int) throws {
        let clock = try Self.clock(zone)
        let start = Self.utc(from)
        var repeated = 0
        for instant in stride(from: start, to: start + 2 * 86_400, by: 300) {
            let local = clock.civil(at: instant)
            let found = clock.instants(of: local)
            #expect(found.contains(instant), "\(zone) \(instant) → \(local)")
            if found.count == 2 {
                repeated += 1
                #expect(clock.resolve(local) == found[0])
                #expect(found[1] - found[0] == (zone == "Australia/Lord_Howe" ? 1_800 : 3_600))
            } else {
                #expect(found == [instant])
                #expect(clock.resolve(local) == instant)
            }
        }
        #expect(repeated == repeats)
    }
}

/// Proleptic Gregorian date arithmetic behind every zone computation.
@Suite struct CivilTimeTests {
    // Expected values from Python's `(date(y, m, d) - date(1970, 1, 1)).days` and `date -u -d DATE +%s`.
    @Test(arguments: [(1970, 1, 1, Int64(0)), (1969, 12, 31, -1), (2000, 2, 29, 11_016), (2026, 12, 1, 20_788),
                      (1900, 3, 1, -25_508), (1600, 2, 29, -135_081), (1600, 3, 1, -135_080),
                      (1582, 10, 15, -141_427), (1582, 10, 4, -141_438), (2100, 3, 1, 47_541), (2400, 2, 29, 157_113),
                      (1, 1, 1, -719_162), (0, 3, 1, -719_468), (0, 1, 1, -719_528), (-1, 12, 31, -719_529),
                      (9999, 12, 31, 2_932_896)])
    func daysSinceEpoch(_ year: Int, _ month: Int, _ day: Int, _ days: Int64) {
        let date = CivilTime(year: year, month: month, day: day)
        #expect(date.daysSinceEpoch == days)
        #expect(CivilTime(secondsAsUTC: days * 86_400) == date)
    }

    static let utcTimes: [(Int64, CivilTime)] = [
        (0, CivilTime(year: 1970, month: 1, day: 1)),
        (-1, CivilTime(year: 1969, month: 12, day: 31, hour: 23, minute: 59, second: 59)),
        (-86_400, CivilTime(year: 1969, month: 12, day: 31)),
        (-86_401, CivilTime(year: 1969, month: 12, day: 30, hour: 23, minute: 59, second: 59)),
        (1_796_083_200, CivilTime(year: 2026, month: 12, day: 1)),
        (1_709_210_096, CivilTime(year: 2024, month: 2, day: 29, hour: 12, minute: 34, second: 56)),
        (-14_182_940, CivilTime(year: 1969, month: 7, day: 20, hour: 20, minute: 17, second: 40)),
        (2_147_483_648, CivilTime(year: 2038, month: 1, day: 19, hour: 3, minute: 14, second: 8)),
    ]

    @Test(arguments: utcTimes)
    func secondsAsUTC(_ seconds: Int64, _ civil: CivilTime) {
        #expect(CivilTime(secondsAsUTC: seconds) == civil)
        #expect(civil.secondsAsUTC == seconds)
    }

    static func isLeap(_ year: Int) -> Bool { (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 }

    @Test(arguments: [(1900, 2, 28), (2000, 2, 29), (2024, 2, 29), (2026, 2, 28), (2100, 2, 28), (0, 2, 29),
                      (-4, 2, 29), (-100, 2, 28), (-400, 2, 29), (2026, 1, 31), (2026, 4, 30), (2026, 6, 30),
                      (2026, 9, 30), (2026, 11, 30), (2026, 12, 31), (2026, 7, 31), (2026, 8, 31)])
    func daysInMonth(_ year: Int, _ month: Int, _ days: Int) {
        #expect(CivilTime.daysIn(month: month, year: year) == days)
    }

    /// Walks day by day from 1599-12-01 to 2401-01-31 with an independent calendar,
    /// checking both directions for each day.
    @Test func dayByDayWalk() {
        var (year, month, day) = (1599, 12, 1)
        var expected = CivilTime(year: year, month: month, day: day).daysSinceEpoch
        #expect(expected == -135_171)  // Python: (date(1599, 12, 1) - date(1970, 1, 1)).days
        var wrong: [String] = []
        while year < 2401 || month < 2 {
            let date = CivilTime(year: year, month: month, day: day)
            if date.daysSinceEpoch != expected { wrong.append("\(year)-\(month)-\(day) → \(date.daysSinceEpoch)") }
            let noon = CivilTime(year: year, month: month, day: day, hour: 12, minute: 34, second: 56)
            if CivilTime(secondsAsUTC: expected * 86_400 + 45_296) != noon { wrong.append("day \(expected) ≠ \(noon)") }
            let length = month == 2 ? (Self.isLeap(year) ? 29 : 28) : [4, 6, 9, 11].contains(month) ? 30 : 31
            day += 1
            if day > length { day = 1; month += 1 }
            if month > 12 { month = 1; year += 1 }
            expected += 1
        }
        #expect(expected == 157_451)  // Python: (date(2401, 2, 1) - date(1970, 1, 1)).days
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
    }

    /// Round trips over ±2,700 years, including negative years and every second-of-day edge.
    @Test(arguments: [Int64(0), 1, 59, 3_599, 43_200, 86_399])
    func roundTripsAcrossEras(_ secondOfDay: Int64) {
        var wrong: [String] = []
        for days in stride(from: Int64(-1_700_000), through: 1_700_000, by: 997) {
            let seconds = days * 86_400 + secondOfDay
            let civil = CivilTime(secondsAsUTC: seconds)
            let valid = civil.secondsAsUTC == seconds && civil.daysSinceEpoch == days
                && (1...12).contains(civil.month)
                && (1...CivilTime.daysIn(month: civil.month, year: civil.year)).contains(civil.day)
                && civil.hour * 3_600 + civil.minute * 60 + civil.second == Int(secondOfDay)
            if !valid { wrong.append("\(seconds) → \(civil)") }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
    }
}
