import Foundation
import Testing
@testable import PrefetchCore

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
