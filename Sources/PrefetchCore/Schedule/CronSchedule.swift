import Foundation

/// Evaluates a cron expression in a zone: the release instants before and after any moment.
///
/// DST follows SPEC §1 (as cronie does): a *fixed-time* expression fires once per matching
/// local time — a time skipped by a spring-forward fires at the first instant after the
/// gap, a repeated time fires at its first occurrence; a *periodic* expression fires at
/// every instant whose local time matches, so a gap makes nothing up and a repeated hour
/// fires twice.
public struct CronSchedule: Sendable {
    public let cron: CronExpression
    public let clock: ZoneClock

    /// Days searched before giving up: 41 years. When a day field begins with `*` both must
    /// match (`0 0 29 2 */7`: February 29th that is a Sunday), and such a day can be 40 years
    /// from the last (2088 → 2128, across the skipped leap day of 2100); a first day of a month
    /// on a weekday 12. Every expression the parser accepts fires within that.
    static let horizonDays: Int64 = 366 * 41

    public init(_ cron: CronExpression, clock: ZoneClock) {
        self.cron = cron
        self.clock = clock
    }

    /// The first release strictly after `instant`.
    public func next(after instant: Int64) -> Int64? {
        let startDay = LocalDay.containing(instant, clock: clock).number - 1
        for day in startDay...(startDay + Self.horizonDays) {
            if let hit = fires(onDay: day).first(where: { $0 > instant }) { return hit }
        }
        return nil
    }

    /// The last release at or before `instant`.
    public func previous(atOrBefore instant: Int64) -> Int64? {
        let startDay = LocalDay.containing(instant, clock: clock).number + 1
        var day = startDay
        while day >= startDay - Self.horizonDays {
            if let hit = fires(onDay: day).last(where: { $0 <= instant }) { return hit }
            day -= 1
        }
        return nil
    }

    /// The next `count` releases after `instant`.
    public func upcoming(after instant: Int64, count: Int) -> [Int64] {
        var out: [Int64] = []
        var cursor = instant
        while out.count < count, let hit = next(after: cursor) {
            out.append(hit)
            cursor = hit
        }
        return out
    }

    /// Whether the date fields select a local day (month, and the either-day rule).
    ///
    /// As Vixie cron does it (`DOM_STAR`/`DOW_STAR`): either day field matching fires only
    /// when both are restricted; when one begins with `*` both must match, so its step
    /// still applies (`0 12 */2 * 1` is Mondays that are odd days of the month).
    func matches(_ day: LocalDay) -> Bool {
        guard cron.months & (1 << UInt16(day.civil.month)) != 0 else { return false }
        let domHit = cron.daysOfMonth & (1 << UInt32(day.civil.day)) != 0
        let dowHit = cron.daysOfWeek & (1 << UInt8(day.weekday)) != 0
        if cron.dayOfMonthRestricted && cron.dayOfWeekRestricted { return domHit || dowHit }
        return domHit && dowHit
    }

    /// Every release on local day `number` (days since 1970-01-01), sorted.
    func fires(onDay number: Int64) -> [Int64] {
        let day = LocalDay(number: number)
        guard matches(day) else { return [] }
        var minutes: [Int] = []
        for hour in 0..<24 where cron.hours & (1 << UInt32(hour)) != 0 {
            for minute in 0..<60 where cron.minutes & (1 << UInt64(minute)) != 0 {
                minutes.append(hour * 60 + minute)
            }
        }
        let wallStart = number * 86_400
        // Fast path: one offset for the whole day and its neighbourhood.
        let offset = clock.offset(at: wallStart - clock.offset(at: wallStart))
        let dayStart = wallStart - offset
        if clock.offset(at: dayStart - 86_400) == offset && clock.offset(at: dayStart + 2 * 86_400) == offset,
           clock.zone.nextDaylightSavingTimeTransition(after: Date(timeIntervalSince1970: TimeInterval(dayStart - 86_400)))
            .map({ Int64($0.timeIntervalSince1970) > dayStart + 2 * 86_400 }) ?? true {
            return minutes.map { dayStart + Int64($0) * 60 }
        }
        var hits: [Int64] = []
        for minute in minutes {
            let local = CivilTime(year: day.civil.year, month: day.civil.month, day: day.civil.day,
                                  hour: minute / 60, minute: minute % 60)
            if cron.isPeriodic {
                hits += clock.instants(of: local)
            } else {
                hits.append(clock.resolve(local))
            }
        }
        hits.sort()
        var unique: [Int64] = []
        for hit in hits where unique.last != hit { unique.append(hit) }
        return unique
    }
}
