import Foundation
import Testing
@testable import PrefetchCore

/// SPEC §6, starvation: (timing, recorded release, last activity, now) → windows missed in a
/// row. The simulation (`PlannerSimulationTests`) checks the same count against an
/// independent reference over simulated weeks; these are the cases one can read.
@Suite struct StarvationTests {
    static let window = "timezone: UTC\nwindow: \"01:00-03:00\"\nresources:\n  - url: https://e.com/a.bin\n"
    static let schedule = "timezone: UTC\nschedule: \"0 */6 * * *\"\nresources:\n  - url: https://e.com/a.bin\n"
    static let neither = "timezone: UTC\nresources:\n  - url: https://e.com/a.bin\n"
    static let at = PlannerTests.at

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let yaml: String
        let release: String?
        var finished: String? = nil
        var activity: String? = nil
        let now: String
        let missed: Int
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "never run: nothing known", yaml: window, release: nil, now: "2026-12-05T12:00:00Z", missed: 0),
        Case(name: "pending, its first window still open", yaml: window, release: "2026-12-01T01:00:00Z", now: "2026-12-01T02:00:00Z", missed: 0),
        Case(name: "pending, its window closed with nothing moved", yaml: window, release: "2026-12-01T01:00:00Z", now: "2026-12-01T03:00:00Z", missed: 1),
        Case(name: "three windows closed, nothing moved", yaml: window, release: "2026-12-01T01:00:00Z", now: "2026-12-03T12:00:00Z", missed: 3),
        Case(name: "something moved in the second window", yaml: window, release: "2026-12-01T01:00:00Z", activity: "2026-12-02T01:30:00Z",
             now: "2026-12-04T12:00:00Z", missed: 2),
        Case(name: "activity before the release is the previous release's", yaml: window, release: "2026-12-01T01:00:00Z",
             activity: "2026-11-30T02:00:00Z", now: "2026-12-01T04:00:00Z", missed: 1),
        Case(name: "finished, the next release not yet in force", yaml: window, release: "2026-12-01T01:00:00Z", finished: "2026-12-01T01:20:00Z",
             activity: "2026-12-01T01:20:00Z", now: "2026-12-01T23:00:00Z", missed: 0),
        Case(name: "finished, the next two releases moved nothing (machine off)", yaml: window, release: "2026-12-01T01:00:00Z",
             finished: "2026-12-01T01:20:00Z", activity: "2026-12-01T01:20:00Z", now: "2026-12-03T05:00:00Z", missed: 2),
        Case(name: "schedule without window: release instants", yaml: schedule, release: "2026-12-01T00:00:00Z", now: "2026-12-01T17:59:59Z", missed: 2),
        Case(name: "schedule: the release instant itself ends a span", yaml: schedule, release: "2026-12-01T00:00:00Z", now: "2026-12-01T18:00:00Z", missed: 3),
        Case(name: "schedule: activity in the second span", yaml: schedule, release: "2026-12-01T00:00:00Z", activity: "2026-12-01T07:00:00Z",
             now: "2026-12-01T18:00:00Z", missed: 1),
        Case(name: "neither: one a day", yaml: neither, release: "2026-12-01T10:00:00Z", now: "2026-12-04T09:59:59Z", missed: 2),
        Case(name: "neither, finished: the next release is refresh after", yaml: neither, release: "2026-12-01T10:00:00Z",
             finished: "2026-12-01T10:05:00Z", activity: "2026-12-01T10:05:00Z", now: "2026-12-02T12:00:00Z", missed: 1),
    ]

    /// A feed whose release finished once and then, the machine off, missed the next ones;
    /// a later release recorded as begun does not hide those before it.
    @Test func releasesAMachineThatWasOffNeverRecordedCount() {
        let timing = FeedTiming(PlannerTests.feed(Self.window), machineID: nil)
        let state = FeedState(lastRelease: Self.at("2026-12-05T01:00:00Z"), lastSuccess: Self.at("2026-12-01T01:30:00Z"),
                              firstSeen: Self.at("2026-11-01T01:00:00Z"))
        let count = Starvation.count(timing, state: state, lastActivity: Self.at("2026-12-01T01:30:00Z"), now: Self.at("2026-12-05T04:00:00Z"))
        #expect(count.missed == 4, "the windows of 12-02 to 12-05: \(count)")
    }

    @Test(arguments: cases) func counts(_ example: Case) {
        let feed = PlannerTests.feed(example.yaml)
        let timing = FeedTiming(feed, machineID: nil)
        // First seen when its first release began; `last_success` is when a release last finished.
        let state = example.release.map {
            FeedState(lastRelease: Self.at($0), lastReleaseFinished: example.finished.map(Self.at), lastSuccess: example.finished.map(Self.at),
                      firstSeen: Self.at($0))
        }
        let count = Starvation.count(timing, state: state, lastActivity: example.activity.map(Self.at), now: Self.at(example.now))
        #expect(count.missed == example.missed, "\(example.name): \(count)")
    }

    /// The reason shown is the one seen last, unless no pass saw the last missed window open.
    @Test func theReasonIsTheOneSeenInTheLastMissedWindow() {
        let timing = FeedTiming(PlannerTests.feed(Self.window), machineID: nil)
        let state = FeedState(lastRelease: Self.at("2026-12-01T01:00:00Z"), firstSeen: Self.at("2026-12-01T01:00:00Z"))
        let count = Starvation.count(timing, state: state, lastActivity: nil, now: Self.at("2026-12-02T04:00:00Z"))
        #expect(count.missed == 2 && count.lastOpen == Self.at("2026-12-02T01:00:00Z") && count.lastClose == Self.at("2026-12-02T03:00:00Z"))
        #expect(Starvation.reason(count, seen: "network metered", at: Self.at("2026-12-02T01:10:00Z")) == "network metered")
        #expect(Starvation.reason(count, seen: "network metered", at: Self.at("2026-12-01T01:10:00Z")) == "prefetch did not run while it was open")
        #expect(Starvation.reason(count, seen: nil, at: nil) == "prefetch did not run while it was open")
        #expect(Starvation.reason(.none, seen: "network metered", at: Self.at("2026-12-02T01:10:00Z")) == nil)
    }
}
