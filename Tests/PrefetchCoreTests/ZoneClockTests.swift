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

    /// Times as `TimeFormat` wrote them with string interpolation and one zone question per
    /// offset: the reference the byte writer and the offset cache are checked against.
    static func localReference(_ instant: Int64, clock: ZoneClock, withUTC: Bool) -> String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        func offsetText(_ seconds: Int64) -> String {
            let magnitude = Int(abs(seconds))
            return (seconds < 0 ? "-" : "+") + two(magnitude / 3600) + ":" + two(magnitude % 3600 / 60)
        }
        let offset = clock.offset(at: instant)
        let c = CivilTime(secondsAsUTC: instant + offset)
        let name = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][LocalDay.containing(instant, clock: clock).weekday]
        var text = "\(name) \(c.year)-\(two(c.month))-\(two(c.day)) \(two(c.hour)):\(two(c.minute))"
        if c.second != 0 { text += ":\(two(c.second))" }
        text += " " + offsetText(offset)
        if withUTC {
            let u = CivilTime(secondsAsUTC: instant)
            text += " (" + (u.day != c.day ? "\(two(u.month))-\(two(u.day)) " : "") + "\(two(u.hour)):\(two(u.minute)) UTC)"
        }
        return text
    }

    static func rfc3339Reference(_ instant: Int64, clock: ZoneClock) -> String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let offset = clock.offset(at: instant)
        let c = CivilTime(secondsAsUTC: instant + offset)
        let magnitude = Int(abs(offset))
        return "\(c.year)-\(two(c.month))-\(two(c.day))T\(two(c.hour)):\(two(c.minute)):\(two(c.second))"
            + (offset < 0 ? "-" : "+") + two(magnitude / 3600) + ":" + two(magnitude % 3600 / 60)
    }

    /// A plan's thousands of times, formatted with one `ZoneOffsets` per zone as the plan
    /// does, read as one zone question each gave them: in zones with DST both ways, half
    /// hours (Lord Howe, Adelaide), 45 minutes (Chatham), none (Kolkata, UTC), a negative
    /// offset (New York), over runs of instants that step across transitions (forwards, in
    /// small and large steps, and back), over every year an `Instant` holds. `PREFETCH_TIMES_SEED` replays a seed.
    @Test func timesWithCachedOffsetsReadAsBefore() throws {
        let seed = ProcessInfo.processInfo.environment["PREFETCH_TIMES_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64(UInt32.max))
        print("ZoneClockTests: PREFETCH_TIMES_SEED=\(seed)")
        var random = SplitMix64(seed: seed)
        let zones = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Australia/Adelaide", "Pacific/Chatham", "Asia/Kolkata",
                     "UTC", "Africa/Casablanca", "America/Sao_Paulo"]
        for name in zones {
            let clock = ZoneClock(try #require(TimeZone(identifier: name)))
            var offsets = ZoneOffsets(clock)
            var instant = Self.utc("2026-03-01T00:00:00Z") + Int64(random.next() % (400 * 86_400))
            for step in 0..<1500 {
                switch random.next() % 10 {
                case 0: instant -= Int64(random.next() % 200_000)  // back
                case 1: instant += Int64(random.next() % 20_000_000)  // far ahead
                case 2: instant = Int64(random.next() % 18_000_000_000) - 9_000_000_000  // any year an Instant holds (1684 to 2255)
                default: instant += Int64(random.next() % 7200)
                }
                instant = min(max(instant, -9_000_000_000), 9_000_000_000)
                let withUTC = random.next() % 2 == 0
                #expect(TimeFormat.local(Instant(seconds: instant), offsets: &offsets, withUTC: withUTC)
                        == Self.localReference(instant, clock: clock, withUTC: withUTC), "seed \(seed), \(name), step \(step), \(instant)")
                #expect(TimeFormat.rfc3339(Instant(seconds: instant), offsets: &offsets) == Self.rfc3339Reference(instant, clock: clock),
                        "seed \(seed), \(name), step \(step), \(instant)")
                #expect(TimeFormat.local(Instant(seconds: instant), clock: clock, withUTC: withUTC)
                        == Self.localReference(instant, clock: clock, withUTC: withUTC), "seed \(seed), \(name), step \(step), \(instant)")
            }
        }
    }
}
