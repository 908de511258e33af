/// A feed's releases and windows as instants, with this machine's jitter (SPEC §1, §5).
public struct FeedTiming: Sendable {
    public let feed: Feed
    public let clock: ZoneClock
    public let schedule: CronSchedule?
    public let windows: WindowSchedule
    /// This machine's offset in `[0, jitter)`.
    public let jitterOffset: Int64

    public init(_ feed: Feed, machineID: String?) {
        self.feed = feed
        clock = ZoneClock(feed.timeZone)
        schedule = feed.schedule.map { CronSchedule($0, clock: ZoneClock(feed.timeZone)) }
        jitterOffset = Jitter.offset(machineID: machineID, feed: feed.name, jitter: feed.jitter)
        windows = WindowSchedule(windows: feed.windows, days: feed.days, clock: ZoneClock(feed.timeZone), jitter: jitterOffset)
    }

    /// How releases come: by schedule, at window openings, or after the previous one finished.
    public enum Mode: Sendable { case schedule, windowOpenings, afterPrevious }

    public var mode: Mode {
        if schedule != nil { return .schedule }
        if !windows.isAlways { return .windowOpenings }
        return .afterPrevious
    }

    /// The nominal start of the release in force at `now`; nil when it is pending since the
    /// feed was first seen (no state) or no release ever happened.
    public func currentRelease(at now: Int64, state: FeedState?) -> Int64? {
        switch mode {
        case .schedule: return schedule?.previous(atOrBefore: now)
        case .windowOpenings: return windows.lastOpening(atOrBefore: now)
        case .afterPrevious:
            guard let state, let last = state.lastRelease else { return nil }
            guard let finished = state.lastReleaseFinished else { return last }
            let next = finished + feed.refresh.seconds
            return next <= now ? next : last
        }
    }

    /// The first instant a release starting at `release` lets transfers begin: the release's
    /// own jitter (for scheduled and refresh-driven releases; window openings are jittered
    /// by the window itself).
    public func gate(for release: Int64?) -> Int64? {
        guard let release, mode != .windowOpenings else { return nil }
        return release + jitterOffset
    }

    /// The next nominal releases after `instant` (before jitter), at most `count`.
    public func nextReleases(after instant: Int64, count: Int, state: FeedState?) -> [Int64] {
        switch mode {
        case .schedule: return schedule?.upcoming(after: instant, count: count) ?? []
        case .windowOpenings: return windows.openings(after: instant, count: count)
        case .afterPrevious:
            guard let finished = state?.lastReleaseFinished else { return [] }
            let next = finished + feed.refresh.seconds
            return next > instant ? [next] : []
        }
    }

    /// The earliest instant at or after `instant` when a transfer may run (window open),
    /// or nil when no window opens within two weeks.
    public func opportunity(atOrAfter instant: Int64) -> Int64? {
        windows.nextOpen(atOrAfter: instant)
    }

    /// When nothing but the window's own jitter keeps it shut at `instant`.
    public func inWindowJitter(at instant: Int64) -> Bool {
        guard jitterOffset > 0, !windows.isAlways else { return false }
        let unjittered = WindowSchedule(windows: windows.windows, days: windows.days, clock: clock, jitter: 0)
        return unjittered.interval(containing: instant) != nil
    }
}
