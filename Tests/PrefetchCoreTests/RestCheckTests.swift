import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// `RestCheck` (the daemon at rest, issue 20): which plans may be trusted until their next
/// wake-up, and the times after which they may not. The folders' side is `CacheStampTests`.
@Suite struct RestCheckTests {
    static func at(_ text: String) -> Instant { PlannerTests.at(text) }
    static let none = StateStore.ChangeStamp(ours: 0, others: 0)

    static func plan(_ yaml: String, now: String, conditions: ConditionSnapshot = ConditionSnapshot(freeBytes: 1 << 40)) -> (Plan, Feed) {
        let feed = PlannerTests.feed(yaml)
        return (Planner.plan(PlanInput(feeds: [feed], conditions: conditions, now: at(now))), feed)
    }

    /// The wake-up as a full pass makes it (`RunPass`): the plan's, the removed feed's grace
    /// end (a feed named `gone`), the first `expires`.
    static func rest(_ plan: Plan, _ feed: Feed, feedRemoval: Instant? = nil) -> RestCheck? {
        let pass = DaemonWakeup.PassTimes(plan: DaemonWakeup.ofPlan(plan, recheck: 60),
                                          removedFeeds: feedRemoval.map { [RemovedFeeds.Grace(feed: "gone", ends: $0)] } ?? [],
                                          expiry: DaemonWakeup.firstExpiry([feed], after: plan.now))
        return RestCheck.after(plan, state: none, cache: CacheStamp(), wakeup: DaemonWakeup.next(pass), wake: ConditionWake(plan, feeds: [feed]))
    }

    /// Work to do now, or work that waits on a condition (whose change no clock announces),
    /// is never at rest; a closed window is, until it opens.
    @Test func onlyAPlanWithNothingDueOrWaitingRests() throws {
        let (due, dueFeed) = Self.plan(PlannerTests.nightly, now: "2026-11-30T03:00:00+01:00")
        #expect(due.feeds[0].items[0].status == .due && Self.rest(due, dueFeed) == nil)

        let metered = "name: f\ntimezone: UTC\nwindow: \"01:00-05:00\"\nconditions: { network: unmetered }\n" + PlannerTests.one
        let (waiting, waitingFeed) = Self.plan(metered, now: "2026-11-30T03:00:00Z", conditions: ConditionSnapshot(metered: true, freeBytes: 1 << 40))
        #expect(waiting.feeds[0].items[0].status == .waiting && Self.rest(waiting, waitingFeed) == nil)

        let (closed, closedFeed) = Self.plan(PlannerTests.nightly, now: "2026-11-30T12:00:00+01:00")
        #expect(closed.feeds[0].items[0].status == .deferred)
        let rest = try #require(Self.rest(closed, closedFeed))
        #expect(rest.until == Self.at("2026-12-01T01:00:00+01:00"), "rests until the window opens")
        #expect(rest.timeHolds(now: Self.at("2026-12-01T00:59:59+01:00"), realNow: 0))
        #expect(!rest.timeHolds(now: Self.at("2026-12-01T01:00:00+01:00"), realNow: 0), "still trusted when the window opened")
        #expect(!rest.timeHolds(now: Self.at("2026-11-30T11:59:59+01:00"), realNow: 0), "trusted with the clock set back before the plan")
    }

    /// `expires` (gc removes the file) and a removed feed's grace end are times no plan row
    /// says: the rest ends at the earliest of them.
    @Test func anExpiryOrAFeedsGraceEndsTheRestFirst() throws {
        let yaml = "name: f\ntimezone: UTC\nwindow: \"01:00-05:00\"\nresources:\n  - url: https://e.com/a.bin\n    expires: 2026-11-30T18:00:00Z\n"
        let (plan, feed) = Self.plan(yaml, now: "2026-11-30T12:00:00Z")
        let rest = try #require(Self.rest(plan, feed))
        #expect(rest.until == Self.at("2026-11-30T18:00:00Z"))
        let graceEnd = Self.at("2026-11-30T13:00:00Z")
        #expect(try #require(Self.rest(plan, feed, feedRemoval: graceEnd)).until == graceEnd)
        #expect(RemovedFeeds.decide(recorded: ["gone": .some(Self.at("2026-11-29T13:00:00Z")), "f": nil], listed: ["f"],
                                    now: Self.at("2026-11-30T12:00:00Z"), grace: TimeSpan(seconds: 2 * 86_400)).graces
                == [RemovedFeeds.Grace(feed: "gone", ends: Self.at("2026-12-01T13:00:00Z"))])
    }

    /// A rest keeps the wake-up its pass said, why included: each resting pass tells it again
    /// (STATUS=), and the rest ends at it, whichever input it came from.
    @Test func aRestKeepsItsWhy() throws {
        let yaml = "name: f\ntimezone: UTC\nwindow: \"01:00-05:00\"\nresources:\n  - url: https://e.com/a.bin\n    expires: 2026-11-30T18:00:00Z\n"
        let (plan, feed) = Self.plan(yaml, now: "2026-11-30T12:00:00Z")
        let expiring = try #require(Self.rest(plan, feed))
        #expect(expiring.wakeup == DaemonWakeup(at: Self.at("2026-11-30T18:00:00Z"), why: .expires(ResourceKey(feed: "f", path: "a.bin"))))
        let graceEnd = Self.at("2026-11-30T13:00:00Z")
        let removing = try #require(Self.rest(plan, feed, feedRemoval: graceEnd))
        #expect(removing.wakeup == DaemonWakeup(at: graceEnd, why: .removedFeedGrace(feed: "gone")) && removing.until == graceEnd)
        // Without either: the window's opening (the row's next; the next release, 02:30, is later).
        let (closed, closedFeed) = Self.plan(PlannerTests.nightly, now: "2026-11-30T12:00:00+01:00")
        let window = try #require(Self.rest(closed, closedFeed))
        #expect(window.wakeup == DaemonWakeup(at: Self.at("2026-12-01T01:00:00+01:00"), why: .windowOpens(feed: "f")))
        // A resting pass hands the same wake-up on.
        let resting = DaemonWakeup.next(DaemonWakeup.PassTimes(plan: window.wakeup))
        #expect(resting == window.wakeup)
    }
}
