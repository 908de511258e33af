import Foundation
import Testing
@testable import PrefetchCore

/// Cron evaluation in a zone, DST edges included.
@Suite struct CronScheduleTests {
    static func schedule(_ cron: String, _ zone: String) throws -> CronSchedule {
        CronSchedule(try CronExpression.parse(cron), clock: ZoneClock(TimeZone(identifier: zone)!))
    }

    /// `2026-03-29T01:00:00Z` → seconds since the epoch.
    static func utc(_ text: String) -> Int64 {
        guard case .instant(let instant) = try! Timestamp.parse(text) else { fatalError("not an instant: \(text)") }
        return instant.seconds
    }

    struct Example: Sendable, CustomTestStringConvertible {
        let cron: String, zone: String, after: String, expected: [String]
        var testDescription: String { "\(cron) in \(zone) after \(after)" }
    }

    @Test(arguments: [
        // Fixed time in a spring-forward gap: the first instant after the gap (03:00 CEST).
        Example(cron: "30 2 * * *", zone: "Europe/Berlin", after: "2026-03-28T12:00:00Z",
                expected: ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]),
        // Fixed time in an autumn repeat: the first occurrence only (02:30 CEST).
        Example(cron: "30 2 * * *", zone: "Europe/Berlin", after: "2026-10-24T12:00:00Z",
                expected: ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]),
        // Periodic across the repeat: every real half hour, the repeated hour twice.
        Example(cron: "*/30 * * * *", zone: "Europe/Berlin", after: "2026-10-24T23:45:00Z",
                expected: ["2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z",
                           "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z"]),
        // Periodic across the gap: nothing made up for 02:00 and 02:30.
        Example(cron: "*/30 * * * *", zone: "Europe/Berlin", after: "2026-03-29T00:15:00Z",
                expected: ["2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"]),
        // Two fixed times in one gap fire once, at its end.
        Example(cron: "0,30 2 * * *", zone: "Europe/Berlin", after: "2026-03-28T12:00:00Z",
                expected: ["2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"]),
        Example(cron: "30 2 * * *", zone: "America/New_York", after: "2026-03-07T12:00:00Z",
                expected: ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]),
        Example(cron: "30 1 * * *", zone: "America/New_York", after: "2026-10-31T12:00:00Z",
                expected: ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]),
        // Lord Howe moves by 30 minutes: 02:00 → 02:30 on 2026-10-04.
        Example(cron: "15 2 * * *", zone: "Australia/Lord_Howe", after: "2026-10-03T00:00:00Z",
                expected: ["2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"]),
        // and back 02:00 → 01:30 on 2026-04-05: 01:45 happens twice, fires at the first.
        Example(cron: "45 1 * * *", zone: "Australia/Lord_Howe", after: "2026-04-04T00:00:00Z",
                expected: ["2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"]),
        // Chatham: 02:45 → 03:45 on 2026-09-27.
        Example(cron: "0 3 * * *", zone: "Pacific/Chatham", after: "2026-09-26T00:00:00Z",
                expected: ["2026-09-26T14:00:00Z", "2026-09-27T13:15:00Z"]),
        // Either day field: the 1st of the month or any Monday.
        Example(cron: "0 12 1 * mon", zone: "UTC", after: "2026-11-29T00:00:00Z",
                expected: ["2026-11-30T12:00:00Z", "2026-12-01T12:00:00Z", "2026-12-07T12:00:00Z"]),
        // A day field beginning with '*' counts as unrestricted for the either-day rule, but its
        // step still applies (Vixie cron's DOM_STAR): both fields must match, so Mondays that
        // are odd days of the month (Nov 30 and Dec 14 are even; Dec 7 and 21 are odd).
        Example(cron: "0 12 */2 * mon", zone: "UTC", after: "2026-11-29T00:00:00Z",
                expected: ["2026-12-07T12:00:00Z", "2026-12-21T12:00:00Z", "2027-01-11T12:00:00Z"]),
        Example(cron: "0 12 */2 * 1", zone: "UTC", after: "2026-11-29T00:00:00Z",
                expected: ["2026-12-07T12:00:00Z", "2026-12-21T12:00:00Z", "2027-01-11T12:00:00Z"]),
        // The same the other way round: odd days of the month that are Sundays, Tuesdays,
        // Thursdays or Saturdays (`*/2` in the day-of-week field).
        Example(cron: "0 12 1-7 * */2", zone: "UTC", after: "2026-11-29T00:00:00Z",
                expected: ["2026-12-01T12:00:00Z", "2026-12-03T12:00:00Z", "2026-12-05T12:00:00Z", "2026-12-06T12:00:00Z"]),
        Example(cron: "0 0 29 2 *", zone: "UTC", after: "2026-01-01T00:00:00Z", expected: ["2028-02-29T00:00:00Z"]),
        Example(cron: "@hourly", zone: "Asia/Kolkata", after: "2026-11-29T10:10:00Z",
                expected: ["2026-11-29T10:30:00Z", "2026-11-29T11:30:00Z"]),
    ])
    func nextReleases(_ example: Example) throws {
        let schedule = try Self.schedule(example.cron, example.zone)
        let got = schedule.upcoming(after: Self.utc(example.after), count: example.expected.count)
        #expect(got == example.expected.map(Self.utc))
    }

    @Test func previousIsTheInverseOfNext() throws {
        let schedule = try Self.schedule("30 2 * * *", "Europe/Berlin")
        let release = Self.utc("2026-03-29T01:00:00Z")
        #expect(schedule.previous(atOrBefore: release) == release)
        #expect(schedule.previous(atOrBefore: release - 1) == Self.utc("2026-03-28T01:30:00Z"))
        #expect(schedule.previous(atOrBefore: release + 80_000) == release)  // before the next 02:30
        let yearly = try Self.schedule("@yearly", "UTC")
        #expect(yearly.previous(atOrBefore: Self.utc("2026-11-29T00:00:00Z")) == Self.utc("2026-01-01T00:00:00Z"))
    }

    // MARK: - Brute force

    static let bruteForceSchedules = [
        "30 2 * * *", "0,30 1-3 * * *", "*/15 * * * *", "@hourly", "*/20 2 * * 0", "15 2 1 * sun",
        "45 1,2 * * *", "0 3 * * 1-5", "5 */2 * * *", "0 12 */2 * 1", "30 4 1-10 * */3", "0 0 */5 * sat",
    ]

    /// A reference evaluator that walks every minute of a year in real time and applies
    /// SPEC §1 literally: periodic schedules fire when the local time matches; fixed-time
    /// schedules fire once per matching local time, skipped times at the end of the gap.
    static func reference(_ cron: CronExpression, zone: TimeZone, from start: Int64, to end: Int64) -> [Int64] {
        func matches(_ local: Int64) -> Bool {
            let c = CivilTime(secondsAsUTC: local)
            let weekday = Int((((local >= 0 ? local / 86_400 : (local - 86_399) / 86_400) + 4) % 7 + 7) % 7)
            guard cron.minutes & (1 << UInt64(c.minute)) != 0, cron.hours & (1 << UInt32(c.hour)) != 0,
                  cron.months & (1 << UInt16(c.month)) != 0 else { return false }
            let dom = cron.daysOfMonth & (1 << UInt32(c.day)) != 0
            let dow = cron.daysOfWeek & (1 << UInt8(weekday)) != 0
            // Vixie cron: OR only when neither day field begins with '*'; else both must match.
            if cron.dayOfMonthRestricted && cron.dayOfWeekRestricted { return dom || dow }
            return dom && dow
        }
        func local(_ t: Int64) -> Int64 { t + Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(t)))) }
        var fires: [Int64] = []
        var seen = Set<Int64>()
        var previous = local(start - 60)
        var t = start
        while t < end {
            let now = local(t)
            if cron.isPeriodic {
                if matches(now) { fires.append(t) }
            } else {
                var candidates: [Int64] = []
                var skipped = previous + 60
                while skipped < now { candidates.append(skipped); skipped += 60 }  // a gap
                candidates.append(now)
                var fire = false
                for candidate in candidates where !seen.contains(candidate) {
                    seen.insert(candidate)
                    if matches(candidate) { fire = true }
                }
                if fire { fires.append(t) }
            }
            previous = now
            t += 60
        }
        return fires
    }

    @Test(arguments: ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Pacific/Chatham"])
    func matchesBruteForceOverAYear(_ zoneName: String) throws {
        let zone = TimeZone(identifier: zoneName)!
        let start = Self.utc("2026-01-01T00:00:00Z")
        let end = Self.utc("2027-01-01T00:00:00Z")
        for text in Self.bruteForceSchedules {
            let cron = try CronExpression.parse(text)
            let expected = Self.reference(cron, zone: zone, from: start, to: end)
            let schedule = CronSchedule(cron, clock: ZoneClock(zone))
            var got: [Int64] = []
            var cursor = start - 1
            while let hit = schedule.next(after: cursor), hit < end {
                got.append(hit)
                cursor = hit
            }
            #expect(got.count == expected.count, "\(text) in \(zoneName)")
            if let mismatch = zip(got, expected).first(where: { $0 != $1 }) {
                Issue.record("\(text) in \(zoneName): first difference got \(mismatch.0), expected \(mismatch.1)")
            }
            // previous(atOrBefore:) agrees at every release and just before it.
            for hit in expected.prefix(200) {
                #expect(schedule.previous(atOrBefore: hit) == hit)
            }
        }
    }
}
