/// When a feed's transfers may run: its daily windows on its days, in its zone, with the
/// per-machine jitter delaying each opening (SPEC §1).
public struct WindowSchedule: Sendable {
    /// An interval of real time `[open, close)` in seconds since the epoch.
    public struct Interval: Sendable, Hashable {
        public var open: Int64
        public var close: Int64
    }

    public let windows: [TimeWindow]
    public let days: Set<Weekday>?
    public let clock: ZoneClock
    /// The machine's jitter offset in seconds; reduced modulo each window's length.
    public let jitter: Int64

    public init(windows: [TimeWindow], days: Set<Weekday>?, clock: ZoneClock, jitter: Int64 = 0) {
        self.windows = windows
        self.days = days
        self.clock = clock
        self.jitter = jitter
    }

    /// True when transfers may run at any time (no window and no day restriction).
    public var isAlways: Bool { windows.isEmpty && days == nil }

    /// The windows as daily shapes: `days` without `window` means whole days.
    private var shapes: [TimeWindow] { windows.isEmpty ? [TimeWindow(start: 0, end: 0)] : windows }

    /// The nominal (un-jittered) openings and closings of windows that open on local day `number`.
    func nominal(onDay number: Int64) -> [Interval] {
        let day = LocalDay(number: number)
        if let days, !days.contains(Weekday(rawValue: day.weekday)!) { return [] }
        return shapes.map { window in
            let open = day.instant(minute: window.start, clock: clock)
            let endMinute = window.isWholeDay ? window.start + 1440 : (window.wrapsMidnight ? window.end + 1440 : window.end)
            return Interval(open: open, close: day.instant(minute: endMinute, clock: clock))
        }
    }

    /// The jitter applied to a window of `lengthMinutes`: reduced modulo its length.
    func offset(forLength lengthMinutes: Int) -> Int64 {
        jitter % (Int64(lengthMinutes) * 60)
    }

    /// Jittered, merged intervals for windows opening on days `first...last`.
    func intervals(days first: Int64, _ last: Int64) -> [Interval] {
        var all: [Interval] = []
        for number in first...last {
            for (window, interval) in zip(shapes, nominal(onDay: number)) {
                let opened = interval.open + offset(forLength: window.lengthMinutes)
                if opened < interval.close { all.append(Interval(open: opened, close: interval.close)) }
            }
        }
        all.sort { $0.open < $1.open }
        var merged: [Interval] = []
        for interval in all {
            if let last = merged.last, interval.open <= last.close {
                merged[merged.count - 1].close = max(last.close, interval.close)
            } else {
                merged.append(interval)
            }
        }
        return merged
    }

    /// The open interval containing `instant`, if transfers may run then.
    public func interval(containing instant: Int64) -> Interval? {
        if isAlways { return Interval(open: Int64.min, close: Int64.max) }
        let day = LocalDay.containing(instant, clock: clock).number
        // A merged run of windows can span days; widen until the edges are not inside.
        return intervals(days: day - 2, day + 1).first { $0.open <= instant && instant < $0.close }
    }

    /// The first instant at or after `instant` when transfers may run (it may be `instant`).
    public func nextOpen(atOrAfter instant: Int64) -> Int64? {
        if isAlways { return instant }
        if interval(containing: instant) != nil { return instant }
        let day = LocalDay.containing(instant, clock: clock).number
        var first = day - 1
        while first < day + 14 {
            if let hit = intervals(days: first, first + 7).first(where: { $0.open >= instant }) { return hit.open }
            first += 7
        }
        return nil
    }

    /// Nominal window openings (before jitter) strictly after `instant`: a window-only feed's releases.
    public func openings(after instant: Int64, count: Int) -> [Int64] {
        var out: [Int64] = []
        var number = LocalDay.containing(instant, clock: clock).number - 1
        while out.count < count && number < LocalDay.containing(instant, clock: clock).number + 400 {
            let opens = nominal(onDay: number).map(\.open).filter { $0 > instant }.sorted()
            out += opens
            number += 1
        }
        return Array(out.sorted().prefix(count))
    }

    /// The last nominal window opening at or before `instant`.
    public func lastOpening(atOrBefore instant: Int64) -> Int64? {
        var number = LocalDay.containing(instant, clock: clock).number + 1
        let stop = number - 400
        while number > stop {
            if let hit = nominal(onDay: number).map(\.open).filter({ $0 <= instant }).max() { return hit }
            number -= 1
        }
        return nil
    }
}
