/// A manifest time: an RFC 3339 instant, or a bare date meaning midnight in the feed's zone.
public enum Timestamp: Sendable, Hashable {
    /// An exact instant (fractions of a second kept).
    case instant(Instant)
    /// A date whose midnight is taken in the feed's zone.
    case localDate(CivilTime)

    /// Parses `2026-12-01T00:00:00Z`, `2026-12-01T01:00:00+01:00` (fractions of a second
    /// are kept to the nanosecond; further digits are dropped) or a bare `2026-12-01`.
    public static func parse(_ text: String) throws(ValueError) -> Timestamp {
        let c = Array(text.utf8)
        func digits(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= c.count else { return nil }
            var value = 0
            for i in range {
                guard c[i] >= 48, c[i] <= 57 else { return nil }
                value = value * 10 + Int(c[i] - 48)
            }
            return value
        }
        let form = "expected an RFC 3339 time such as 2026-12-01T00:00:00Z, or a date such as 2026-12-01"
        guard let year = digits(0..<4), c.count >= 10, c[4] == 45, let month = digits(5..<7), c[7] == 45,
              let day = digits(8..<10) else { throw ValueError(form) }
        guard (1...12).contains(month) else { throw ValueError("month \(month) is out of range", at: 5) }
        guard (1...CivilTime.daysIn(month: month, year: year)).contains(day) else {
            throw ValueError("day \(day) does not exist in that month", at: 8)
        }
        if c.count == 10 { return .localDate(CivilTime(year: year, month: month, day: day)) }
        guard c[10] == UInt8(ascii: "T") || c[10] == UInt8(ascii: "t") || c[10] == UInt8(ascii: " "),
              let hour = digits(11..<13), c.count > 13, c[13] == 58, let minute = digits(14..<16),
              c.count > 16, c[16] == 58, let second = digits(17..<19) else { throw ValueError(form) }
        guard hour < 24 else { throw ValueError("hour \(hour) is out of range", at: 11) }
        guard minute < 60 else { throw ValueError("minute \(minute) is out of range", at: 14) }
        guard second < 61 else { throw ValueError("second \(second) is out of range", at: 17) }
        var index = 19
        var nanoseconds: Int64 = 0
        if index < c.count, c[index] == 46 {
            index += 1
            let start = index
            var scale: Int64 = 100_000_000
            while index < c.count, c[index] >= 48, c[index] <= 57 {
                nanoseconds += Int64(c[index] - 48) * scale
                scale /= 10
                index += 1
            }
            if index == start { throw ValueError("expected digits after '.'", at: index) }
        }
        guard index < c.count else {
            throw ValueError("a time needs a zone: add Z or an offset such as +01:00", at: index)
        }
        var offset = 0
        if c[index] == UInt8(ascii: "Z") || c[index] == UInt8(ascii: "z") {
            index += 1
        } else if c[index] == 43 || c[index] == 45, let oh = digits(index + 1..<index + 3),
                  index + 3 < c.count, c[index + 3] == 58, let om = digits(index + 4..<index + 6), oh < 24, om < 60 {
            offset = (oh * 3600 + om * 60) * (c[index] == 45 ? -1 : 1)
            index += 6
        } else {
            throw ValueError("expected Z or an offset such as +01:00", at: index)
        }
        guard index == c.count else { throw ValueError("unexpected text after the time", at: index) }
        let civil = CivilTime(year: year, month: month, day: day, hour: hour, minute: minute, second: min(second, 59))
        return .instant(Instant(seconds: civil.secondsAsUTC - Int64(offset)).advanced(byNanoseconds: nanoseconds))
    }

    /// The instant, with a bare date resolved to midnight in `clock`'s zone.
    public func resolved(in clock: ZoneClock) -> Instant {
        switch self {
        case .instant(let instant): return instant
        case .localDate(let date): return Instant(seconds: clock.resolve(date))
        }
    }
}
