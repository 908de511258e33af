import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// The planner and the state store over simulated weeks, against an independent reference.
///
/// Random feeds (every zone of `SimulatedFeed.zones`, fixed and periodic cron, wrap-around
/// windows, lists, days, refresh from 0s to days, jitter, embargoes, expiries) are driven
/// through simulated time with an injected clock: the real planner plans, the real
/// `ReleaseBook` and `RetryDecision` decide what a pass records, a real SQLite state.db
/// records it, and the transfers' outcomes are drawn at random (placed, 304, transient with
/// or without Retry-After, permanent, a mismatch). Runs come at random moments, machines
/// are off for days, conditions come and go, clocks are set back a little, manifest
/// entries change. At every run each resource's state must be the one `ReferencePlanner`
/// derives from SPEC; the recorded releases must be the reference's; nothing is fetched
/// twice for one release after a success; and the daemon's next wake-up is never later
/// than the first moment the reference says work is due.
///
/// A failure prints the seed, the feed's manifest and the first counterexample.
/// `PREFETCH_SIM_FEEDS` (default 500), `PREFETCH_SIM_DAYS` (30) and `PREFETCH_SIM_SEED`
/// run it longer or elsewhere.
@Suite struct PlannerSimulationTests {
    static let environment = ProcessInfo.processInfo.environment
    static let feeds = Int(environment["PREFETCH_SIM_FEEDS"] ?? "") ?? 500
    static let days = Int64(environment["PREFETCH_SIM_DAYS"] ?? "") ?? 30
    static let seed = UInt64(environment["PREFETCH_SIM_SEED"] ?? "") ?? 20_261_201
    static let shards = 8
    /// Only this feed (to replay a counterexample).
    static let only = Int(environment["PREFETCH_SIM_ONLY"] ?? "")

    @Test(arguments: 0..<shards) func feedsOverWeeksAgreeWithTheReference(shard: Int) throws {
        var checked = 0
        for index in stride(from: shard, to: Self.feeds, by: Self.shards) where Self.only.map({ $0 == index }) ?? true {
            let feedSeed = Self.seed &+ UInt64(index) &* 0x9E37_79B9
            var simulation = try Simulation(index: index, seed: feedSeed, days: Self.days)
            if let failure = simulation.run() {
                Issue.record(Comment(rawValue: "seed \(Self.seed), feed \(index) (feed seed \(feedSeed)): \(failure)\n--- manifest ---\n\(simulation.feed.yaml)"))
                return
            }
            checked += simulation.runs
        }
        #expect(checked > 0 || Self.only != nil)
    }
}

/// One feed's simulation.
struct Simulation {
    var feed: SimulatedFeed
    var decoded: Feed
    var reference: ReferencePlanner
    let store: StateStore
    let folder: TemporaryFolder
    var random: SplitMix64
    let start: Int64
    let end: Int64
    var runs = 0

    var histories: [ReferencePlanner.History]
    var feedHistory = ReferencePlanner.FeedHistory()
    var cached: Set<ResourceKey> = []
    var metered = false
    var onAC = true
    /// Releases in which each resource succeeded (placed or a 304), with the entry it had.
    var successes: [Set<String>]
    var etagCounter = 0
    var starvation: ReferenceStarvation
    /// The latest moment a pass ran at (a clock set back runs before it).
    var latestSeen = Instant(seconds: 0)

    init(index: Int, seed: UInt64, days: Int64) throws {
        random = SplitMix64(seed: seed)
        let starts: [Int64] = [1_772_323_200, 1_773_964_800, 1_789_862_400, 1_792_454_400]  // 2026-03-01, 03-20, 09-20, 10-20
        start = starts[Int(random.next() % UInt64(starts.count))] + Int64(random.next() % 86_400)
        end = start + days * 86_400
        feed = SimulatedFeed.random(index, start: start, days: days, using: &random)
        guard let decoded = feed.decoded() else { throw SimulationError.manifest(feed.yaml) }
        self.decoded = decoded
        reference = ReferencePlanner(feed, from: start - 40 * 86_400, to: end + 10 * 86_400)
        folder = try TemporaryFolder()
        store = try StateStore.openForWriting(folder.path + "/state.db")
        histories = Array(repeating: ReferencePlanner.History(), count: feed.items.count)
        starvation = ReferenceStarvation(reference)
        successes = Array(repeating: [], count: feed.items.count)
    }

    enum SimulationError: Error { case manifest(String) }

