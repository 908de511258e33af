/// One pass over a feed's rows for the two "when next" rules read from a plan (issue 36):
/// the per-feed `nextScheduledWork(at:)` of `status` and the metrics, and the daemon's
/// wake-up (`Run/DaemonWakeup.swift`). The scan is shared; what each finding counts for is
/// each rule's own. It finds the first due row, the first waiting row, and the earliest of
/// the feed's releases and the rows' `next` from a bound on.
struct FeedPlanTimes {
    /// Where a time came from: one of the feed's releases (`nextReleases`), or a row (its
    /// place in the feed's rows).
    enum Source: Equatable, Sendable {
        case release
        case row(Int)
    }

    /// The first row, in the plan's order, that is due; the first that waits on a condition.
    var firstDue: Int?
    var firstWaiting: Int?
    /// The earliest release or row `next` within the bound; a release wins a tie with a row
    /// (with no jitter a failed or fresh row's `next` is the next release itself), and an
    /// earlier row a tie with a later one.
    var earliest: (at: Instant, source: Source)?
}

extension FeedPlan {
    /// The feed's rows and releases scanned once from `bound`: a time counts when it is at or
    /// after it (`inclusive`), or strictly after it.
    func times(from bound: Instant, inclusive: Bool) -> FeedPlanTimes {
        var found = FeedPlanTimes()
        func counts(_ time: Instant) -> Bool { inclusive ? time >= bound : time > bound }
        if let release = nextReleases.filter(counts).min() { found.earliest = (release, .release) }
        for (row, item) in items.allValues.enumerated() {
            if item.status == .due, found.firstDue == nil { found.firstDue = row }
            if item.status == .waiting, found.firstWaiting == nil { found.firstWaiting = row }
            if let next = item.next, counts(next), found.earliest.map({ next < $0.at }) ?? true { found.earliest = (next, .row(row)) }
        }
        return found
    }

    /// When the feed next has something to do, as `status` (`next_wakeup`) and the metrics
    /// (`prefetch_next_wakeup_timestamp_seconds`) show it: now when work is due, else the
    /// earliest retry, window, embargo's end, copy turning stale or release strictly after
    /// now. Not the daemon's wake-up (`DaemonWakeup`): no re-check of waiting work, no room
    /// the cache cap waits for, no sources, removed feeds or `expires`, and a time equal to
    /// now counts for nothing (pinned by `FeedWakeupPinTests`).
    public func nextScheduledWork(at now: Instant) -> Instant? {
        let found = times(from: now, inclusive: false)
        return found.firstDue != nil ? now : found.earliest?.at
    }
}
