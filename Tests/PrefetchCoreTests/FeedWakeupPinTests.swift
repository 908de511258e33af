import Foundation
import Testing
@testable import PrefetchCore

/// The per-feed "next wake-up" that `status` (`next_wakeup`, `next wake-up:`) and the metrics
/// (`prefetch_next_wakeup_timestamp_seconds`) show, pinned as it is (issue 36): now when a
/// row is due, else the earliest row `next` or release strictly after now. It is not the
/// daemon's rule: it leaves out the re-check of waiting rows, the cache cap's room, generation
/// grace, sources, removed feeds and `expires`, and drops a time equal to now. Each value here
/// was derived by reading the planner; none may change without saying so.
@Suite struct FeedWakeupPinTests {
    static let at = PlannerTests.at
    static let nightly = PlannerTests.nightly  // Berlin, `30 2 * * *`, window 01:00-05:00, refresh 0
    static let named = "name: f\n"

    struct Pin: Sendable, CustomTestStringConvertible {
        let name: String
        var yaml: String
        var now: String
        var state = StateSnapshot()
        var cached = false
        var conditions = ConditionSnapshot(freeBytes: 1 << 40, freeSource: "test")
        var machine: String? = nil
        /// `max_cache_size`, the bytes in use, and when a previous generation becomes room.
        var cap: (max: UInt64, used: UInt64, moreRoomIn: Int64)? = nil
        /// The first row's state: the case is what its name says.
        let status: ResourceStatus
        /// The per-feed value (nil: none, `status` says "none" and the metrics leave the feed out).
        let perFeed: String?
        var testDescription: String { name }
    }

    static let pins: [Pin] = [
        // P1: a due row: now.
        Pin(name: "P1 due: now", yaml: nightly, now: "2026-11-30T03:00:00+01:00", status: .due, perFeed: "2026-11-30T03:00:00+01:00"),
        // P2: the row's next (the window opens) comes before the next release (02:30).
        Pin(name: "P2 window closed: the opening", yaml: nightly, now: "2026-11-30T12:00:00+01:00", status: .deferred,
            perFeed: "2026-12-01T01:00:00+01:00"),
        Pin(name: "P3 backoff: the retry", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
            state: PlannerTests.state(failures: 2, failureRelease: "2026-11-30T02:30:00+01:00", nextRetry: "2026-11-30T03:10:00+01:00"),
            status: .backoff, perFeed: "2026-11-30T03:10:00+01:00"),
        // P4, P5: a failed or fresh row's next is the next release (refresh 0): the same instant.
        Pin(name: "P4 failed: the next release", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
            state: PlannerTests.state(failures: 5, failureRelease: "2026-11-30T02:30:00+01:00", nextRetry: "2026-11-30T03:10:00+01:00"),
            status: .failed, perFeed: "2026-12-01T02:30:00+01:00"),
        Pin(name: "P5 fresh: the next release", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
            state: PlannerTests.state(validated: "2026-11-30T02:45:00+01:00"), cached: true, status: .fresh, perFeed: "2026-12-01T02:30:00+01:00"),
        Pin(name: "P6 fresh by refresh: it turns stale before the next release",
            yaml: nightly.replacingOccurrences(of: "window:", with: "refresh: 36h\nwindow:"), now: "2026-11-30T03:00:00+01:00",
            state: PlannerTests.state(validated: "2026-11-29T02:45:00+01:00"), cached: true, status: .fresh, perFeed: "2026-11-30T14:45:00+01:00"),
        // P7: a waiting row counts for nothing here (the daemon re-checks it a minute later).
        Pin(name: "P7 waiting on the network: the next release only",
            yaml: nightly.replacingOccurrences(of: "resources:", with: "conditions: { network: unmetered }\nresources:"),
            now: "2026-11-30T03:00:00+01:00", conditions: ConditionSnapshot(metered: true, freeBytes: 1 << 40, freeSource: "test"),
            status: .waiting, perFeed: "2026-12-01T02:30:00+01:00"),
        Pin(name: "P8 waiting, neither schedule nor window nor state: none",
            yaml: named + "conditions: { power: ac }\nrefresh: 1h\n" + PlannerTests.one, now: "2026-11-30T03:00:00+01:00",
            conditions: ConditionSnapshot(onAC: false, batteryLevel: 90, freeBytes: 1 << 40, freeSource: "test"),
            status: .waiting, perFeed: nil),
        // P9: releases are nominal (before jitter): 03:00, before the row's jittered 03:48:34.
        Pin(name: "P9 jitter: the nominal release", yaml: "name: f\n" + PlannerTests.berlin + "schedule: \"0 3 * * *\"\njitter: 2h\n" + PlannerTests.one,
            now: "2026-11-30T05:00:00+01:00", state: PlannerTests.state(validated: "2026-11-30T03:50:00+01:00"), cached: true, machine: "kiosk-17",
            status: .fresh, perFeed: "2026-12-01T03:00:00+01:00"),
        Pin(name: "P10 embargo: its end",
            yaml: nightly.replacingOccurrences(of: "size: 1MiB", with: "size: 1MiB\n    not_before: 2026-11-30T04:00:00+01:00"),
            now: "2026-11-30T03:00:00+01:00", status: .deferred, perFeed: "2026-11-30T04:00:00+01:00"),
        Pin(name: "P11 expired, no release to come: none",
            yaml: named + "refresh: 1h\nresources:\n  - url: https://e.com/a.bin\n    expires: 2026-11-01T00:00:00Z\n",
            now: "2026-11-30T03:00:00+01:00", status: .expired, perFeed: nil),
        // P12: fresh until exactly now (validated 02:00 + 1h; the release in force, 01:30, never
        // finished, so no next release): a time equal to now is dropped.
        Pin(name: "P12 a row's next equal to now: none", yaml: named + "timezone: UTC\nrefresh: 1h\n" + PlannerTests.one,
            now: "2026-11-30T03:00:00Z", state: PlannerTests.state(validated: "2026-11-30T02:00:00Z", lastRelease: "2026-11-30T01:30:00Z"),
            cached: true, status: .fresh, perFeed: nil),
        // P13: `cache full` leaves the row without a next; the cap's room (in 10 s) is not looked at.
        Pin(name: "P13 cache full: the next release, not the room", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
            cap: (max: 2 << 20, used: 3 << 19, moreRoomIn: 10), status: .deferred, perFeed: "2026-12-01T02:30:00+01:00"),
        // P14: a due row wins over an embargo ending in an hour.
        Pin(name: "P14 due and an embargo: now",
            yaml: nightly + "  - url: https://e.com/b.bin\n    not_before: 2026-11-30T04:00:00+01:00\n",
            now: "2026-11-30T03:00:00+01:00", status: .due, perFeed: "2026-11-30T03:00:00+01:00"),
        // P15: as P12 half an hour later: the fresh row's next has passed; still fresh, still none.
        Pin(name: "P15 a row's next already passed: none", yaml: named + "timezone: UTC\nrefresh: 1h\n" + PlannerTests.one,
            now: "2026-11-30T03:30:00Z", state: PlannerTests.state(validated: "2026-11-30T02:00:00Z", lastRelease: "2026-11-30T01:30:00Z"),
            cached: true, status: .fresh, perFeed: nil),
    ]

