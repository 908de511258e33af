import Foundation
import FuzzCheck
import PrefetchCore

/// The cron parser (Values/CronExpression.swift) and its evaluation (Schedule/). The first
/// byte picks a zone and a moment, the rest is the expression. An expression accepted has
/// sets inside each field's range that fire at least once; listed out value by value it
/// parses to the same sets; its next release is later than the moment and is its own
/// previous one; in UTC (no DST) every release's time matches the fields, and nothing
/// between the moment and the next release does.
func fuzzCron(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let selector = input.first else { return 0 }
    let text = String(decoding: input.dropFirst(), as: UTF8.self)
    let cron: CronExpression
    do {
        cron = try CronExpression.parse(text)
    } catch {
        require(error.offset >= 0 && error.offset <= text.count, "cron error offset \(error.offset) outside \(text.debugDescription): \(error.message)")
        return 0
    }
    require(cron.source == text, "cron source \(cron.source.debugDescription) for \(text.debugDescription)")
    require(cron.minutes != 0 && cron.minutes >> 60 == 0, "minutes \(String(cron.minutes, radix: 2)) of \(text.debugDescription)")
    require(cron.hours != 0 && cron.hours >> 24 == 0, "hours of \(text.debugDescription)")
    require(cron.daysOfMonth != 0 && cron.daysOfMonth & 1 == 0, "days of month of \(text.debugDescription)")
    require(cron.months != 0 && cron.months & 1 == 0 && cron.months >> 13 == 0, "months of \(text.debugDescription)")
    require(cron.daysOfWeek != 0 && cron.daysOfWeek >> 7 == 0, "days of week of \(text.debugDescription)")

    // The same sets, listed value by value (the restricted flags kept by a leading '*/1').
    func list(_ bits: UInt64, _ range: ClosedRange<Int>, star: Bool) -> String {
        let values = range.filter { bits & (1 << UInt64($0)) != 0 }.map(String.init).joined(separator: ",")
        return star ? "*/1,\(values)" : values
    }
    let listed = [list(cron.minutes, 0...59, star: false), list(UInt64(cron.hours), 0...23, star: false),
                  list(UInt64(cron.daysOfMonth), 1...31, star: !cron.dayOfMonthRestricted),
                  list(UInt64(cron.months), 1...12, star: false),
                  list(UInt64(cron.daysOfWeek), 0...6, star: !cron.dayOfWeekRestricted)]
    if cron.dayOfMonthRestricted && cron.dayOfWeekRestricted {
        let again = try? CronExpression.parse(listed.joined(separator: " "))
        require(again.map { ($0.minutes, $0.hours, $0.daysOfMonth, $0.months, $0.daysOfWeek) == (cron.minutes, cron.hours, cron.daysOfMonth, cron.months, cron.daysOfWeek) } ?? false,
                "\(text.debugDescription) listed as \(listed.joined(separator: " ")) parses to other sets")
    }

    let zones = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"]
    let zone = TimeZone(identifier: zones[Int(selector) % zones.count])!
    let clock = ZoneClock(zone)
    // Moments near DST changes and a leap day: 2026-03-29 and 2026-10-25 in Europe, 2028-02-29.
    let moments: [Int64] = [1_774_746_000, 1_792_890_000, 1_835_395_200, 1_767_225_600]
    let moment = moments[Int(selector / 4) % moments.count] + Int64(selector) * 997
    let schedule = CronSchedule(cron, clock: clock)
    guard let next = schedule.next(after: moment) else {
        require(false, "\(text.debugDescription) never fires after \(moment) in \(zone.identifier)")
        return 0
    }
    require(next > moment, "\(text.debugDescription): next release \(next) not after \(moment)")
    require(schedule.previous(atOrBefore: next) == next, "\(text.debugDescription): the release \(next) is not its own previous one in \(zone.identifier)")
    if let previous = schedule.previous(atOrBefore: moment) {
        require(previous <= moment, "\(text.debugDescription): previous release \(previous) after \(moment)")
        require(schedule.next(after: previous) == next,
                "\(text.debugDescription): a release between \(previous) and \(next) is skipped")
    }
    guard zone.identifier == "UTC" else { return 0 }
    func fires(_ instant: Int64) -> Bool {
        let c = CivilTime(secondsAsUTC: instant)
        guard instant % 60 == 0, cron.minutes & (1 << UInt64(c.minute)) != 0, cron.hours & (1 << UInt32(c.hour)) != 0,
              cron.months & (1 << UInt16(c.month)) != 0 else { return false }
        let weekday = LocalDay.containing(instant, clock: clock).weekday
        let dom = cron.daysOfMonth & (1 << UInt32(c.day)) != 0, dow = cron.daysOfWeek & (1 << UInt8(weekday)) != 0
        return cron.dayOfMonthRestricted && cron.dayOfWeekRestricted ? dom || dow : dom && dow
    }
    require(fires(next), "\(text.debugDescription): next release \(TimeFormat.rfc3339(seconds: next, clock: clock)) does not match the fields")
    // Nothing fires in between (checked minute by minute over the first day).
    var minute = (moment / 60 + 1) * 60
    while minute < next && minute < moment + 86_400 {
        require(!fires(minute), "\(text.debugDescription): \(TimeFormat.rfc3339(seconds: minute, clock: clock)) matches but the next release is \(TimeFormat.rfc3339(seconds: next, clock: clock))")
        minute += 60
    }
    return 0
}
