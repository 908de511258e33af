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
    ///
    /// Cron releases and window openings fall on whole seconds, and an instant is at or after
    /// one exactly when its whole second is; a refresh-driven release is an exact instant.
    public func currentRelease(at now: Instant, state: FeedState?) -> Instant? {
        switch mode {
        case .schedule: return schedule?.previous(atOrBefore: now.seconds).map(Instant.init(seconds:))
        case .windowOpenings: return windows.lastOpening(atOrBefore: now.seconds).map(Instant.init(seconds:))
        case .afterPrevious:
            guard let state, let last = state.lastRelease else { return nil }
            guard let finished = state.lastReleaseFinished else { return last }
            let next = release(after: finished)
            return next <= now ? next : last
        }
    }

    /// The release that follows one finished at `finished`, for a feed with neither schedule
    /// nor window: released once it finished *more than* `refresh` ago (SPEC §5), so at the
    /// first instant after `finished + refresh`. Every copy validated in the finished release
    /// is then before it, and with `refresh: 0s` every later run is a new release.
    public func release(after finished: Instant) -> Instant {
        (finished + feed.refresh).successor
    }

    /// The first instant a release starting at `release` lets transfers begin: the release's
    /// own jitter (for scheduled and refresh-driven releases; window openings are jittered
    /// by the window itself).
    public func gate(for release: Instant?) -> Instant? {
        guard let release, mode != .windowOpenings else { return nil }
        return release.advanced(bySeconds: jitterOffset)
    }

    /// The next nominal releases after `instant` (before jitter), at most `count`.
    public func nextReleases(after instant: Instant, count: Int, state: FeedState?) -> [Instant] {
        switch mode {
        case .schedule: return (schedule?.upcoming(after: instant.seconds, count: count) ?? []).map(Instant.init(seconds:))
        case .windowOpenings: return windows.openings(after: instant.seconds, count: count).map(Instant.init(seconds:))
        case .afterPrevious:
            guard let finished = state?.lastReleaseFinished else { return [] }
            let next = release(after: finished)
            return next > instant ? [next] : []
        }
    }

    /// The earliest instant at or after `instant` when a transfer may run (window open),
    /// or nil when no window opens within two weeks.
    public func opportunity(atOrAfter instant: Instant) -> Instant? {
        if windows.interval(containing: instant.seconds) != nil { return instant }
        return windows.nextOpen(atOrAfter: instant.seconds).map(Instant.init(seconds:))
    }

    /// The open window interval containing `instant`, if transfers may run then.
    public func openInterval(at instant: Instant) -> WindowSchedule.Interval? {
        windows.interval(containing: instant.seconds)
    }

    /// When nothing but the window's own jitter keeps it shut at `instant`.
    public func inWindowJitter(at instant: Instant) -> Bool {
        guard jitterOffset > 0, !windows.isAlways else { return false }
        let unjittered = WindowSchedule(windows: windows.windows, days: windows.days, clock: clock, jitter: 0)
        return unjittered.interval(containing: instant.seconds) != nil
    }
}
