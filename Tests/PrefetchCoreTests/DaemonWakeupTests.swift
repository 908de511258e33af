import Foundation
import Testing
@testable import PrefetchCore

/// The daemon's next wake-up and why (issue 36): `ofPlan` gives the instant the old rule gave,
/// `next` weighs the plan against a generation switch, removed feeds, `expires` and the
/// sources, ties go to the first input, and the why is said in words that never say "error".
@Suite struct DaemonWakeupTests {
    static let at = PlannerTests.at
    static let key = PlannerTests.key  // f/a.bin

    /// `RunPass.nextWakeup` as it was before `DaemonWakeup` (verbatim): the oracle.
    static func oldNextWakeup(_ plan: Plan, recheck: Int64) -> Instant? {
        var times: [Instant] = []
        for feed in plan.feeds {
            times += feed.nextReleases
            for item in feed.items.allValues {
                if let next = item.next { times.append(next) }
                if item.status == .waiting { times.append(plan.now.advanced(bySeconds: recheck)) }
                if item.status == .due { times.append(plan.now) }
            }
        }
        if let more = plan.cache?.moreRoomAt { times.append(more) }  // room for what the cap holds back
        return times.filter { $0 >= plan.now }.min()
    }

    static func plan(_ c: PlannerTests.Case) -> Plan {
        let feed = PlannerTests.feed(c.yaml)
        return Planner.plan(PlanInput(feeds: [feed], state: c.state, cached: CachedFiles(c.cached ? [key] : [], in: [feed]),
                                      conditions: c.conditions, now: at(c.now), machineID: c.machine.map { MachineID(value: $0, source: "test") },
                                      partialFiles: c.partialFile.map { [key: $0] } ?? [:]))
    }

    @Test func ofPlanGivesTheOldInstantForEveryPlannerCase() {
        for c in PlannerTests.cases {
            let plan = Self.plan(c)
            for recheck: Int64 in [60, 0, 3600] {
                #expect(DaemonWakeup.ofPlan(plan, recheck: recheck)?.at == Self.oldNextWakeup(plan, recheck: recheck), "\(c.name), recheck \(recheck)")
            }
        }
        for pin in FeedWakeupPinTests.pins {
            let plan = FeedWakeupPinTests.plan(pin)
            #expect(DaemonWakeup.ofPlan(plan)?.at == Self.oldNextWakeup(plan, recheck: 60), "\(pin.name)")
        }
    }

