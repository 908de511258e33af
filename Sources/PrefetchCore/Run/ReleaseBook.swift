/// What a pass records of releases (SPEC §5): which release each feed's work belongs to,
/// that it began, and that it finished. Shared by `run`, `daemon` and the planner simulation.
enum ReleaseBook {
    /// The release each planned feed's work belongs to: the release in force, else the one
    /// recorded, else — for a feed seen for the first time, whose most recent release is
    /// pending and due at once — the moment whose jitter ends now: jitter delays the start of
    /// a release once, so the rest of that release (its retries) is not delayed again.
    static func releases(_ plan: Plan, _ snapshot: StateSnapshot) -> [Instant] {
        plan.feeds.map {
            $0.currentRelease ?? snapshot.feeds[$0.name]?.lastRelease ?? plan.now.advanced(bySeconds: -$0.jitterOffset)
        }
    }

    /// Records as begun the release of each feed with work due, when it is not recorded yet
    /// (that also forgets when the previous one finished); and every feed planned as seen,
    /// the first time (starvation counts from then).
    static func begin(_ plan: Plan, _ snapshot: StateSnapshot, _ state: StateStore) throws(SQLiteError) {
        for feedPlan in plan.feeds where snapshot.feeds[feedPlan.name]?.firstSeen == nil {
            try state.recordSeen(feed: feedPlan.name, at: plan.now)
        }
        for (feedPlan, release) in zip(plan.feeds, releases(plan, snapshot))
        where feedPlan.items.allValues.contains(where: { $0.status == .due }) && snapshot.feeds[feedPlan.name]?.lastRelease != release {
            try state.recordRelease(feed: feedPlan.name, release: release)
        }
    }

    /// Whether a row of the plan keeps its feed's release open: it is due, waiting for a
    /// condition, in backoff, or deferred by the window or the jitter. One under embargo, or
    /// expired, fresh or failed for the release, does not.
    static func keepsReleaseOpen(_ rows: PlanRows, _ position: Int) -> Bool {
        switch rows[values: position].status {
        case .due, .waiting, .backoff: return true
        case .deferred: return rows.reason(at: position) != "embargo"
        case .fresh, .failed, .expired: return false
        }
    }

    /// Records, at `now`, the end of each feed's release that a plan made after the pass
    /// shows finished: nothing of it is left to do. Returns whether it recorded any (a feed
    /// with neither schedule nor window then has a next release the plan did not know of).
    @discardableResult
    static func finish(_ after: Plan, _ snapshot: StateSnapshot, _ state: StateStore, at now: Instant) throws(SQLiteError) -> Bool {
        var finished = false
        for feedPlan in after.feeds where !feedPlan.items.indices.contains(where: { keepsReleaseOpen(feedPlan.items, $0) }) {
            if snapshot.feeds[feedPlan.name]?.lastReleaseFinished == nil, snapshot.feeds[feedPlan.name]?.lastRelease != nil {
                try state.recordReleaseFinished(feed: feedPlan.name, at: now)
                finished = true
            }
        }
        return finished
    }

    /// Why a feed's pending release is not moving, from a plan: the reason most of its rows
    /// that keep the release open but are not due give (the first such row's on a tie); nil
    /// when nothing keeps it open or all of it is due.
    static func stuckReason(_ feedPlan: FeedPlan) -> String? {
        var counts: [String: Int] = [:]
        var order: [String] = []
        let rows = feedPlan.items
        for i in rows.indices where rows[values: i].status != .due && keepsReleaseOpen(rows, i) {
            let reason = rows.reason(at: i)
            if counts[reason] == nil { order.append(reason) }
            counts[reason, default: 0] += 1
        }
        guard let most = counts.values.max() else { return nil }
        return order.first { counts[$0] == most }
    }
}