    func key(_ index: Int) -> ResourceKey { ResourceKey(feed: feed.name, path: feed.items[index].path) }

    func planned(at now: Instant) throws -> (Plan, StateSnapshot) {
        let snapshot = try store.snapshot()
        let input = PlanInput(feeds: [decoded], state: snapshot, cached: CachedFiles(cached, in: [decoded]),
                              conditions: ConditionSnapshot(onAC: onAC, metered: metered, freeBytes: 1 << 50, freeSource: "simulation"),
                              now: now, machineID: MachineID(value: feed.machineID, source: "simulation"))
        return (Planner.plan(input), snapshot)
    }

    /// The simulation, run by run; the first counterexample, or nil.
    mutating func run() -> String? {
        var now = Instant(seconds: start).advanced(byNanoseconds: Int64(random.next() % 1_000_000_000))
        var latest = now
        while now.seconds < end {
            do {
                if let failure = try pass(at: &now) { return failure }
            } catch {
                return "at \(now): \(error)"
            }
            runs += 1
            // The next run: minutes to hours later, sometimes days (the machine was off), once in a
            // while a little earlier than the last (a clock set back, within the hour it is believed).
            let draw = random.next() % 100
            let gap: Int64 = draw < 70 ? Int64(60 + random.next() % 5400) : draw < 93 ? Int64(random.next() % 21_600)
                : draw < 97 ? Int64(86_400 + random.next() % (3 * 86_400)) : -Int64(random.next() % 1800)
            now = now.advanced(bySeconds: gap).advanced(byNanoseconds: Int64(random.next() % 1_000_000_000))
            // Set back at most 45 minutes behind the latest moment seen: within the hour that the
            // planner still believes recorded times (deeper set-backs have their own tests).
            now = max(now, latest.advanced(bySeconds: -2700))
            latest = max(latest, now)
            if random.next() % 100 < 15 { metered.toggle() }
            if random.next() % 100 < 15 { onAC.toggle() }
            if random.next() % 100 < 3 { changeAnEntry() }
        }
        return nil
    }

    /// The operator pins a new version: another sha256 or size for one entry.
    mutating func changeAnEntry() {
        let index = Int(random.next() % UInt64(feed.items.count))
        if feed.items[index].sha256 != nil || random.next() % 2 == 0 {
            feed.items[index].sha256 = SimulatedFeed.hex(&random)
        } else {
            feed.items[index].size = 1000 + random.next() % 100_000
        }
        decoded = feed.decoded()!
    }