    /// Seeded plans of one to three feeds (the planner cases' manifests under other names, at
    /// random moments, readings, caps): the same instant as the old rule.
    @Test func ofPlanGivesTheOldInstantForSeededPlans() {
        let seed = UInt64(ProcessInfo.processInfo.environment["PREFETCH_WAKEUP_SEED"] ?? "") ?? 36
        var random = SplitMix64(seed: seed)
        let manifests = Array(Set(PlannerTests.cases.map(\.yaml))).sorted()
        let states = PlannerTests.cases.map(\.state)
        let start = Self.at("2026-11-29T00:00:00Z")
        for round in 0..<300 {
            let count = Int.random(in: 1...3, using: &random)
            let feeds = (0..<count).map { index in
                let yaml = manifests.randomElement(using: &random)!
                return PlannerTests.feed("name: \(index == 0 ? "f" : "g\(index)")\n" + yaml.replacingOccurrences(of: "name: f\n", with: ""))
            }
            let now = start.advanced(bySeconds: Int64.random(in: 0..<(8 * 86_400), using: &random))
            let onAC = Bool.random(using: &random), level = Int.random(in: 0...100, using: &random)
            let metered = Bool.random(using: &random), roomy = Bool.random(using: &random)
            let conditions = ConditionSnapshot(onAC: onAC, batteryLevel: level, metered: metered, freeBytes: roomy ? 1 << 40 : 1 << 20,
                                               freeSource: "test")
            var usage = CacheUsage(used: UInt64.random(in: 0..<(4 << 20), using: &random))
            if Bool.random(using: &random) { usage.moreRoomIn = Int64.random(in: 1...60, using: &random) }
            let capped = Bool.random(using: &random), cached = Bool.random(using: &random), machine = Bool.random(using: &random)
            let state = states.randomElement(using: &random)!
            let plan = Planner.plan(PlanInput(feeds: feeds, state: state, cached: CachedFiles(cached ? [Self.key] : [], in: feeds),
                                              conditions: conditions, now: now,
                                              machineID: machine ? MachineID(value: "kiosk-17", source: "test") : nil,
                                              maxCacheSize: capped ? 2 << 20 : nil, cacheUsage: capped ? usage : nil))
            #expect(DaemonWakeup.ofPlan(plan)?.at == Self.oldNextWakeup(plan, recheck: 60),
                    "seed \(seed) round \(round) (PREFETCH_WAKEUP_SEED): \(feeds.map(\.name)) at \(now)")
        }
    }

    /// The daemon's column beside `FeedWakeupPinTests`' per-feed one: the instant and why.
    static let pinned: [String: DaemonWakeup?] = [
        "P1": DaemonWakeup(at: at("2026-11-30T03:00:00+01:00"), why: .due(key)),
        "P2": DaemonWakeup(at: at("2026-12-01T01:00:00+01:00"), why: .windowOpens(feed: "f")),
        "P3": DaemonWakeup(at: at("2026-11-30T03:10:00+01:00"), why: .retry(key)),
        // P4, P5: the failed or fresh row's next is the release itself; the release is said.
        "P4": DaemonWakeup(at: at("2026-12-01T02:30:00+01:00"), why: .release(feed: "f")),
        "P5": DaemonWakeup(at: at("2026-12-01T02:30:00+01:00"), why: .release(feed: "f")),
        "P6": DaemonWakeup(at: at("2026-11-30T14:45:00+01:00"), why: .turnsStale(key)),
        "P7": DaemonWakeup(at: at("2026-11-30T03:01:00+01:00"), why: .conditionRecheck(key)),
        "P8": DaemonWakeup(at: at("2026-11-30T03:01:00+01:00"), why: .conditionRecheck(key)),
        "P9": DaemonWakeup(at: at("2026-12-01T03:00:00+01:00"), why: .release(feed: "f")),
        "P10": DaemonWakeup(at: at("2026-11-30T04:00:00+01:00"), why: .embargoEnds(key)),
        "P11": nil,
        // P12: a row's next equal to now counts here (the per-feed rule drops it).
        "P12": DaemonWakeup(at: at("2026-11-30T03:00:00Z"), why: .turnsStale(key)),
        "P13": DaemonWakeup(at: at("2026-11-30T03:00:10+01:00"), why: .moreRoom),
        "P14": DaemonWakeup(at: at("2026-11-30T03:00:00+01:00"), why: .due(key)),
        "P15": nil,
    ]

    @Test func thePinnedPlansWakeTheDaemonForTheseReasons() throws {
        for pin in FeedWakeupPinTests.pins {
            let label = String(pin.name.prefix { $0 != " " })
            let expected = try #require(Self.pinned[label], "\(label) has no daemon value")
            #expect(DaemonWakeup.ofPlan(FeedWakeupPinTests.plan(pin)) == expected, "\(pin.name)")
        }
    }

    /// The kinds the pinned plans do not show: jitter, an origin's hold, and `next`'s own inputs.
    @Test func eachKindOfWhy() {
        let jittered = Self.plan(PlannerTests.Case(
            name: "jitter", yaml: "name: f\n" + PlannerTests.berlin + "schedule: \"0 3 * * *\"\njitter: 2h\n" + PlannerTests.one,
            now: "2026-11-30T03:30:00+01:00", state: PlannerTests.state(validated: "2026-11-29T04:00:00+01:00"), cached: true,
            machine: "kiosk-17", expect: (.deferred, "jitter", "2026-11-30T03:48:34+01:00")))
        #expect(DaemonWakeup.ofPlan(jittered) == DaemonWakeup(at: Self.at("2026-11-30T03:48:34+01:00"), why: .jitterEnds(feed: "f")))

        let now = Self.at("2026-11-30T03:00:00+01:00")
        var state = StateSnapshot()
        let until = now.advanced(bySeconds: 300)
        state.originHolds["https://down.example:443"] = OriginHold(origin: "https://down.example:443", until: until, reason: "HTTP 503",
                                                                    since: now, failures: 1)
        let held = Planner.plan(PlanInput(feeds: [PlannerTests.feed("name: f\nrefresh: 1h\nresources:\n  - url: https://down.example/a.bin\n")],
                                          state: state, conditions: ConditionSnapshot(freeBytes: 1 << 40, freeSource: "test"), now: now))
        #expect(DaemonWakeup.ofPlan(held) == DaemonWakeup(at: until, why: .originHoldEnds(Self.key)))

        let release = DaemonWakeup(at: now.advanced(bySeconds: 86_400), why: .release(feed: "f"))
        #expect(DaemonWakeup.next(DaemonWakeup.PassTimes(plan: release, generationSwitch: (at: now, feed: "lobby")))
                == DaemonWakeup(at: now.advanced(bySeconds: CacheUsage.generationGrace), why: .generationGrace(feed: "lobby")))
        #expect(DaemonWakeup.next(DaemonWakeup.PassTimes(plan: release, removedFeeds: [RemovedFeeds.Grace(feed: "old", ends: now.advanced(bySeconds: 7200)),
                                                                                       RemovedFeeds.Grace(feed: "older", ends: now.advanced(bySeconds: 3600))]))
                == DaemonWakeup(at: now.advanced(bySeconds: 3600), why: .removedFeedGrace(feed: "older")))
        #expect(DaemonWakeup.next(DaemonWakeup.PassTimes(plan: release, expiry: (at: now.advanced(bySeconds: 10), key: Self.key)))
                == DaemonWakeup(at: now.advanced(bySeconds: 10), why: .expires(Self.key)))
        #expect(DaemonWakeup.next(DaemonWakeup.PassTimes(plan: release), sources: [(label: "site", due: now.advanced(bySeconds: 900))])
                == DaemonWakeup(at: now.advanced(bySeconds: 900), why: .source(label: "site")))
    }

    /// The earliest `expires` still to come, of any feed; none already passed.
    @Test func theFirstExpiryIsTheEarliestStillToCome() {
        let f = PlannerTests.feed("name: f\nresources:\n  - url: https://e.com/a.bin\n    expires: 2026-11-30T18:00:00Z\n"
                                  + "  - url: https://e.com/old.bin\n    expires: 2026-11-01T00:00:00Z\n")
        let g = PlannerTests.feed("name: g\nresources:\n  - url: https://e.com/b.bin\n    expires: 2026-11-30T13:00:00Z\n  - url: https://e.com/c.bin\n")
        let first = DaemonWakeup.firstExpiry([f, g], after: Self.at("2026-11-30T12:00:00Z"))
        #expect(first?.at == Self.at("2026-11-30T13:00:00Z") && first?.key == ResourceKey(feed: "g", path: "b.bin"))
        #expect(DaemonWakeup.firstExpiry([f, g], after: Self.at("2026-11-30T18:00:00Z")) == nil)
    }

    /// Every text, and none says "error" (a STATUS= line that does is one a pass had: MetricsTests).
    @Test func theWhyInWords() {
        let texts: [(DaemonWakeup.Why, String)] = [
            (.due(Self.key), "work due: f/a.bin"),
            (.release(feed: "lobby"), "release of lobby"),
            (.windowOpens(feed: "lobby"), "window of lobby opens"),
            (.jitterEnds(feed: "lobby"), "jitter of lobby ends"),
            (.embargoEnds(Self.key), "embargo of f/a.bin ends"),
            (.retry(Self.key), "retry of f/a.bin"),
            (.originHoldEnds(Self.key), "origin hold of f/a.bin ends"),
            (.turnsStale(Self.key), "f/a.bin turns stale"),
            (.triedAgain(Self.key), "f/a.bin tried again"),
            (.changes(Self.key), "f/a.bin changes state"),
            (.conditionRecheck(Self.key), "conditions re-checked for f/a.bin"),
            (.moreRoom, "a previous generation becomes room"),
            (.generationGrace(feed: "lobby"), "previous generation of lobby becomes room"),
            (.removedFeedGrace(feed: "old"), "removed feed old's grace ends"),
            (.expires(Self.key), "f/a.bin expires"),
            (.source(label: "site"), "feed source site due"),
        ]
        for (why, text) in texts {
            #expect(why.text == text)
            #expect(!why.text.lowercased().contains("error"), "\(why)")
        }
        let clock = ZoneClock(TimeZone(identifier: "Europe/Berlin")!)
        #expect(DaemonWakeup.line(at: Instant(seconds: 1_796_002_804), why: "release of lobby", clock: clock)
                == "next wake-up Mon 2026-11-30 02:40:04 +01:00 (release of lobby)")
        #expect(DaemonWakeup.line(at: nil, why: "release of lobby", clock: clock) == "nothing scheduled, conditions re-checked every minute")
    }

    /// On a tie the instant is the same; the why goes to the first input: due work before a
    /// row, a release before a row, the plan before a generation switch, the pass before the
    /// sources, a source before a later-listed one. A source due in the past is kept.
    @Test func tiesGoToTheFirstInput() {
        // A due row (b.bin, not cached) and a fresh row whose next is now (a.bin, as P12).
        let feed = PlannerTests.feed("name: f\ntimezone: UTC\nrefresh: 1h\nresources:\n  - url: https://e.com/a.bin\n    size: 1MiB\n"
                                     + "  - url: https://e.com/b.bin\n")
        let now = Self.at("2026-11-30T03:00:00Z")
        let both = Planner.plan(PlanInput(feeds: [feed], state: PlannerTests.state(validated: "2026-11-30T02:00:00Z", lastRelease: "2026-11-30T01:30:00Z"),
                                          cached: CachedFiles([Self.key], in: [feed]),
                                          conditions: ConditionSnapshot(freeBytes: 1 << 40, freeSource: "test"), now: now))
        #expect(both.feeds[0].items.map(\.status) == [.due, .fresh] && both.feeds[0].items[1].next == now)
        #expect(DaemonWakeup.ofPlan(both) == DaemonWakeup(at: now, why: .due(ResourceKey(feed: "f", path: "b.bin"))))

        let planned = DaemonWakeup(at: now.advanced(bySeconds: 60), why: .release(feed: "f"))
        #expect(DaemonWakeup.next(DaemonWakeup.PassTimes(plan: planned, generationSwitch: (at: now, feed: "g"))) == planned)
        #expect(DaemonWakeup.next(DaemonWakeup.PassTimes(plan: planned), sources: [(label: "s", due: planned.at)]) == planned)
        #expect(DaemonWakeup.next(DaemonWakeup.PassTimes(), sources: [(label: "s1", due: now), (label: "s2", due: now)])
                == DaemonWakeup(at: now, why: .source(label: "s1")))
        #expect(DaemonWakeup.next(DaemonWakeup.PassTimes(removedFeeds: [RemovedFeeds.Grace(feed: "old", ends: now)], expiry: (at: now, key: Self.key)))
                == DaemonWakeup(at: now, why: .removedFeedGrace(feed: "old")))
        let past = now.advanced(bySeconds: -3600)
        #expect(DaemonWakeup.next(DaemonWakeup.PassTimes(plan: planned), sources: [(label: "s", due: past)])
                == DaemonWakeup(at: past, why: .source(label: "s")))
        #expect(DaemonWakeup.next(DaemonWakeup.PassTimes()) == nil)
    }

    /// The machine clamps whatever `next` decides (1 s to 60 s), and only that.
    @Test func theClampStaysInTheMachine() {
        let now = Self.at("2026-11-30T03:00:00Z")
        let cases: [(DaemonWakeup.PassTimes, [(label: String, due: Instant)], Instant)] = [
            (DaemonWakeup.PassTimes(plan: DaemonWakeup(at: now.advanced(bySeconds: -5), why: .due(Self.key))), [], now.advanced(bySeconds: 1)),
            (DaemonWakeup.PassTimes(generationSwitch: (at: now, feed: "g")), [], now.advanced(bySeconds: 60)),
            (DaemonWakeup.PassTimes(expiry: (at: now.advanced(bySeconds: 10), key: Self.key)), [], now.advanced(bySeconds: 10)),
            (DaemonWakeup.PassTimes(removedFeeds: [RemovedFeeds.Grace(feed: "old", ends: now.advanced(bySeconds: 30))]), [], now.advanced(bySeconds: 30)),
            (DaemonWakeup.PassTimes(plan: DaemonWakeup(at: now.advanced(bySeconds: 86_400), why: .release(feed: "f"))), [], now.advanced(bySeconds: 60)),
            (DaemonWakeup.PassTimes(), [(label: "s", due: now.advanced(bySeconds: 20))], now.advanced(bySeconds: 20)),
            (DaemonWakeup.PassTimes(), [], now.advanced(bySeconds: 60)),
        ]
        for (pass, sources, until) in cases {
            var machine = DaemonStateMachine()
            #expect(machine.handle(.started(at: now)) == .runPass)
            #expect(machine.handle(.passEnded(nextWakeup: DaemonWakeup.next(pass, sources: sources)?.at, at: now)) == .sleep(until: until))
        }
    }
}
