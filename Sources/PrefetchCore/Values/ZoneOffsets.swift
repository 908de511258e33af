import Foundation

/// A zone's UTC offsets for many instants close together (a plan's thousands of finish
/// times): the zone (ICU, behind Foundation) is asked again only when an instant leaves the
/// span the last answer is known to hold for — from the instant asked up to the zone's next
/// transition, at most a week, and only when the offset at the span's end agrees.
struct ZoneOffsets {
    let clock: ZoneClock
    /// `offset` holds for `from..<until` (seconds since the epoch).
    private var from: Int64 = 0, until: Int64 = 0, offset: Int64 = 0

    /// The longest span one answer is trusted for.
    static let longestSpan: Int64 = 7 * 86_400

    init(_ clock: ZoneClock) {
        self.clock = clock
    }

    /// The UTC offset in seconds in force at `instant`, as `clock.offset(at:)` gives it.
    mutating func offset(at instant: Int64) -> Int64 {
        if instant >= from, instant < until { return offset }
        let found = clock.offset(at: instant)
        var end = instant > Int64.max - Self.longestSpan ? Int64.max : instant + Self.longestSpan
        if let next = clock.zone.nextDaylightSavingTimeTransition(after: Date(timeIntervalSince1970: TimeInterval(instant))) {
            // The transition's second itself has the new offset.
            end = min(end, Int64(next.timeIntervalSince1970.rounded(.down)))
        }
        if end > instant, clock.offset(at: end - 1) == found {
            (from, until) = (instant, end)
        } else {
            (from, until) = (instant, instant + 1)
        }
        offset = found
        return found
    }
}