    /// One `run` at `now` (advanced by the pass's transfers): plan, compare, transfer, record.
    mutating func pass(at now: inout Instant) throws -> String? {
        let (plan, snapshot) = try planned(at: now)
        guard let feedPlan = plan.feeds.first else { return "no feed in the plan" }
        // 1. Every resource's state is the reference's.
        for (index, item) in feed.items.enumerated() {
            let planned = try itemPlan(feedPlan, item.path)
            let (expected, why) = reference.status(item, histories[index], feedHistory, at: now, metered: metered, onAC: onAC)
            if planned.status != expected {
                return "at \(now) (\(SimulatedFeed.rfc3339(now.seconds))), \(item.path): the planner says \(planned.status) (\(planned.reason), next \(planned.next.map { "\($0)" } ?? "-")), the reference \(expected) (\(why)); \(describe(index))"
            }
        }
        // 1b. The windows missed in a row (SPEC §6) are the reference's.
        if starvation.firstSeen == nil { starvation.firstSeen = now; starvation.record(feedHistory, at: now) }
        let activity = snapshot.resources.values.compactMap(\.validatedAt).max()
        let counted = Starvation.count(FeedTiming(decoded, machineID: feed.machineID), state: snapshot.feeds[feed.name],
                                       lastActivity: activity, now: now).missed
        let expectedMissed = starvation.missed(reference, at: now)
        // A clock set back behind what state.db recorded sees the recorded state, not the past's: not compared.
        if now >= latestSeen, counted != expectedMissed {
            let timing = FeedTiming(decoded, machineID: feed.machineID)
            let since = Starvation.pendingSince(timing, state: snapshot.feeds[feed.name], now: now)
            return "at \(now) (\(SimulatedFeed.rfc3339(now.seconds))): \(counted) windows missed, the reference says \(expectedMissed); \(describe(nil)); history \(starvation.histories.suffix(3)); product since \(since.map { "\($0)" } ?? "-"), activity \(activity.map { "\($0)" } ?? "-"), spans \(since.map { Starvation.spans(timing, after: $0, through: now).map { "\($0.open)-\($0.close)" } } ?? []); reference since \(starvation.pendingSince(reference, at: now).map { "\($0)" } ?? "-"), spans \((0..<8).compactMap { starvation.span($0, reference, now: now) }.map { "\($0.open)-\($0.close)" }), successes \(starvation.successes.suffix(3))"
        }
        latestSeen = max(latestSeen, now)
        // 2. The release a pass records is the reference's.
        let releases = ReleaseBook.releases(plan, snapshot)
        // A feed first seen: its pending release is taken to begin one jitter before now (it is due at once).
        let expectedRelease = reference.release(at: now, feedHistory) ?? feedHistory.lastRelease ?? now.advanced(bySeconds: -reference.jitter)
        if releases.first != expectedRelease {
            return "at \(now): the pass works on release \(releases.first.map { "\($0)" } ?? "-"), the reference on \(expectedRelease); \(describe(nil))"
        }
        try ReleaseBook.begin(plan, snapshot, store)
        if feedPlan.items.contains(where: { $0.status == .due }), feedHistory.lastRelease != expectedRelease {
            let firstSeen = feed.mode == .neither && feedHistory.lastRelease == nil ? now : nil
            feedHistory = ReferencePlanner.FeedHistory(lastRelease: expectedRelease, lastFinished: nil, firstSeen: firstSeen)
        }
        starvation.record(feedHistory, at: now)
        // 3. The transfers, in the plan's order, each with its outcome.
        var clock = now
        for key in plan.order {
            guard let index = feed.items.firstIndex(where: { $0.path == key.path }) else { continue }
            if let failure = try transfer(index, release: expectedRelease, snapshot: snapshot, clock: &clock) { return failure }
        }
        now = clock.advanced(byNanoseconds: 1_000_000)
        // 4. The releases the pass finished, as the reference sees them.
        var (after, snapshotAfter) = try planned(at: now)
        if try ReleaseBook.finish(after, snapshotAfter, store, at: now) { (after, snapshotAfter) = try planned(at: now) }
        // SPEC §5: a release is finished when every resource it made due has been validated since
        // it began or failed for it; one waiting for its window, jitter, a condition or a retry
        // keeps it open, one under embargo or expired does not.
        let open = feed.items.enumerated().contains { index, item in
            let (status, why) = reference.status(item, histories[index], feedHistory, at: now, metered: metered, onAC: onAC)
            switch status {
            case .due, .waiting, .backoff: return true
            case .deferred: return why != "embargo"
            case .fresh, .failed, .expired: return false
            }
        }
        if !open, feedHistory.lastRelease != nil, feedHistory.lastFinished == nil { feedHistory.lastFinished = now }
        starvation.record(feedHistory, at: now)
        let recorded = try store.feedStates()[feed.name]
        if recorded?.lastRelease != feedHistory.lastRelease || recorded?.lastReleaseFinished != feedHistory.lastFinished {
            return "at \(now): state.db has release \(recorded?.lastRelease.map { "\($0)" } ?? "-") finished \(recorded?.lastReleaseFinished.map { "\($0)" } ?? "-"), the reference \(feedHistory.lastRelease.map { "\($0)" } ?? "-") finished \(feedHistory.lastFinished.map { "\($0)" } ?? "-")"
        }
        // 5. The daemon wakes no later than the first moment work is due again. (Work that waits
        // for a condition is rechecked every `recheckSeconds`: no clock says when it holds.)
        let wake = DaemonWakeup.ofPlan(after)?.at
        // The same instant the rule gave before it said why (issue 36: the old body, kept as the oracle).
        if wake != DaemonWakeupTests.oldNextWakeup(after, recheck: DaemonWakeup.recheckSeconds) {
            return "at \(now): DaemonWakeup.ofPlan gives \(wake.map { "\($0)" } ?? "nil"), the old rule "
                + "\(DaemonWakeupTests.oldNextWakeup(after, recheck: DaemonWakeup.recheckSeconds).map { "\($0)" } ?? "nil"); \(describe(nil))"
        }
        let horizon: Int64 = 8 * 86_400
        // Only the moments before the wake-up need a look: none of them may have work due.
        for moment in reference.candidates(after: now, items: feed.items, histories: histories, feedHistory: feedHistory, horizon: horizon)
        where wake.map({ moment < $0 }) ?? true {
            let due = feed.items.enumerated().contains { index, item in
                reference.status(item, histories[index], feedHistory, at: moment, metered: metered, onAC: onAC).0 == .due
            }
            if due {
                return "at \(now): the daemon would sleep until \(wake.map { "\($0)" } ?? "never"), but work is due at \(moment) (\(SimulatedFeed.rfc3339(moment.seconds))); \(describe(nil))"
            }
        }
        return nil
    }

