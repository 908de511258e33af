import Foundation
@testable import PrefetchCore

/// The planner's decision for one resource, written again from SPEC §2 and §5 for the
/// simulation — not from `Planner`: releases and windows come from the brute-force
/// `ReferenceCalendar`, and what happened to each resource from the simulation's own
/// history (never from state.db), so a disagreement is a finding.
struct ReferencePlanner {
    let feed: SimulatedFeed
    let calendar: ReferenceCalendar
    /// Nominal releases (cron fires or window openings) and window occurrences over the span.
    let releases: [Int64]
    let intervals: [(open: Int64, close: Int64)]?
    /// This machine's jitter offset (computed once: SHA-256 per question would dominate).
    let jitter: Int64

    /// What the simulation knows happened to a resource.
    struct History {
        var cached = false
        var validatedAt: Instant?
        var recordedSha256: String?
        var recordedSize: UInt64?
        var failures = 0
        var failureRelease: Instant?
        var failureEntry: String?
        var permanent = false
        var nextRetry: Instant?
    }

    /// What the simulation knows of the feed's releases.
    struct FeedHistory {
        var lastRelease: Instant?
        var lastFinished: Instant?
        /// The release in force is the one pending since the feed was first seen (a feed with
        /// neither schedule nor window), at this moment: it began then, so no jitter delays
        /// it — from then on (a clock set back to before it sees it not begun yet).
        var firstSeen: Instant?
    }

    init(_ feed: SimulatedFeed, from: Int64, to: Int64) {
        self.feed = feed
        calendar = feed.calendar
        jitter = feed.jitterOffset
        releases = calendar.releases(from: from, to: to)
        intervals = calendar.openIntervals(from: from, to: to)
    }

    /// The window occurrence containing `t`, nil when closed; always open without windows.
    func openInterval(at t: Instant) -> (open: Int64, close: Int64)? {
        guard let intervals else { return (.min, .max) }
        let s = t.seconds
        return intervals.first { $0.open <= s && s < $0.close }
    }

    func isOpen(_ t: Instant) -> Bool { openInterval(at: t) != nil }

    /// The release in force at `t` (SPEC §5): the latest cron fire, or window opening, at or
    /// before it; for a feed with neither, the one after the previous release finished more
    /// than `refresh` ago, else the one recorded; nil before the first (pending since first seen).
    func release(at t: Instant, _ history: FeedHistory) -> Instant? {
        switch feed.mode {
        case .schedule, .windows:
            var low = 0, high = releases.count  // the last release <= t.seconds
            while low < high {
                let mid = (low + high) / 2
                if releases[mid] <= t.seconds { low = mid + 1 } else { high = mid }
            }
            return low > 0 ? Instant(seconds: releases[low - 1]) : nil
        case .neither:
            guard let last = history.lastRelease else { return nil }
            guard let finished = history.lastFinished else { return last }
            let next = Instant(nanoseconds: finished.nanoseconds + feed.refresh * 1_000_000_000 + 1)  // "more than refresh ago"
            return next <= t ? next : last
        }
    }

    /// When transfers of the release at `release` may begin: its jitter after it (a window's
    /// own openings are jittered by the calendar); the first release of a feed with neither,
    /// pending since it was first seen, at the moment it was first seen — due at once, for its
    /// whole life, retries included (jitter delays the start of a release, once).
    func gate(_ release: Instant?, _ history: FeedHistory) -> Instant? {
        guard let release, feed.mode != .windows else { return nil }
        if feed.mode == .neither, let seen = history.firstSeen, release == history.lastRelease { return seen }
        return release.advanced(bySeconds: jitter)
    }

    /// The fingerprint prefetch records failures under (the entry's URL, sha256 and size).
    static func entry(_ item: SimulatedFeed.Item) -> String {
        (try! ResourceURL.parse(item.url)).identityHash + "|" + (item.sha256 ?? "") + "|" + (item.size.map(String.init) ?? "")
    }

    /// The resource's state at `t`, in SPEC §2's precedence, with the reason in words.
    func status(_ item: SimulatedFeed.Item, _ history: History, _ feedHistory: FeedHistory, at t: Instant,
                metered: Bool, onAC: Bool) -> (ResourceStatus, String) {
        let release = release(at: t, feedHistory)
        // expired (or never fetchable: expires not after not_before)
        if let expires = item.expires, Instant(seconds: expires) <= t || item.notBefore.map({ expires <= $0 }) == true {
            return (.expired, "expires \(expires)")
        }
        // failures count within the release in force, for this version of the entry
        if history.failures > 0 || history.permanent, let failedIn = history.failureRelease, failedIn == (release ?? failedIn),
           history.failureEntry == Self.entry(item) {
            if history.permanent || history.failures >= feed.attempts { return (.failed, "failed \(history.failures) in \(failedIn)") }
            if let retry = history.nextRetry, retry > t { return (.backoff, "retry at \(retry)") }
        }
        // a copy that no longer matches its entry is not current
        let changed = history.cached && history.validatedAt != nil
            && ((item.sha256 != nil && history.recordedSha256 != item.sha256) || (item.size != nil && history.recordedSize != item.size))
        if history.cached, !changed, let validated = history.validatedAt {
            let beforeRelease = release.map { validated < $0 } ?? (feed.mode == .neither && feedHistory.lastRelease == nil)
            let old = t.nanoseconds(since: validated) >= feed.refresh * 1_000_000_000
            if !(beforeRelease && old) { return (.fresh, "validated \(validated), release \(release.map(String.init(describing:)) ?? "none")") }
        }
        if let notBefore = item.notBefore, Instant(seconds: notBefore) > t { return (.deferred, "embargo") }
        if !isOpen(t) { return (.deferred, "window closed") }
        if let gate = gate(release, feedHistory), gate > t { return (.deferred, "jitter until \(gate)") }
        if feed.needsUnmetered && metered { return (.waiting, "network metered") }
        if feed.needsAC && !onAC { return (.waiting, "on battery") }
        return (.due, changed ? "changed" : history.cached ? "stale" : "not cached")
    }

    /// The moments after `t` at which some status may change by time alone: releases and their
    /// gates, window openings, retries, embargoes' ends, refresh ages, a next release of a
    /// feed with neither. The first at which something is due (or waiting) is when a daemon
    /// must be awake by.
    func candidates(after t: Instant, items: [SimulatedFeed.Item], histories: [History], feedHistory: FeedHistory,
                    horizon: Int64) -> [Instant] {
        let end = t.seconds + horizon
        var out: [Instant] = []
        for release in releases where release > t.seconds - jitter - 1 && release <= end {
            out.append(Instant(seconds: release))
            out.append(Instant(seconds: release + jitter))
        }
        if let intervals { for interval in intervals where interval.open > t.seconds && interval.open <= end { out.append(Instant(seconds: interval.open)) } }
        if let current = release(at: t, feedHistory), let gate = gate(current, feedHistory) { out.append(gate) }
        if feed.mode == .neither, let finished = feedHistory.lastFinished {
            let next = Instant(nanoseconds: finished.nanoseconds + feed.refresh * 1_000_000_000 + 1)
            out.append(next)
            out.append(next.advanced(bySeconds: jitter))
        }
        for (item, history) in zip(items, histories) {
            if let retry = history.nextRetry { out.append(retry) }
            if let notBefore = item.notBefore { out.append(Instant(seconds: notBefore)) }
            if let validated = history.validatedAt { out.append(validated.advanced(bySeconds: feed.refresh)) }
        }
        return out.filter { $0 > t && $0.seconds <= end }.sorted()
    }
}