    static func plan(_ pin: Pin) -> Plan {
        let feed = PlannerTests.feed(pin.yaml)
        var usage: CacheUsage?
        if let cap = pin.cap {
            usage = CacheUsage(used: cap.used)
            usage?.moreRoomIn = cap.moreRoomIn
        }
        return Planner.plan(PlanInput(feeds: [feed], state: pin.state, cached: CachedFiles(pin.cached ? [PlannerTests.key] : [], in: [feed]),
                                      conditions: pin.conditions, now: at(pin.now),
                                      machineID: pin.machine.map { MachineID(value: $0, source: "test") },
                                      maxCacheSize: pin.cap?.max, cacheUsage: usage))
    }

    /// The rule pinned here, as `status` and the metrics call it.
    static func perFeed(_ plan: Plan) -> Instant? {
        plan.feeds[0].nextScheduledWork(at: plan.now)
    }

    @Test(arguments: pins)
    func perFeedValue(_ pin: Pin) throws {
        let plan = Self.plan(pin)
        let first = try #require(plan.feeds.first?.items.first)
        #expect(first.status == pin.status, "\(first.reason)")
        #expect(Self.perFeed(plan) == pin.perFeed.map(Self.at))
    }

    /// As `status` shows P2 (with UTC) and the metrics sample's value for it.
    @Test func theValueAsStatusAndTheMetricsShowIt() throws {
        let plan = Self.plan(Self.pins[1])
        let value = try #require(Self.perFeed(plan))
        #expect(value == Instant(seconds: 1_796_083_200))
        #expect(TimeFormat.local(value, clock: plan.feeds[0].clock) == "Tue 2026-12-01 01:00 +01:00 (00:00 UTC)")
        #expect(Metrics.seconds(value) == "1796083200")
        // P1: a due feed's value is the plan's moment, which `status` says as "now (work is due)".
        #expect(Self.perFeed(Self.plan(Self.pins[0])) == Self.at("2026-11-30T03:00:00+01:00"))
    }
}