    func itemPlan(_ feedPlan: FeedPlan, _ path: String) throws -> PlanItem {
        guard let item = feedPlan.items.first(where: { $0.path == path }) else { throw SimulationError.manifest("no row for \(path)") }
        return item
    }

    func describe(_ index: Int?) -> String {
        var text = "feed \(feedHistory)"
        if let index { text += ", history \(histories[index])" }
        return text + ", metered \(metered), AC \(onAC), cached \(cached.map(\.path).sorted())"
    }

    /// One transfer and its in-run retries, recorded as the engine records them.
    mutating func transfer(_ index: Int, release: Instant, snapshot: StateSnapshot, clock: inout Instant) throws -> String? {
        let item = feed.items[index]
        let resource = decoded.resources[index]
        let key = key(index)
        let urlHash = resource.url.identityHash
        let entry = resource.fingerprint(identity: urlHash)
        let referenceEntry = ReferencePlanner.entry(item)
        var failures = histories[index].failureRelease == release && histories[index].failureEntry == referenceEntry ? histories[index].failures : 0
        while true {
            clock = clock.advanced(byNanoseconds: Int64(1_000_000 + random.next() % 400_000_000))
            // No transfer outside its window, before its embargo ends, or after it expires.
            if !reference.isOpen(clock) { return nil }  // the window closed during the pass: paused
            if let notBefore = item.notBefore, clock.seconds < notBefore { return "at \(clock), \(item.path): fetched under embargo" }
            if let expires = item.expires, clock.seconds >= expires { return nil }  // the engine does not start it
            let history = histories[index]
            let changed = history.cached && ((item.sha256 != nil && history.recordedSha256 != item.sha256)
                || (item.size != nil && history.recordedSize != item.size))
            let revalidates = history.cached && !changed && history.validatedAt != nil
            let draw = random.next() % 100
            if draw < 65 || (draw < 80 && revalidates) {
                let placed = !(revalidates && draw >= 40)
                etagCounter += 1
                let sha = item.sha256 ?? SimulatedFeed.hex(&random)
                let size = item.size ?? (1000 + random.next() % 100_000)
                try store.recordValidated(key, urlHash: urlHash, validators: Validators(etag: "\"e\(etagCounter)\""),
                                          length: placed ? size : nil, sha256: placed ? sha : nil, placed: placed, at: clock)
                if placed {
                    cached.insert(key)
                    histories[index].cached = true
                    histories[index].recordedSha256 = sha
                    histories[index].recordedSize = size
                }
                histories[index].validatedAt = clock
                starvation.successes.append(clock)
                histories[index].failures = 0
                histories[index].permanent = false
                histories[index].nextRetry = nil
                histories[index].failureRelease = nil
                // Nothing is fetched twice for one release after a success (unless the entry changed).
                let mark = "\(release.nanoseconds)|\(referenceEntry)"
                if successes[index].contains(mark) {
                    return "at \(clock), \(item.path): fetched again in release \(release) after a success"
                }
                successes[index].insert(mark)
                return nil
            }
            let kind: TransferFailure.Kind = draw < 88 ? .transient : draw < 94 ? .permanent : .mismatch
            let failure = TransferFailure(kind: kind, message: "simulated", retryAfter: draw % 3 == 0 ? Int64(random.next() % 200) : nil,
                                          discardPartial: false, httpStatus: kind == .permanent ? 404 : 503)
            failures += 1
            let decision = RetryDecision.after(failure, failures: failures, policy: decoded.retry, now: clock, using: &random)
            try store.recordFailure(key, urlHash: urlHash, entry: entry, release: release, error: "simulated",
                                    permanent: kind == .permanent, nextRetry: decision.nextRetry, at: clock)
            histories[index].failures = failures
            histories[index].failureRelease = release
            histories[index].failureEntry = referenceEntry
            histories[index].permanent = kind == .permanent
            histories[index].nextRetry = decision.nextRetry
            guard decision.inRun, let retry = decision.nextRetry else { return nil }
            clock = retry
        }
    }
}
