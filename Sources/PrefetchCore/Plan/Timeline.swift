/// The plan as a picture (SPEC §2, `plan --timeline`): for each feed, over whole local days
/// of this machine's zone from midnight of the evaluation's day, when its windows are open,
/// when it releases, when this machine starts (the release's jitter), when the work due
/// should be done at the recorded throughput, and what would hold it back now. Pure: built
/// from the plan and the feeds' timings; `TimelineRenderer` draws it.
public struct Timeline: Sendable {
    /// Local midnight of the evaluation's day, and of the day after the last one shown.
    public var start: Instant
    public var end: Instant
    public var now: Instant
    /// This machine's zone, in which the days are drawn.
    public var clock: ZoneClock
    public var zoneName: String
    public var rows: [Row]
    /// The throughput the finish times assume, and whether past runs measured it.
    public var throughput: Double
    public var throughputMeasured: Bool

    /// One feed.
    public struct Row: Sendable {
        public var feed: String
        public var zoneName: String
        /// When its windows are open, `[open, close)` in seconds, before this machine's jitter,
        /// within the span; the whole span for a feed without window or days.
        public var windows: [WindowSchedule.Interval]
        /// Its release instants within the span, before jitter.
        public var releases: [Instant]
        /// When this machine begins each release's transfers within the span: the release
        /// delayed by its jitter, then to the next moment a window is open.
        public var starts: [Instant]
        /// When what is due and what waits for the window or the jitter should be done,
        /// at the plan's throughput; nil when nothing is pending or a condition holds it back.
        public var finish: Instant?
        /// The conditions that hold it back now (`network metered`, `on battery`, …).
        public var heldBy: [String]
        /// Bytes pending (due, or waiting for its window or jitter) and how many of those
        /// resources have no known size.
        public var pendingBytes: UInt64
        public var pendingCount: Int
        public var unknownSizes: Int
        /// The first start at or after now, if any within two weeks.
        public var nextStart: Instant?
    }

    /// The picture of `plan` over `days` local days of `clock`'s zone. `timings` are the
    /// planned feeds' timings, in the plan's order.
    public static func build(_ plan: Plan, timings: [FeedTiming], days: Int, clock: ZoneClock, zoneName: String) -> Timeline {
        let today = LocalDay.containing(plan.now.seconds, clock: clock)
        let start = Instant(seconds: today.instant(minute: 0, clock: clock))
        let end = Instant(seconds: LocalDay(number: today.number + Int64(days)).instant(minute: 0, clock: clock))
        var rows: [Row] = []
        for (feed, timing) in zip(plan.feeds, timings) {
            rows.append(row(feed, timing: timing, plan: plan, span: start..<end))
        }
        return Timeline(start: start, end: end, now: plan.now, clock: clock, zoneName: zoneName, rows: rows,
                        throughput: plan.throughput, throughputMeasured: plan.throughputMeasured)
    }

    /// At most this many release ticks per feed: a cron firing every minute over 14 days
    /// fills every column long before.
    static let maximumReleases = 5_000

    static func row(_ feed: FeedPlan, timing: FeedTiming, plan: Plan, span: Range<Instant>) -> Row {
        let now = plan.now
        let first = span.lowerBound.seconds, last = span.upperBound.seconds
        // Windows as the feed's zone has them, on the feed's days, clipped to the span.
        let nominal = WindowSchedule(windows: timing.windows.windows, days: timing.windows.days, clock: timing.clock)
        var windows: [WindowSchedule.Interval]
        if nominal.isAlways {
            windows = [.init(open: first, close: last)]
        } else {
            let fromDay = LocalDay.containing(first, clock: timing.clock).number - 1
            let toDay = LocalDay.containing(last, clock: timing.clock).number
            windows = nominal.intervals(days: fromDay, toDay).compactMap { interval in
                let open = max(interval.open, first), close = min(interval.close, last)
                return open < close ? .init(open: open, close: close) : nil
            }
        }
        // Releases: cron instants, window openings, or (neither) the one the state implies.
        var releases: [Instant] = []
        switch timing.mode {
        case .schedule:
            var cursor = first - 1
            while releases.count < maximumReleases, let next = timing.schedule?.next(after: cursor), next < last {
                releases.append(Instant(seconds: next))
                cursor = next
            }
        case .windowOpenings:
            releases = nominal.openings(after: first - 1, count: maximumReleases).filter { $0 < last }.map(Instant.init(seconds:))
        case .afterPrevious:
            releases = ([feed.currentRelease].compactMap { $0 } + feed.nextReleases).filter { span.contains($0) }
        }
        // This machine's starts: window openings are jittered by the window itself; other
        // releases by their gate, then to the next open moment.
        var starts: [Instant] = []
        switch timing.mode {
        case .windowOpenings:
            let fromDay = LocalDay.containing(first, clock: timing.clock).number - 1
            let toDay = LocalDay.containing(last, clock: timing.clock).number
            starts = timing.windows.intervals(days: fromDay, toDay).map { Instant(seconds: $0.open) }.filter { span.contains($0) }
        case .schedule, .afterPrevious:
            var gated = releases
            if let current = feed.currentRelease, current < span.lowerBound { gated.insert(current, at: 0) }
            starts = gated.compactMap { timing.gate(for: $0).flatMap(timing.opportunity(atOrAfter:)) }.filter { span.contains($0) }
        }
        var seen = Set<Instant>()
        starts = starts.filter { seen.insert($0).inserted }
        // What is pending, and what holds it back.
        let pending = feed.items.filter {
            $0.status == .due || $0.status == .waiting || ($0.status == .deferred && ($0.reason == "window closed" || $0.reason == "jitter"))
        }
        var heldBy: [String] = []
        for item in pending where item.status == .waiting && !heldBy.contains(item.reason) { heldBy.append(item.reason) }
        for check in feed.holds where !check.ok {
            let phrase = holdPhrase(check.name, plan: plan, feed: timing.feed)
            if !heldBy.contains(phrase) { heldBy.append(phrase) }
        }
        let bytes = pending.reduce(UInt64(0)) { $0 &+ ($1.remaining ?? $1.bytes ?? 0) }
        let unknown = pending.filter { ($0.remaining ?? $0.bytes) == nil }.count
        // The next start: now when the feed may transfer now, else the first start ahead.
        let gate = timing.gate(for: feed.currentRelease) ?? now
        let nextStart = feed.windowOpen ? now : timing.opportunity(atOrAfter: max(now, gate))
        var finish: Instant?
        if heldBy.isEmpty, !pending.isEmpty {
            let dueFinishes = pending.compactMap { $0.status == .due ? $0.estimatedFinish : nil }
            if let latest = dueFinishes.max(), pending.allSatisfy({ $0.status == .due }) {
                finish = latest
            } else if let nextStart, plan.throughput > 0 {
                finish = nextStart.advanced(bySeconds: Int64((Double(bytes) / plan.throughput).rounded(.up)))
            }
        }
        return Row(feed: feed.name, zoneName: feed.zoneName, windows: windows, releases: releases, starts: starts,
                   finish: finish, heldBy: heldBy, pendingBytes: bytes, pendingCount: pending.count,
                   unknownSizes: unknown, nextStart: nextStart)
    }

    /// The plan's phrase for a condition that holds a feed back (`Planner.conditionBlocks`).
    static func holdPhrase(_ name: String, plan: Plan, feed: Feed) -> String {
        switch name {
        case "network": return "network metered"
        case "power": return "on battery"
        case "battery": return "battery \(plan.conditions.batteryLevel.map { "\($0)%" } ?? "low") < \(feed.conditions.minBattery)%"
        default: return name
        }
    }
}
