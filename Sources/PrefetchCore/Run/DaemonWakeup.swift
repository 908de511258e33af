/// When the daemon wakes next, and why (SPEC §2): the one rule, pure — it reads no clock, no
/// state and no file; the callers hand it what they read, each at the moment it is read today.
///
/// Its inputs: the plan made after the pass (`ofPlan`: due work, releases, the rows' `next` —
/// a retry, an origin hold's end, an embargo's end, a window opening, jitter, a copy turning
/// stale — a minute on for work waiting on a condition, and the room the cache cap waits
/// for), or at rest the wake-up the rest keeps; a generation switch while the cap holds work
/// back (`CacheUsage.generationGrace` after it); each removed feed's grace end; the earliest
/// `expires` still to come; and each feed source's due time. `next` is the only place that
/// weighs them against each other. On a tie the first in that order wins (so does the first
/// feed, and within a feed due work, then a release, then a row, then a re-check): the
/// instant is the same either way, only the why differs.
///
/// `DaemonStateMachine` only clamps the instant (1 s to 60 s). The per-feed value of `status`
/// and the metrics is another rule (`FeedPlan.nextScheduledWork(at:)`), sharing the scan of
/// the rows (`FeedPlanTimes`), not the rule.
struct DaemonWakeup: Equatable, Sendable {
    let at: Instant
    let why: Why

    /// Work waiting on a condition (power, network, free space, a budget) is re-checked at
    /// least this often: no clock says when it holds again.
    static let recheckSeconds: Int64 = 60

    enum Why: Equatable, Sendable {
        /// A row is due (work left that the pass could not do).
        case due(ResourceKey)
        /// The feed's next release (nominal: its jitter shows as a `jitter` row then).
        case release(feed: String)
        /// A `deferred` row waits for a window to open.
        case windowOpens(feed: String)
        /// A `deferred` row waits for the feed's jitter.
        case jitterEnds(feed: String)
        case embargoEnds(ResourceKey)
        /// A `backoff` row's retry; or its origin's hold ending.
        case retry(ResourceKey)
        case originHoldEnds(ResourceKey)
        /// A fresh copy turns stale.
        case turnsStale(ResourceKey)
        /// A failed row is tried again (at the next release's gate).
        case triedAgain(ResourceKey)
        /// A row of another state whose `next` came first (none has one today).
        case changes(ResourceKey)
        /// Work waiting on a condition, re-checked `recheckSeconds` after the plan.
        case conditionRecheck(ResourceKey)
        /// A previous generation becomes room for what the cache cap holds back (the plan's `moreRoomAt`).
        case moreRoom
        /// A feed just switched generation: its previous one becomes room `generationGrace` later.
        case generationGrace(feed: String)
        case removedFeedGrace(feed: String)
        case expires(ResourceKey)
        case source(label: String)

        /// What STATUS= and the journal say, in parentheses after the time. Never the word
        /// "error": a status that says it is one a pass had (MetricsTests).
        var text: String {
            switch self {
            case .due(let key): "work due: " + Self.name(key)
            case .release(let feed): "release of \(feed)"
            case .windowOpens(let feed): "window of \(feed) opens"
            case .jitterEnds(let feed): "jitter of \(feed) ends"
            case .embargoEnds(let key): "embargo of \(Self.name(key)) ends"
            case .retry(let key): "retry of " + Self.name(key)
            case .originHoldEnds(let key): "origin hold of \(Self.name(key)) ends"
            case .turnsStale(let key): Self.name(key) + " turns stale"
            case .triedAgain(let key): Self.name(key) + " tried again"
            case .changes(let key): Self.name(key) + " changes state"
            case .conditionRecheck(let key): "conditions re-checked for " + Self.name(key)
            case .moreRoom: "a previous generation becomes room"
            case .generationGrace(let feed): "previous generation of \(feed) becomes room"
            case .removedFeedGrace(let feed): "removed feed \(feed)'s grace ends"
            case .expires(let key): Self.name(key) + " expires"
            case .source(let label): "feed source \(label) due"
            }
        }

        private static func name(_ key: ResourceKey) -> String { key.feed + "/" + key.path }
    }

    /// What a pass knows of its next wake-up; the sources' due times are read after it.
    struct PassTimes: Sendable {
        /// The plan's wake-up (`ofPlan`); at rest, the wake-up the rest keeps.
        var plan: DaemonWakeup? = nil
        /// When a `consistency: release` feed switched generation while the cap held work back.
        var generationSwitch: (at: Instant, feed: String)? = nil
        /// Feeds whose manifest is gone, still in their grace (`RemovedFeeds`).
        var removedFeeds: [RemovedFeeds.Grace] = []
        /// The earliest `expires` after the plan's moment (`firstExpiry`).
        var expiry: (at: Instant, key: ResourceKey)? = nil
    }

