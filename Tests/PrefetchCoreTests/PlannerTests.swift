import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// (schedule, window, conditions, recorded state, now) → (state, reason, next).
@Suite struct PlannerTests {
    static func feed(_ yaml: String) -> Feed {
        let (feed, diagnostics) = FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: "f.yaml")
        #expect(diagnostics.filter { $0.severity == .error }.isEmpty, "\(diagnostics.map(\.headline))")
        return feed ?? Feed(name: "invalid", file: "f.yaml", nameLocation: SourceLocation(line: 1, column: 1), schedule: nil,
                            timeZone: TimeZone(identifier: "UTC")!, timeZoneName: "UTC", windows: [], days: nil, jitter: .zero,
                            conditions: Conditions(), refresh: .zero, retry: RetryPolicy(), limits: FeedLimits(), prune: false, resources: [])
    }

    static func at(_ text: String) -> Instant {
        guard case .instant(let instant) = try! Timestamp.parse(text) else { fatalError(text) }
        return instant
    }

    static let berlin = "timezone: Europe/Berlin\n"
    static let one = "resources:\n  - url: https://e.com/a.bin\n    size: 1MiB\n"
    static let key = ResourceKey(feed: "f", path: "a.bin")
    static let urlHash = try! ResourceURL.parse("https://e.com/a.bin").identityHash

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        var yaml: String
        var now: String
        var state: StateSnapshot = StateSnapshot()
        var cached = false
        var conditions = ConditionSnapshot(freeBytes: 1 << 40, freeSource: "test")
        var machine: String? = nil
        /// The partial file on disk (its record is in `state`).
        var partialFile: PartialFile? = nil
        let expect: (ResourceStatus, String, String?)
        var testDescription: String { name }
    }

    /// A snapshot where a.bin was validated at `validated` and `feed` last released at `release`.
    static func state(validated: String? = nil, failures: Int = 0, failureRelease: String? = nil, permanent: Bool = false,
                      nextRetry: String? = nil, lastRelease: String? = nil, finished: String? = nil,
                      partial: UInt64? = nil, metered: UInt64? = nil, meteredDay: String = "") -> StateSnapshot {
        var snapshot = StateSnapshot()
        var resource = ResourceState(urlHash: urlHash)
        resource.validatedAt = validated.map(at)
        resource.length = 1 << 20
        resource.failures = failures
        resource.failureRelease = failureRelease.map(at)
        resource.permanentFailure = permanent
        resource.nextRetry = nextRetry.map(at)
        resource.lastError = failures > 0 || permanent ? "HTTP 503" : nil
        if let partial {
            resource.partial = PartialState(urlHash: urlHash, validators: Validators(etag: "\"v1\""), totalLength: 1 << 20,
                                            syncedOffset: partial, updatedAt: 0)
        }
        snapshot.resources[key] = resource
        if lastRelease != nil || finished != nil {
            snapshot.feeds["f"] = FeedState(lastRelease: lastRelease.map(at), lastReleaseFinished: finished.map(at))
        }
        if let metered { snapshot.meteredBytes[MeteredDay(feed: "f", day: meteredDay)] = metered }
        return snapshot
    }

    static let nightly = "name: f\n" + berlin + "schedule: \"30 2 * * *\"\nwindow: \"01:00-05:00\"\n" + one

    static let cases: [Case] = [
        Case(name: "inside the window, nothing cached", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             expect: (.due, "not cached", nil)),
        Case(name: "window start is inclusive", yaml: nightly, now: "2026-11-30T01:00:00+01:00",
             expect: (.due, "not cached", nil)),
        Case(name: "window end is exclusive", yaml: nightly, now: "2026-11-30T05:00:00+01:00",
             expect: (.deferred, "window closed", "2026-12-01T01:00:00+01:00")),
        Case(name: "after the window: carried over to the next opening", yaml: nightly, now: "2026-11-30T12:00:00+01:00",
             expect: (.deferred, "window closed", "2026-12-01T01:00:00+01:00")),
        Case(name: "a window that wraps midnight is open after midnight",
             yaml: "name: f\n" + berlin + "window: \"22:00-02:00\"\n" + one, now: "2026-11-30T01:30:00+01:00",
             expect: (.due, "not cached", nil)),
        Case(name: "and closed at its end", yaml: "name: f\n" + berlin + "window: \"22:00-02:00\"\n" + one,
             now: "2026-11-30T02:00:00+01:00", expect: (.deferred, "window closed", "2026-11-30T22:00:00+01:00")),
        Case(name: "wrapping window on the spring-forward night closes at 03:00 CEST (one real hour)",
             yaml: "name: f\n" + berlin + "window: \"01:00-03:00\"\n" + one, now: "2026-03-29T01:00:00Z",
             expect: (.deferred, "window closed", "2026-03-30T01:00:00+02:00")),
        Case(name: "spring-forward night: open just before the gap",
             yaml: "name: f\n" + berlin + "window: \"01:00-03:00\"\n" + one, now: "2026-03-29T00:59:00Z",
             expect: (.due, "not cached", nil)),
        Case(name: "fall-back night: the window lasts three real hours",
             yaml: "name: f\n" + berlin + "window: \"01:00-03:00\"\n" + one, now: "2026-10-25T01:30:00Z",
             expect: (.due, "not cached", nil)),
        Case(name: "midnight-wrapping window across the fall-back",
             yaml: "name: f\n" + berlin + "window: \"23:00-02:30\"\n" + one, now: "2026-10-25T01:15:00Z",
             expect: (.deferred, "window closed", "2026-10-25T23:00:00+01:00")),
        Case(name: "days name the day a window opens on",
             yaml: "name: f\n" + berlin + "window: \"22:00-02:00\"\ndays: [sun]\n" + one, now: "2026-11-30T01:00:00+01:00",
             expect: (.due, "not cached", nil)),
        Case(name: "days without window mean whole days", yaml: "name: f\n" + berlin + "days: [sat, sun]\n" + one,
             now: "2026-11-30T10:00:00+01:00", expect: (.deferred, "window closed", "2026-12-05T00:00:00+01:00")),
        Case(name: "jitter delays a window opening", yaml: "name: f\n" + berlin + "window: \"01:00-02:00\"\njitter: 2h\n" + one,
             now: "2026-11-30T01:30:00+01:00", machine: "kiosk-17",
             expect: (.deferred, "jitter", "2026-11-30T01:48:34+01:00")),
        Case(name: "jitter longer than the window is reduced modulo its length",
             yaml: "name: f\n" + berlin + "window: \"01:00-02:00\"\njitter: 3h\n" + one,
             now: "2026-11-30T01:50:00+01:00", machine: "kiosk-17", expect: (.due, "not cached", nil)),
        Case(name: "after the jittered start of a short window", yaml: "name: f\n" + berlin + "window: \"01:00-02:00\"\njitter: 3h\n" + one,
             now: "2026-11-30T02:00:00+01:00", machine: "kiosk-17",
             expect: (.deferred, "window closed", "2026-12-01T01:48:34+01:00")),
        Case(name: "jitter delays a scheduled release", yaml: "name: f\n" + berlin + "schedule: \"0 3 * * *\"\njitter: 2h\n" + one,
             now: "2026-11-30T03:30:00+01:00", state: state(validated: "2026-11-29T04:00:00+01:00"), cached: true,
             machine: "kiosk-17", expect: (.deferred, "jitter", "2026-11-30T03:48:34+01:00")),
        Case(name: "a copy validated after the jittered release is fresh", yaml: "name: f\n" + berlin + "schedule: \"0 3 * * *\"\njitter: 2h\n" + one,
             now: "2026-11-30T05:00:00+01:00", state: state(validated: "2026-11-30T03:50:00+01:00"), cached: true,
             machine: "kiosk-17", expect: (.fresh, "fresh", "2026-12-01T03:48:34+01:00")),
        Case(name: "without a machine id there is no jitter", yaml: "name: f\n" + berlin + "window: \"01:00-02:00\"\njitter: 2h\n" + one,
             now: "2026-11-30T01:30:00+01:00", expect: (.due, "not cached", nil)),
        Case(name: "embargo", yaml: nightly.replacingOccurrences(of: "size: 1MiB", with: "size: 1MiB\n    not_before: 2026-11-30T04:00:00+01:00"),
             now: "2026-11-30T03:00:00+01:00", expect: (.deferred, "embargo", "2026-11-30T04:00:00+01:00")),
        Case(name: "embargo ending outside the window waits for the next opening",
             yaml: nightly.replacingOccurrences(of: "size: 1MiB", with: "size: 1MiB\n    not_before: 2026-11-30T06:00:00+01:00"),
             now: "2026-11-30T03:00:00+01:00", expect: (.deferred, "embargo", "2026-12-01T01:00:00+01:00")),
        Case(name: "expires not after not_before: never fetched, expired at once (a warning, not an error)",
             yaml: nightly.replacingOccurrences(of: "size: 1MiB", with: "size: 1MiB\n    not_before: 2026-12-05\n    expires: 2026-12-02"),
             now: "2026-11-30T03:00:00+01:00", expect: (.expired, "expired", nil)),
        Case(name: "embargo wins over a closed window",
             yaml: nightly.replacingOccurrences(of: "size: 1MiB", with: "size: 1MiB\n    not_before: 2027-01-01"),
             now: "2026-11-30T12:00:00+01:00", expect: (.deferred, "embargo", "2027-01-01T01:00:00+01:00")),
        Case(name: "expired wins over everything",
             yaml: nightly.replacingOccurrences(of: "size: 1MiB", with: "size: 1MiB\n    expires: 2026-11-30"),
             now: "2026-11-30T03:00:00+01:00", state: state(failures: 9, failureRelease: "2026-11-30T02:30:00+01:00"),
             expect: (.expired, "expired", nil)),
        Case(name: "backoff within the release", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             state: state(failures: 2, failureRelease: "2026-11-30T02:30:00+01:00", nextRetry: "2026-11-30T03:10:00+01:00"),
             expect: (.backoff, "attempt 2 of 5 failed", "2026-11-30T03:10:00+01:00")),
        Case(name: "backoff expired: due again", yaml: nightly, now: "2026-11-30T03:11:00+01:00",
             state: state(failures: 2, failureRelease: "2026-11-30T02:30:00+01:00", nextRetry: "2026-11-30T03:10:00+01:00"),
             expect: (.due, "not cached", nil)),
        Case(name: "attempts exhausted: failed until the next release", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             state: state(failures: 5, failureRelease: "2026-11-30T02:30:00+01:00", nextRetry: "2026-11-30T03:10:00+01:00"),
             expect: (.failed, "gave up after 5 attempts", "2026-12-01T02:30:00+01:00")),
        Case(name: "a permanent error fails the release", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             state: state(failures: 1, failureRelease: "2026-11-30T02:30:00+01:00", permanent: true),
             expect: (.failed, "permanent error", "2026-12-01T02:30:00+01:00")),
        Case(name: "attempts start again at each release", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             state: state(failures: 5, failureRelease: "2026-11-29T02:30:00+01:00", permanent: true),
             expect: (.due, "not cached", nil)),
        Case(name: "failed wins over a closed window", yaml: nightly, now: "2026-11-30T12:00:00+01:00",
             state: state(failures: 5, failureRelease: "2026-11-30T02:30:00+01:00"),
             expect: (.failed, "gave up after 5 attempts", "2026-12-01T02:30:00+01:00")),
        Case(name: "validated in this release: fresh until the next", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             state: state(validated: "2026-11-30T02:45:00+01:00"), cached: true,
             expect: (.fresh, "fresh", "2026-12-01T02:30:00+01:00")),
        Case(name: "fresh wins over a closed window", yaml: nightly, now: "2026-11-30T12:00:00+01:00",
             state: state(validated: "2026-11-30T02:45:00+01:00"), cached: true,
             expect: (.fresh, "fresh", "2026-12-01T02:30:00+01:00")),
        Case(name: "validated before the release: stale", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             state: state(validated: "2026-11-29T02:45:00+01:00"), cached: true, expect: (.due, "stale", nil)),
        Case(name: "refresh keeps a recent copy across a release",
             yaml: nightly.replacingOccurrences(of: "window:", with: "refresh: 36h\nwindow:"), now: "2026-11-30T03:00:00+01:00",
             state: state(validated: "2026-11-29T02:45:00+01:00"), cached: true,
             expect: (.fresh, "fresh", "2026-11-30T14:45:00+01:00")),
        Case(name: "refresh longer than the release period: due again only after both",
             yaml: nightly.replacingOccurrences(of: "window:", with: "refresh: 36h\nwindow:"), now: "2026-11-30T03:00:00+01:00",
             state: state(validated: "2026-11-30T02:40:00+01:00"), cached: true,
             expect: (.fresh, "fresh", "2026-12-01T14:40:00+01:00")),
        Case(name: "a cached file without state is revalidated", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             cached: true, expect: (.due, "stale", nil)),
        Case(name: "a partial resumes", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             state: state(partial: 1 << 19), partialFile: PartialFile(size: 1 << 19, inode: 1), expect: (.due, "resume", nil)),
        Case(name: "a partial recorded but gone from disk is none", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             state: state(partial: 1 << 19), expect: (.due, "not cached", nil)),
        Case(name: "metered link, unmetered required", yaml: nightly.replacingOccurrences(of: "resources:", with: "conditions: { network: unmetered }\nresources:"),
             now: "2026-11-30T03:00:00+01:00", conditions: ConditionSnapshot(metered: true), expect: (.waiting, "network metered", nil)),
        Case(name: "conditions only wait inside an open window",
             yaml: nightly.replacingOccurrences(of: "resources:", with: "conditions: { network: unmetered }\nresources:"),
             now: "2026-11-30T12:00:00+01:00", conditions: ConditionSnapshot(metered: true),
             expect: (.deferred, "window closed", "2026-12-01T01:00:00+01:00")),
        Case(name: "on battery, AC required", yaml: nightly.replacingOccurrences(of: "resources:", with: "conditions: { power: ac }\nresources:"),
             now: "2026-11-30T03:00:00+01:00", conditions: ConditionSnapshot(onAC: false, batteryLevel: 90),
             expect: (.waiting, "on battery", nil)),
        Case(name: "battery below the minimum", yaml: nightly.replacingOccurrences(of: "resources:", with: "conditions: { min_battery: 40 }\nresources:"),
             now: "2026-11-30T03:00:00+01:00", conditions: ConditionSnapshot(onAC: false, batteryLevel: 23),
             expect: (.waiting, "battery 23% < 40%", nil)),
        Case(name: "min_battery does not apply on AC", yaml: nightly.replacingOccurrences(of: "resources:", with: "conditions: { min_battery: 40 }\nresources:"),
             now: "2026-11-30T03:00:00+01:00", conditions: ConditionSnapshot(onAC: true, batteryLevel: 23),
             expect: (.due, "not cached", nil)),
        Case(name: "free space counts the bytes still to write",
             yaml: nightly.replacingOccurrences(of: "resources:", with: "conditions: { min_free_space: 2GiB }\nresources:"),
             now: "2026-11-30T03:00:00+01:00", conditions: ConditionSnapshot(freeBytes: 2 << 30),
             expect: (.waiting, "free space 2GiB < 2.001GiB", nil)),
        // Figures that would round alike are shown apart (more decimals, then bytes).
        Case(name: "free space figures read differently",
             yaml: nightly.replacingOccurrences(of: "resources:", with: "conditions: { min_free_space: 1GiB }\nresources:")
                .replacingOccurrences(of: "size: 1MiB", with: "size: 20MiB"),
             now: "2026-11-30T03:00:00+01:00", conditions: ConditionSnapshot(freeBytes: 1034 << 20),
             expect: (.waiting, "free space 1.01GiB < 1.02GiB", nil)),
        Case(name: "metered budget used today", yaml: nightly.replacingOccurrences(of: "resources:", with: "conditions: { metered_budget: 10MiB/day }\nresources:"),
             now: "2026-11-30T03:00:00+01:00", state: state(metered: 9_900_000, meteredDay: "2026-11-30"),
             conditions: ConditionSnapshot(metered: true), expect: (.waiting, "metered budget used", nil)),
        Case(name: "yesterday's metered bytes do not count", yaml: nightly.replacingOccurrences(of: "resources:", with: "conditions: { metered_budget: 10MiB/day }\nresources:"),
             now: "2026-11-30T03:00:00+01:00", state: state(metered: 9_900_000, meteredDay: "2026-11-29"),
             conditions: ConditionSnapshot(metered: true), expect: (.due, "not cached", nil)),
        Case(name: "neither schedule nor window: first seen is due at once", yaml: "name: f\n" + one,
             now: "2026-11-30T03:00:00Z", expect: (.due, "not cached", nil)),
        Case(name: "neither: fresh until refresh after the release finished", yaml: "name: f\n" + one,
             now: "2026-11-30T03:00:00Z",
             state: state(validated: "2026-11-30T02:30:00Z", lastRelease: "2026-11-30T02:29:00Z", finished: "2026-11-30T02:31:00Z"),
             cached: true, expect: (.fresh, "fresh", "2026-11-30T03:31:00+00:00")),
        // Released once the previous release finished *more than* refresh ago (SPEC §5).
        Case(name: "neither: not released again at exactly refresh after it finished", yaml: "name: f\n" + one,
             now: "2026-11-30T03:31:00Z",
             state: state(validated: "2026-11-30T02:30:00Z", lastRelease: "2026-11-30T02:29:00Z", finished: "2026-11-30T02:31:00Z"),
             cached: true, expect: (.fresh, "fresh", "2026-11-30T03:31:00+00:00")),
        Case(name: "neither: released again once refresh has passed", yaml: "name: f\n" + one,
             now: "2026-11-30T03:31:00.000000001Z",
             state: state(validated: "2026-11-30T02:30:00Z", lastRelease: "2026-11-30T02:29:00Z", finished: "2026-11-30T02:31:00Z"),
             cached: true, expect: (.due, "stale", nil)),
        // The clock was set back since these were recorded (a machine that booted with its clock
        // a year ahead, then corrected): times more than an hour ahead are not believed.
        Case(name: "a copy validated a year ahead is not fresh", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             state: state(validated: "2027-11-30T02:45:00+01:00"), cached: true, expect: (.due, "stale", nil)),
        Case(name: "a copy validated less than an hour ahead still is", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             state: state(validated: "2026-11-30T03:50:00+01:00"), cached: true,
             expect: (.fresh, "fresh", "2026-12-01T02:30:00+01:00")),
        Case(name: "a retry set a year ahead waits max_backoff from now", yaml: nightly, now: "2026-11-30T03:00:00+01:00",
             state: state(failures: 2, failureRelease: "2026-11-30T02:30:00+01:00", nextRetry: "2027-11-30T03:10:00+01:00"),
             expect: (.backoff, "attempt 2 of 5 failed", "2026-11-30T04:00:00+01:00")),
        Case(name: "a retry within max_backoff is kept as set",
             yaml: nightly.replacingOccurrences(of: "window:", with: "retry: { max_backoff: 6h }\nwindow:"), now: "2026-11-30T03:00:00+01:00",
             state: state(failures: 2, failureRelease: "2026-11-30T02:30:00+01:00", nextRetry: "2026-11-30T08:00:00+01:00"),
             expect: (.backoff, "attempt 2 of 5 failed", "2026-11-30T08:00:00+01:00")),
        Case(name: "neither: a release finished a year ahead does not hold the feed", yaml: "name: f\n" + one,
             now: "2026-11-30T03:00:00Z",
             state: state(validated: "2027-11-30T02:30:00Z", lastRelease: "2027-11-30T02:29:00Z", finished: "2027-11-30T02:31:00Z"),
             cached: true, expect: (.due, "stale", nil)),
        Case(name: "schedule only: a release may transfer until the next", yaml: "name: f\n" + berlin + "schedule: \"@daily\"\n" + one,
             now: "2026-11-30T23:59:00+01:00", expect: (.due, "not cached", nil)),
    ]

    @Test(arguments: cases)
    func resourceState(_ c: Case) throws {
        let feed = Self.feed(c.yaml)
        let input = PlanInput(feeds: [feed], state: c.state, cached: CachedFiles(c.cached ? [Self.key] : [], in: [feed]),
                              conditions: c.conditions, now: Self.at(c.now),
                              machineID: c.machine.map { MachineID(value: $0, source: "test") },
                              partialFiles: c.partialFile.map { [Self.key: $0] } ?? [:])
        let plan = Planner.plan(input)
        let item = try #require(plan.feeds.first?.items.first)
        let clock = ZoneClock(feed.timeZone)
        #expect(item.status == c.expect.0)
        #expect(item.reason == c.expect.1)
        #expect(item.next.map { TimeFormat.rfc3339($0, clock: clock) } == c.expect.2)
    }

    @Test func jitterFollowsTheSpecFormula() {
        // Expected values computed with Python's hashlib, independently of this code.
        #expect(Jitter.offset(machineID: "kiosk-17", feed: "lobby", jitter: TimeSpan(seconds: 1200)) == 604)
        #expect(Jitter.offset(machineID: "kiosk-17", feed: "f", jitter: TimeSpan(seconds: 7200)) == 2914)
        #expect(Jitter.offset(machineID: "m1", feed: "f", jitter: .hours(24)) == 61029)
        #expect(Jitter.offset(machineID: nil, feed: "f", jitter: .hours(24)) == 0)
        #expect(Jitter.offset(machineID: "m1", feed: "f", jitter: .zero) == 0)
    }

    @Test func machineIDOrder() throws {
        let folder = try TemporaryFolder()
        let etc = try folder.write("machine-id", "abc123\n")
        let dbus = try folder.write("dbus-id", "dbus456\n")
        var config = Config()
        #expect(MachineID.find(environment: [:], config: config, files: [etc, dbus]) == MachineID(value: "abc123", source: etc))
        #expect(MachineID.find(environment: [:], config: config, files: ["/nonexistent", dbus]) == MachineID(value: "dbus456", source: dbus))
        #expect(MachineID.find(environment: [:], config: config, files: ["/nonexistent"]) == nil)
        config.machineID = "from-config"
        #expect(MachineID.find(environment: [:], config: config, files: [etc])?.value == "from-config")
        #expect(MachineID.find(environment: ["PREFETCH_MACHINE_ID": "env"], config: config, files: [etc])
                == MachineID(value: "env", source: "PREFETCH_MACHINE_ID"))
    }

    /// SPEC §6: an image's baked placeholder (an empty file, or `uninitialized` before first
    /// boot) is no id, and the search stops there: the dbus copy is as baked. Jitter is 0
    /// and the plan says why. An empty PREFETCH_MACHINE_ID counts as unset.
    @Test func aBakedMachineIDIsNoID() throws {
        let folder = try TemporaryFolder()
        let dbus = try folder.write("dbus-id", "baked-copy\n")
        for placeholder in ["", "\n", "uninitialized\n"] {
            let etc = try folder.write("machine-id", placeholder)
            let found = try #require(MachineID.find(environment: ["PREFETCH_MACHINE_ID": " "], config: Config(), files: [etc, dbus]))
            #expect(!found.usable && found.usableValue == nil && found.source == etc, "\(placeholder.debugDescription)")
            let feed = Self.feed("jitter: 2h\n" + Self.one)
            let now = Self.at("2026-11-30T03:00:00+01:00")
            let plan = Planner.plan(PlanInput(feeds: [feed], state: StateSnapshot(), cached: CachedFiles(), now: now, machineID: found))
            #expect(plan.feeds[0].jitterOffset == 0)
            let text = PlanRenderer().text(plan)
            #expect(text.contains("the image baked no usable machine id"), "\(text)")
            #expect(PlanRenderer().json(plan).contains("\"machine_id_problem\""))
        }
    }

    @Test func dueWorkIsOrderedByPriorityWindowEndAndSize() throws {
        let a = Self.feed("name: a\n" + Self.berlin + "window: \"01:00-05:00\"\nresources:\n"
            + "  - { url: \"https://e.com/big\", size: 5MiB }\n  - { url: \"https://e.com/small\", size: 1MiB }\n"
            + "  - { url: \"https://e.com/urgent\", size: 9MiB, priority: high }\n  - { url: \"https://e.com/later\", size: 1KiB, priority: low }\n")
        let b = Self.feed("name: b\n" + Self.berlin + "window: \"01:00-04:00\"\nresources:\n  - { url: \"https://e.com/soon\", size: 8MiB }\n")
        let plan = Planner.plan(PlanInput(feeds: [a, b], conditions: ConditionSnapshot(freeBytes: 1 << 40),
                                          now: Self.at("2026-11-30T02:00:00+01:00")))
        #expect(plan.order.map(\.path) == ["urgent", "soon", "small", "big", "later"])
        #expect(plan.feeds[0].items.map(\.path) == ["urgent", "small", "big", "later"])
    }

    @Test func estimatesFlagWorkThatWillNotFitTheWindow() throws {
        let feed = Self.feed("name: f\n" + Self.berlin + "window: \"01:00-05:00\"\nresources:\n"
            + "  - { url: \"https://e.com/a\", size: 1GiB }\n  - { url: \"https://e.com/b\", size: 10GiB }\n")
        var state = StateSnapshot()
        state.throughput = 1_048_576  // 1 MiB/s measured: 1 GiB takes 17 minutes, 10 GiB three hours
        let plan = Planner.plan(PlanInput(feeds: [feed], state: state, conditions: ConditionSnapshot(freeBytes: 1 << 40),
                                          now: Self.at("2026-11-30T04:00:00+01:00")))
        let items = plan.feeds[0].items
        #expect(items.map(\.path) == ["a", "b"])
        #expect(items[0].fits == true && items[0].estimatedFinish == Self.at("2026-11-30T04:17:04+01:00"))
        #expect(items[1].fits == false)
        #expect(items[1].windowEnd == Self.at("2026-11-30T05:00:00+01:00"))
    }

    @Test func freeSpaceIsSharedInOrder() {
        let feed = Self.feed("name: f\nresources:\n  - { url: \"https://e.com/a\", size: 600MiB }\n  - { url: \"https://e.com/b\", size: 600MiB }\n")
        let plan = Planner.plan(PlanInput(feeds: [feed], conditions: ConditionSnapshot(freeBytes: 1 << 30), now: 0))
        #expect(plan.feeds[0].items.map(\.status) == [.due, .waiting])
        #expect(plan.feeds[0].items[1].reason == "free space 424MiB < 600MiB")
    }

    @Test func nextReleasesAreFiveInstantsBeforeJitter() {
        let feed = Self.feed("name: f\n" + Self.berlin + "schedule: \"30 2 * * *\"\njitter: 1h\n" + Self.one)
        let plan = Planner.plan(PlanInput(feeds: [feed], now: Self.at("2026-03-27T12:00:00Z"),
                                          machineID: MachineID(value: "kiosk-17", source: "test")))
        let clock = ZoneClock(feed.timeZone)
        #expect(plan.feeds[0].nextReleases.map { TimeFormat.rfc3339($0, clock: clock) } == [
            "2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00",
            "2026-03-31T02:30:00+02:00", "2026-04-01T02:30:00+02:00",
        ])
    }

    /// SPEC §1: with no machine id anywhere, there is no jitter, and `plan` says so (and how
    /// to set one); with one, it says how long this machine waits and where the id came from.
    @Test func planSaysWhenThereIsNoMachineID() {
        let feed = Self.feed("schedule: \"0 3 * * *\"\njitter: 30m\n" + Self.one)
        let now = Self.at("2026-11-30T01:00:00Z")
        let none = Planner.plan(PlanInput(feeds: [feed], conditions: ConditionSnapshot(freeBytes: 1 << 40), now: now, machineID: nil))
        #expect(PlanRenderer().text(none).contains("jitter 30m: no machine id found, so no jitter (set PREFETCH_MACHINE_ID or machine_id)"))
        let id = MachineID(value: "kiosk-17", source: "PREFETCH_MACHINE_ID")
        let some = Planner.plan(PlanInput(feeds: [feed], conditions: ConditionSnapshot(freeBytes: 1 << 40), now: now, machineID: id))
        let wait = TimeSpan(seconds: Jitter.offset(machineID: "kiosk-17", feed: feed.name, jitter: feed.jitter))
        #expect(PlanRenderer().text(some).contains("jitter 30m: this machine waits \(wait) (machine id from PREFETCH_MACHINE_ID)"))
    }

    /// What pauses a running feed when the probes change mid-run (re-read every 5 s).
    @Test func conditionsLostMidRunPauseTheFeed() {
        let any = Conditions()
        var unmetered = Conditions(); unmetered.network = .unmetered
        var ac = Conditions(); ac.power = .ac
        var battery40 = Conditions(); battery40.minBattery = 40
        let metered = ConditionSnapshot(metered: true)
        let battery = ConditionSnapshot(onAC: false, batteryLevel: 30)
        let mains = ConditionSnapshot(onAC: true, batteryLevel: 30)
        #expect(RunPass.conditionLost(any, metered) == nil && RunPass.conditionLost(any, battery) == nil)
        #expect(RunPass.conditionLost(unmetered, metered) == "network metered")
        #expect(RunPass.conditionLost(unmetered, battery) == nil)
        #expect(RunPass.conditionLost(ac, battery) == "on battery")
        #expect(RunPass.conditionLost(ac, mains) == nil)
        #expect(RunPass.conditionLost(battery40, battery) == "battery 30% < 40%")
        #expect(RunPass.conditionLost(battery40, mains) == nil)  // on mains the level does not matter
    }

    /// SPEC §6 "deadlines act": 10 minutes before the window closes, a 1 GB transfer at
    /// 1 MB/s would be cut. One that could not resume (its last response had no strong ETag
    /// and no Last-Modified, and the entry no sha256) is not started: deferred to the next
    /// window. Every other combination starts: never fetched, a strong ETag, Last-Modified,
    /// a sha256 — and any transfer that fits.
    /// SPEC §6 "Deadlines act", judged by §7's one rule on the resource's last 2xx response:
    /// a transfer that could not resume and would not finish before the window closes is
    /// not started; one never fetched (no response recorded), or one that can resume (a
    /// resumable partial, or a last response that makes a cut one resumable), starts. The
    /// last response: a strong or weak ETag or none, a Last-Modified or none, its Date (none,
    /// the same second, a day later), Accept-Ranges: none or not; a partial on disk that can
    /// resume, one that cannot (only a weak ETag), or none.
    @Test func aTransferThatCouldNotResumeIsNotStartedToBeCut() throws {
        let now = Self.at("2026-11-30T01:50:00Z")
        enum PartialCase: CaseIterable { case none, resumable, unresumable }
        let modified = "Sun, 29 Nov 2026 10:00:00 GMT"
        for etag in [nil, "W/\"weak\"", "\"strong\""] as [String?] {
            for lastModified in [false, true] {
                for date in [nil, modified, "Mon, 30 Nov 2026 10:00:00 GMT"] as [String?] {
                    for rangesNone in [false, true] {
                        for sha256 in [false, true] {
                            for fetchedBefore in [false, true] {
                                for partial in PartialCase.allCases {
                                    for size in ["1GB", "100MB"] {
                                        let entry = "  - url: https://e.com/a.bin\n    size: \(size)\n" + (sha256 ? "    sha256: \(String(repeating: "a", count: 64))\n" : "")
                                        let feed = Self.feed("timezone: UTC\nwindow: \"01:00-02:00\"\nrefresh: 1h\nresources:\n" + entry)
                                        var state = StateSnapshot()
                                        state.throughput = 1_000_000
                                        var record = ResourceState(urlHash: Self.urlHash)
                                        let response = ResponseFacts(etag: etag, lastModified: lastModified ? modified : nil, date: date,
                                                                     acceptRangesNone: rangesNone)
                                        if fetchedBefore {
                                            record.validators = response.validators
                                            record.placedAt = now.advanced(bySeconds: -86_400)
                                            record.validatedAt = now.advanced(bySeconds: -86_400)
                                            record.length = size == "1GB" ? 1_000_000_000 : 100_000_000
                                            record.sha256 = sha256 ? String(repeating: "a", count: 64) : nil
                                            record.lastResponse = response
                                        }
                                        var files: [ResourceKey: PartialFile] = [:]
                                        if partial != .none {
                                            // The partial's own response: the last 2xx of the resource.
                                            record.lastResponse = partial == .resumable ? ResponseFacts(etag: "\"p1\"") : ResponseFacts(etag: "W/\"p1\"")
                                            record.partial = PartialState(urlHash: Self.urlHash, validators: record.lastResponse!.validators,
                                                                          totalLength: nil, syncedOffset: 50_000_000, updatedAt: 0, bootID: "b", inode: 9)
                                            files[Self.key] = PartialFile(size: 60_000_000, inode: 9)
                                        }
                                        if fetchedBefore || partial != .none { state.resources[Self.key] = record }
                                        let plan = Planner.plan(PlanInput(feeds: [feed], state: state, cached: CachedFiles(fetchedBefore ? [Self.key] : [], in: [feed]),
                                                                          conditions: ConditionSnapshot(freeBytes: 1 << 40, freeSource: "test"), now: now,
                                                                          machineID: nil, partialFiles: files, bootID: "b"))
                                        let item = try #require(plan.feeds.first?.items.first)
                                        // SPEC §9: a copy of its pin that no URL gave a validator is pinned: never requested.
                                        if fetchedBefore && sha256 && etag == nil && !lastModified {
                                            #expect(item.status == .fresh && item.reason == "pinned" && item.next == nil && item.remaining == 0,
                                                    "\(item.status) \(item.reason)")
                                            continue
                                        }
                                        // §7's rule, written out: not decode (always, here); Accept-Ranges not none;
                                        // a strong ETag, or no ETag and a Last-Modified 60 s before the Date, or sha256.
                                        let strongDate = lastModified && date == "Mon, 30 Nov 2026 10:00:00 GMT"
                                        let lastResumable = !rangesNone && (etag == "\"strong\"" || (etag == nil && strongDate) || sha256)
                                        let canResume: Bool = switch partial {
                                        case .resumable: true
                                        case .unresumable: sha256  // the partial's own response decides: a weak ETag
                                        case .none: !fetchedBefore || lastResumable  // never fetched: starts
                                        }
                                        // 100MB fits in the 10 minutes left at 1 MB/s; 1GB does not, and 950MB neither.
                                        let held = size == "1GB" && !canResume
                                        let label = "\(etag ?? "-") \(lastModified) \(date ?? "-") none:\(rangesNone) sha256:\(sha256) before:\(fetchedBefore) partial:\(partial) \(size)"
                                        if held {
                                            #expect(item.status == .deferred && item.reason == "would not finish before the window closes", "\(label): \(item.status)")
                                            #expect(item.next == Self.at("2026-12-01T01:00:00Z"), "\(label)")
                                            #expect(plan.order.isEmpty, "\(label)")
                                        } else {
                                            #expect(item.status == .due, "\(label): \(item.status) \(item.reason)")
                                        }
                                        // The whole size, unless a partial the run would resume is there.
                                        let whole: UInt64 = size == "1GB" ? 1_000_000_000 : 100_000_000
                                        let resumesFrom: UInt64? = partial == .resumable || (partial == .unresumable && sha256) ? 60_000_000 : nil
                                        #expect(item.remaining == whole - (resumesFrom ?? 0), "\(label)")
                                        if !held {
                                            #expect(item.reason == (resumesFrom != nil && !fetchedBefore ? "resume" : fetchedBefore ? "stale" : "not cached"), "\(label): \(item.reason)")
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// SPEC §7 "Partials as the run sees them": a resumable partial plans `remaining` from
    /// the offset the next run resumes at — the file's length within the same boot, its
    /// fsynced offset after a reboot (or for a record without a boot), the file's length when
    /// it is shorter; one that cannot resume, or whose file is gone or another inode, counts
    /// as none: reason `not cached`, `stale` or `changed`, `remaining` the whole size.
    @Test func aPartialPlansTheOffsetTheRunResumesFrom() throws {
        let now = Self.at("2026-11-30T03:00:00+01:00")
        let synced: UInt64 = 300_000
        enum Facts: CaseIterable { case strongETag, weakETag, weakDate, rangesNone }
        enum Boot: CaseIterable { case same, other, none }
        enum File: CaseIterable { case gone, shorter, equal, longer, otherInode }
        enum Copy: CaseIterable { case none, stale, changed }
        for facts in Facts.allCases {
            for boot in Boot.allCases {
                for file in File.allCases {
                    for copy in Copy.allCases {
                        let feed = Self.feed(Self.nightly)  // size: 1MiB
                        var record = ResourceState(urlHash: Self.urlHash)
                        if copy != .none {
                            record.placedAt = now.advanced(bySeconds: -86_400 * 2)
                            record.validatedAt = record.placedAt
                            record.length = copy == .changed ? 999 : 1 << 20  // another size than the entry's: changed
                        }
                        let response: ResponseFacts = switch facts {
                        case .strongETag: ResponseFacts(etag: "\"v1\"", date: "Mon, 30 Nov 2026 01:00:00 GMT")
                        case .weakETag: ResponseFacts(etag: "W/\"v1\"", lastModified: "Sun, 01 Mar 2026 10:00:00 GMT", date: "Mon, 30 Nov 2026 01:00:00 GMT")
                        case .weakDate: ResponseFacts(lastModified: "Mon, 30 Nov 2026 01:00:00 GMT", date: "Mon, 30 Nov 2026 01:00:00 GMT")
                        case .rangesNone: ResponseFacts(etag: "\"v1\"", acceptRangesNone: true)
                        }
                        record.partial = PartialState(urlHash: Self.urlHash, validators: response.validators, totalLength: 1 << 20,
                                                      syncedOffset: synced, updatedAt: 0, bootID: boot == .none ? nil : boot == .same ? "now" : "before",
                                                      inode: boot == .none ? nil : 5, date: response.date, acceptRangesNone: response.acceptRangesNone)
                        var state = StateSnapshot()
                        state.resources[Self.key] = record
                        let size: UInt64? = switch file {
                        case .gone: nil
                        case .shorter: synced - 1000
                        case .equal: synced
                        case .longer, .otherInode: synced + 200_000
                        }
                        let files = size.map { [Self.key: PartialFile(size: $0, inode: file == .otherInode ? 6 : 5)] } ?? [:]
                        let plan = Planner.plan(PlanInput(feeds: [feed], state: state, cached: CachedFiles(copy == .none ? [] : [Self.key], in: [feed]),
                                                          conditions: ConditionSnapshot(freeBytes: 1 << 40, freeSource: "test"), now: now,
                                                          partialFiles: files, bootID: "now"))
                        let item = try #require(plan.feeds.first?.items.first)
                        let label = "\(facts) boot \(boot) file \(file) copy \(copy)"
                        // The rules, sentence by sentence.
                        let resumable = facts == .strongETag
                        var from: UInt64?
                        if resumable, let size, !(file == .otherInode && boot != .none) {
                            from = boot == .same ? size : min(size, synced)  // "within the same boot, the file's length"
                        }
                        let reason = copy == .none ? (from != nil ? "resume" : "not cached") : copy == .stale ? "stale" : "changed"
                        #expect(item.status == .due, "\(label)")
                        #expect(item.reason == reason, "\(label): \(item.reason)")
                        #expect(item.remaining == (1 << 20) - (from ?? 0), "\(label): \(item.remaining ?? 0)")
                        #expect(item.resumeFrom == from, "\(label)")
                    }
                }
            }
        }
    }

    /// SPEC §6: a held origin turns what would be due or waiting into `backoff` with the
    /// hold's cause, until its end — when the daemon wakes; what is fresh, deferred or of
    /// another origin is untouched, and an ended hold holds nothing back.
    @Test func aHeldOriginDefersItsDueResourcesToTheHoldsEnd() {
        let now = Self.at("2026-11-30T03:00:00+01:00")
        let feed = Self.feed("""
            refresh: 1h
            resources:
              - url: https://down.example/a.bin
              - url: https://down.example/b.bin
                not_before: "2030-01-01T00:00:00Z"
              - url: https://up.example/c.bin
            """)
        var state = StateSnapshot()
        let until = now.advanced(bySeconds: 300)
        state.originHolds["https://down.example:443"] = OriginHold(origin: "https://down.example:443", until: until, reason: "HTTP 503",
                                                                    since: now, failures: 1)
        let plan = Planner.plan(PlanInput(feeds: [feed], state: state, cached: CachedFiles(), conditions: ConditionSnapshot(freeBytes: 1 << 40, freeSource: "test"),
                                          now: now, machineID: nil))
        let items = Dictionary(uniqueKeysWithValues: plan.feeds[0].items.map { ($0.path, $0) })
        #expect(items["a.bin"]?.status == .backoff && items["a.bin"]?.reason == "origin held: HTTP 503" && items["a.bin"]?.next == until)
        #expect(items["b.bin"]?.status == .deferred && items["b.bin"]?.reason == "embargo")
        #expect(items["c.bin"]?.status == .due)
        let onlyHeld = Planner.plan(PlanInput(feeds: [Self.feed("refresh: 1h\nresources:\n  - url: https://down.example/a.bin\n")], state: state,
                                              cached: CachedFiles(), conditions: ConditionSnapshot(freeBytes: 1 << 40, freeSource: "test"), now: now, machineID: nil))
        #expect(DaemonWakeup.ofPlan(onlyHeld, recheck: 60)?.at == until, "the daemon does not wake when the hold ends")
        let later = Planner.plan(PlanInput(feeds: [feed], state: state, cached: CachedFiles(), conditions: ConditionSnapshot(freeBytes: 1 << 40, freeSource: "test"),
                                           now: until, machineID: nil))
        #expect(later.feeds[0].items.first { $0.path == "a.bin" }?.status == .due)
    }

    /// The daemon's next wake-up: work waiting on conditions (which no clock announces) is
    /// re-checked after `recheck` seconds, not at once; due work is at once.
    @Test func theDaemonWakesForConditionsAfterARecheckNotAtOnce() {
        let now = Self.at("2026-11-30T03:00:00+01:00")
        let waiting = Self.feed("conditions: { power: ac }\nrefresh: 1h\n" + Self.one)
        let onBattery = Planner.plan(PlanInput(feeds: [waiting], state: StateSnapshot(), cached: CachedFiles(),
                                               conditions: ConditionSnapshot(onAC: false, batteryLevel: 90), now: now, machineID: nil))
        #expect(onBattery.feeds.first?.items.first?.status == .waiting)
        #expect(DaemonWakeup.ofPlan(onBattery, recheck: 60)?.at == now.advanced(bySeconds: 60))
        let onMains = Planner.plan(PlanInput(feeds: [waiting], state: StateSnapshot(), cached: CachedFiles(),
                                             conditions: ConditionSnapshot(freeBytes: 1 << 40, freeSource: "test"), now: now, machineID: nil))
        #expect(onMains.feeds.first?.items.first?.status == .due)
        #expect(DaemonWakeup.ofPlan(onMains, recheck: 60)?.at == now)
    }
}
