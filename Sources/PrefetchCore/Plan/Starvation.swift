/// Starvation (SPEC §6): the windows in a row that closed — or, for a feed without windows,
/// the release instants that passed — while a release was pending and nothing of it was
/// transferred (placed or answered 304), since the feed last finished a release. Pure: from
/// the feed's timing, what state.db recorded and the clock, so `status` (which writes
/// nothing) counts the windows a machine that was off missed too.
///
/// A feed with neither schedule nor window has no release instants while one is pending:
/// it misses one "window" per day its pending release moves nothing.
public enum Starvation {
    /// How many windows were missed, the last of them, and the reason seen last.
    public struct Count: Sendable, Equatable {
        public var missed: Int
        /// The last missed window, `[open, close)` (for a release instant, from the one before).
        public var lastOpen: Instant?
        public var lastClose: Instant?

        public static let none = Count(missed: 0, lastOpen: nil, lastClose: nil)
    }

    /// Windows are looked for this far back at most (a machine off for longer counts those).
    static let horizonDays: Int64 = 400
    /// Release instants counted at most (a cron every minute for a month is 43,200).
    static let limit = 100_000

    /// The feed's missed windows at `now`. `lastActivity`: the last time one of its resources
    /// was placed or validated.
    public static func count(_ timing: FeedTiming, state: FeedState?, lastActivity: Instant?, now: Instant) -> Count {
        guard let since = pendingSince(timing, state: state, now: now) else { return .none }
        let active = lastActivity.flatMap { $0 >= since ? $0 : nil }  // before it, the activity was the previous release's
        let missed = spans(timing, after: since, through: now).filter { span in active.map { span.open > $0.seconds } ?? true }
        guard let last = missed.last else { return .none }
        return Count(missed: missed.count, lastOpen: Instant(seconds: last.open), lastClose: Instant(seconds: last.close))
    }

    /// The feed's missed windows from a snapshot of state.db: its last activity is the
    /// latest validation of its resources.
    public static func count(_ feed: Feed, snapshot: StateSnapshot, machineID: String?, now: Instant) -> Count {
        let activity = feed.resources.compactMap { snapshot.resources[ResourceKey(feed: feed.name, path: $0.path)]?.validatedAt }.max()
        return count(FeedTiming(feed, machineID: machineID), state: snapshot.feeds[feed.name], lastActivity: activity, now: now)
    }

    /// When a release was first pending after the feed last finished one: the first release
    /// after the last finish (`last_success` keeps when that was, also once a later release
    /// was recorded as begun, so releases a machine that was off never recorded count too);
    /// for a feed that never finished one, when a pass first saw it; nil when none is
    /// pending (or none is known).
    static func pendingSince(_ timing: FeedTiming, state: FeedState?, now: Instant) -> Instant? {
        guard let state else { return nil }
        guard let finished = state.lastReleaseFinished ?? state.lastSuccess else { return state.firstSeen.flatMap { $0 <= now ? $0 : nil } }
        // The release after the one that finished (the one in force when it finished).
        let next = timing.mode == .afterPrevious ? timing.release(after: finished)
            : timing.nextReleases(after: state.lastReleaseFinished != nil ? state.lastRelease ?? finished : finished, count: 1, state: state).first
        guard let next, next <= now else { return nil }
        return next
    }

    /// The windows `[open, close)` that close in `(from, now]`: the feed's open intervals
    /// (merged, jittered); without windows, the spans between release instants; with neither
    /// schedule nor window, days from `from`.
    static func spans(_ timing: FeedTiming, after from: Instant, through now: Instant) -> [(open: Int64, close: Int64)] {
        let start = max(from.seconds, now.seconds - horizonDays * 86_400), end = now.seconds
        guard start < end else { return [] }
        if !timing.windows.isAlways {
            let first = LocalDay.containing(start, clock: timing.clock).number - 2
            let last = LocalDay.containing(end, clock: timing.clock).number + 1
            return timing.windows.intervals(days: first, last).filter { $0.close > start && $0.close <= end }.map { ($0.open, $0.close) }
        }
        var spans: [(open: Int64, close: Int64)] = []
        if let schedule = timing.schedule {
            // Day by day (one `fires` per local day, not one search per release).
            var previous = start
            var day = LocalDay.containing(start, clock: timing.clock).number - 1
            let last = LocalDay.containing(end, clock: timing.clock).number + 1
            while day <= last && spans.count < limit {
                for tick in schedule.fires(onDay: day) where tick > previous && tick <= end {
                    spans.append((previous, tick))
                    previous = tick
                }
                day += 1
            }
        } else {
            var open = start
            while spans.count < limit, open + 86_400 <= end {
                spans.append((open, open + 86_400))
                open += 86_400
            }
        }
        return spans
    }

    /// The reason to show: the one a pass saw last, unless no pass looked at the feed while
    /// its last missed window was open.
    public static func reason(_ count: Count, seen: String?, at seenAt: Instant?) -> String? {
        guard count.missed > 0, let open = count.lastOpen else { return nil }
        guard let seen, let seenAt, seenAt >= open else { return "prefetch did not run while it was open" }
        return seen
    }
}