    /// The plan's part: the earliest instant at or after `plan.now` among due work (now), each
    /// feed's releases, each row's `next`, `recheck` seconds on for waiting work, and the
    /// room the cap waits for: the same set, and so the same instant, as the rule it replaced
    /// (`RunPass.nextWakeup`, kept verbatim in `DaemonWakeupTests` as the oracle). The why is
    /// made only when a candidate wins, not once per row.
    static func ofPlan(_ plan: Plan, recheck: Int64 = DaemonWakeup.recheckSeconds) -> DaemonWakeup? {
        var best: DaemonWakeup?
        func consider(_ at: Instant, _ why: () -> Why) {
            if at >= plan.now, best.map({ at < $0.at }) ?? true { best = DaemonWakeup(at: at, why: why()) }
        }
        for feed in plan.feeds {
            let found = feed.times(from: plan.now, inclusive: true)
            if let row = found.firstDue { consider(plan.now) { .due(rowKey(feed, row)) } }
            if let earliest = found.earliest { consider(earliest.at) { cause(of: earliest.source, in: feed) } }
            if let row = found.firstWaiting { consider(plan.now.advanced(bySeconds: recheck)) { .conditionRecheck(rowKey(feed, row)) } }
        }
        if let more = plan.cache?.moreRoomAt { consider(more) { .moreRoom } }
        return best
    }

    /// Everything combined: the pass's part, then each source's due time (not held against
    /// the clock: a source due in the past wakes the daemon at once, as a due row does).
    static func next(_ pass: PassTimes, sources: [(label: String, due: Instant)] = []) -> DaemonWakeup? {
        var best = pass.plan
        func consider(_ at: Instant, _ why: Why) {
            if best.map({ at < $0.at }) ?? true { best = DaemonWakeup(at: at, why: why) }
        }
        if let switched = pass.generationSwitch {
            consider(switched.at.advanced(bySeconds: CacheUsage.generationGrace), .generationGrace(feed: switched.feed))
        }
        for removed in pass.removedFeeds { consider(removed.ends, .removedFeedGrace(feed: removed.feed)) }
        if let expiry = pass.expiry { consider(expiry.at, .expires(expiry.key)) }
        for source in sources { consider(source.due, .source(label: source.label)) }
        return best
    }

    /// The earliest `expires` of `feeds`' resources after `now` (`gc` removes the file then).
    static func firstExpiry(_ feeds: [Feed], after now: Instant) -> (at: Instant, key: ResourceKey)? {
        var first: (at: Instant, key: ResourceKey)?
        for feed in feeds {
            for resource in feed.resources {
                if let expires = resource.expires, expires > now, first.map({ expires < $0.at }) ?? true {
                    first = (expires, ResourceKey(feed: feed.name, path: resource.path))
                }
            }
        }
        return first
    }

    /// `next wake-up Mon 2026-11-30 02:40:04 +01:00 (release of lobby)`, or that nothing is
    /// scheduled: the daemon's STATUS= line and its journal line say it alike.
    static func line(at: Instant?, why: String?, clock: ZoneClock) -> String {
        guard let at else { return "nothing scheduled, conditions re-checked every minute" }
        return "next wake-up " + TimeFormat.local(at, clock: clock, withUTC: false) + (why.map { " (\($0))" } ?? "")
    }

    private static func rowKey(_ feed: FeedPlan, _ row: Int) -> ResourceKey {
        ResourceKey(feed: feed.name, path: feed.items.path(at: row))
    }

    /// Why a row's `next` (or the feed's release) comes: by the row's state and reason.
    private static func cause(of source: FeedPlanTimes.Source, in feed: FeedPlan) -> Why {
        guard case .row(let row) = source else { return .release(feed: feed.name) }
        let key = rowKey(feed, row)
        switch feed.items[values: row].status {
        case .backoff: return feed.items.reason(at: row).hasPrefix(Planner.originHeldPrefix) ? .originHoldEnds(key) : .retry(key)
        case .fresh: return .turnsStale(key)
        case .failed: return .triedAgain(key)
        case .deferred:
            switch feed.items.reason(at: row) {
            case Planner.embargoReason: return .embargoEnds(key)
            case Planner.jitterReason: return .jitterEnds(feed: feed.name)
            default: return .windowOpens(feed: feed.name)  // window closed, or would not finish before it closes
            }
        case .due, .waiting, .expired: return .changes(key)
        }
    }
}
