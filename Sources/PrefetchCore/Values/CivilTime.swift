import Foundation

/// A calendar date and wall-clock time with no zone attached.
public struct CivilTime: Sendable, Hashable {
    public var year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int

    /// Creates a civil time; fields are not checked.
    public init(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) {
        self.year = year; self.month = month; self.day = day
        self.hour = hour; self.minute = minute; self.second = second
    }

    /// Days since 1970-01-01 of this date in the proleptic Gregorian calendar
    /// (Howard Hinnant's `days_from_civil`).
    public var daysSinceEpoch: Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let m = Int64(month)
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Seconds since the epoch if this wall-clock time were UTC.
    public var secondsAsUTC: Int64 {
        daysSinceEpoch * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// Number of days in a month of a year.
    public static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// The civil time of `seconds` since the epoch, read as UTC.
    public init(secondsAsUTC seconds: Int64) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rest = Int(seconds - days * 86_400)
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        self.init(year: Int(yoe + era * 400 + (m <= 2 ? 1 : 0)), month: Int(m), day: Int(d),
                  hour: rest / 3600, minute: rest % 3600 / 60, second: rest % 60)
    }
}

/// Maps wall-clock times in a zone to instants, with SPEC §1's rule for DST edges:
/// a time that a spring-forward skips becomes the first instant after the gap; a time
/// that a fall-back repeats becomes its first occurrence.
public struct ZoneClock: Sendable {
    /// The zone.
    public let zone: TimeZone

    /// Wraps a zone.
    public init(_ zone: TimeZone) {
        self.zone = zone
    }

    /// The UTC offset in seconds in force at `instant` (seconds since the epoch).
    public func offset(at instant: Int64) -> Int64 {
        Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(instant))))
    }

    /// Every instant whose local time in the zone is `local` (0, 1 or 2 of them), earliest first.
    public func instants(of local: CivilTime) -> [Int64] {
        let wall = local.secondsAsUTC
        // Offsets in force within a day either side cover every transition that can apply.
        var candidates: [Int64] = []
        for probe in [wall - 86_400, wall, wall + 86_400] {
            let offset = self.offset(at: probe)
            let instant = wall - offset
            if self.offset(at: instant) == offset, !candidates.contains(instant) {
                candidates.append(instant)
            }
        }
        return candidates.sorted()
    }

    /// The instant for `local` under the fixed-time rule (gap → end of gap, repeat → first).
    public func resolve(_ local: CivilTime) -> Int64 {
        if let first = instants(of: local).first { return first }
        // In a gap: the transition instant lies between the reading with the offset
        // before the gap (too late) and the one with the offset after it (too early).
        let wall = local.secondsAsUTC
        var low = wall - offset(at: wall + 86_400)   // offset after the gap: earlier instant
        var high = wall - offset(at: wall - 86_400)  // offset before the gap: later instant
        if low > high { swap(&low, &high) }
        let before = offset(at: low)
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if offset(at: middle) == before { low = middle } else { high = middle }
        }
        return high
    }

    /// The local civil time at `instant`.
    public func civil(at instant: Int64) -> CivilTime {
        CivilTime(secondsAsUTC: instant + offset(at: instant))
    }
}

/// A calendar day in local time, numbered as days since 1970-01-01.
public struct LocalDay: Sendable, Hashable {
    public let number: Int64
    public let civil: CivilTime

    public init(number: Int64) {
        self.number = number
        self.civil = CivilTime(secondsAsUTC: number * 86_400)
    }

    /// 0 = Sunday … 6 = Saturday (1970-01-01 was a Thursday).
    public var weekday: Int { Int(((number + 4) % 7 + 7) % 7) }

    /// The local day that `instant` falls on in `clock`'s zone.
    public static func containing(_ instant: Int64, clock: ZoneClock) -> LocalDay {
        let local = instant + clock.offset(at: instant)
        let number = local >= 0 ? local / 86_400 : (local - 86_399) / 86_400
        return LocalDay(number: number)
    }

    /// The instant of a wall-clock minute of this day (or of a later day, for minutes past
    /// 1440), by the fixed-time rule.
    public func instant(minute: Int, clock: ZoneClock) -> Int64 {
        let target = LocalDay(number: number + Int64(minute / 1440))
        let m = minute % 1440
        return clock.resolve(CivilTime(year: target.civil.year, month: target.civil.month, day: target.civil.day,
                                       hour: m / 60, minute: m % 60))
    }
}

extension LocalDay {
    /// `YYYY-MM-DD` of `instant` in the zone: the day metered budgets count in.
    public static func label(_ instant: Instant, clock: ZoneClock) -> String {
        let c = clock.civil(at: instant.seconds)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(c.year)-\(two(c.month))-\(two(c.day))"
    }
}
