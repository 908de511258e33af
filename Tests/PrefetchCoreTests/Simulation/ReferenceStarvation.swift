import Foundation
@testable import PrefetchCore

/// SPEC §6's missed windows, written again for the simulation from its own records — the
/// brute-force `ReferenceCalendar`'s windows and releases, the feed's history as the
/// simulation saw it change, and every success it drew — never from state.db or
/// `Starvation`. Walking back from `now` over the windows that closed (for a feed without
/// windows, the spans between release instants; with neither schedule nor window, days from
/// the pending release), a closing counts while a release was pending then and nothing of
/// it succeeded from the window's opening on; the first that does not ends the streak.
struct ReferenceStarvation {
    /// The feed's history from each moment it changed on.
    var histories: [(from: Instant, history: ReferencePlanner.FeedHistory)] = []
    /// Every success (placed or 304), in time order.
    var successes: [Instant] = []

    mutating func record(_ history: ReferencePlanner.FeedHistory, at t: Instant) {
        if histories.last.map({ $0.history.lastRelease != history.lastRelease || $0.history.lastFinished != history.lastFinished }) ?? true {
            histories.append((t, history))
        }
    }

    func history(at t: Instant) -> ReferencePlanner.FeedHistory? {
        histories.last { $0.from <= t }?.history
    }

    /// When the simulation's first pass saw the feed.
    var firstSeen: Instant?

    /// When a release was first pending, as of `t`, since the feed last finished one: the
    /// first release after the one that finished last (the releases of days the machine was
    /// off count); for a feed that never finished one, the first pass; nil when none is.
    func pendingSince(_ reference: ReferencePlanner, at t: Instant) -> Instant? {
        let known = histories.filter { $0.from <= t }
        guard let firstSeen, firstSeen <= t, let current = known.last?.history else { return nil }
        guard let finished = current.lastFinished != nil ? current : known.last(where: { $0.history.lastFinished != nil })?.history,
              let last = finished.lastRelease, let at = finished.lastFinished else { return firstSeen }
        let next: Instant?
        switch reference.feed.mode {
        case .neither: next = Instant(nanoseconds: at.nanoseconds + reference.feed.refresh * 1_000_000_000 + 1)
        case .schedule, .windows: next = reference.releases.first { $0 > last.seconds }.map { Instant(seconds: $0) }
        }
        return next.flatMap { $0 <= t ? $0 : nil }
    }

    /// The feed's windows [open, close) (merged, jittered), from the reference calendar, in
    /// time order; nil for a feed without windows.
    private(set) var windows: [(open: Int64, close: Int64)]?

    init(_ reference: ReferencePlanner) {
        let feed = reference.feed
        guard !feed.windows.isEmpty || feed.days != nil else { return }
        var merged: [(open: Int64, close: Int64)] = []
        for interval in (reference.intervals ?? []).filter({ $0.open < $0.close }).sorted(by: { $0.open < $1.open }) {
            if let last = merged.last, interval.open <= last.close {
                merged[merged.count - 1].close = max(last.close, interval.close)
            } else {
                merged.append(interval)
            }
        }
        windows = merged
    }

    /// The `k`-th window (0: the latest) that closed at or before `now`: a window; without
    /// windows, the span between two release instants; with neither, a day from the pending
    /// release.
    func span(_ k: Int, _ reference: ReferencePlanner, now: Instant) -> (open: Int64, close: Int64)? {
        func lastAtOrBefore(_ values: [Int64]) -> Int {  // how many are <= now
            var low = 0, high = values.count
            while low < high {
                let mid = (low + high) / 2
                if values[mid] <= now.seconds { low = mid + 1 } else { high = mid }
            }
            return low
        }
        if let windows {
            let closed = lastAtOrBefore(windows.map(\.close))
            return closed - 1 - k >= 0 ? windows[closed - 1 - k] : nil
        }
        if reference.feed.mode == .schedule {
            let ticks = reference.releases
            let count = lastAtOrBefore(ticks)
            return count - 2 - k >= 0 ? (ticks[count - 2 - k], ticks[count - 1 - k]) : nil
        }
        guard let since = pendingSince(reference, at: now) else { return nil }
        let days = (now.seconds - since.seconds) / 86_400
        guard Int64(k) < days else { return nil }
        let close = since.seconds + (days - Int64(k)) * 86_400
        return (close - 86_400, close)
    }

    func missed(_ reference: ReferencePlanner, at now: Instant) -> Int {
        var count = 0
        // The streak is the one since the feed last finished a release.
        let finished = histories.filter { $0.from <= now }.compactMap(\.history.lastFinished).max()
        let lastSuccess = successes.last { $0 <= now }
        while let span = span(count, reference, now: now) {
            let close = Instant(seconds: span.close)
            if let finished, close <= finished { break }
            guard let since = pendingSince(reference, at: close), since.seconds < span.close else { break }
            let from = max(since, Instant(seconds: span.open))
            if let lastSuccess, lastSuccess >= from { break }
            count += 1
        }
        return count
    }
}
