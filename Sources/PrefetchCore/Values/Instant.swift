import Foundation

/// A moment of real time at full precision: nanoseconds since the Unix epoch (UTC).
///
/// SPEC §5: times are compared at full precision, never rounded to seconds. What is
/// recorded and compared — validations, releases, their ends, retries — keeps every
/// nanosecond, so two runs within one second are two moments (`refresh: 0s` then means
/// every run). Calendars (cron, windows, zones) work in whole seconds: `seconds` is the
/// instant rounded down, which keeps half-open intervals `[open, close)` with whole-second
/// ends exact. Shown to people and in JSON, an instant is rounded down to the second.
///
/// Int64 nanoseconds reach the year 2262; arithmetic saturates rather than traps.
public struct Instant: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public var nanoseconds: Int64

    public static let perSecond: Int64 = 1_000_000_000

    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    /// The start of a whole second since the epoch.
    public init(seconds: Int64) {
        let (product, overflow) = seconds.multipliedReportingOverflow(by: Self.perSecond)
        nanoseconds = overflow ? (seconds < 0 ? .min : .max) : product
    }

    /// An integer literal counts whole seconds since the epoch.
    public init(integerLiteral seconds: Int64) {
        self.init(seconds: seconds)
    }

    /// The whole second this instant falls in (rounded down, also before 1970).
    public var seconds: Int64 {
        nanoseconds >= 0 ? nanoseconds / Self.perSecond : (nanoseconds - (Self.perSecond - 1)) / Self.perSecond
    }

    /// The nanoseconds past `seconds` (0 ..< 1e9).
    public var fraction: Int64 { nanoseconds - seconds &* Self.perSecond }

    /// The earliest and latest instants there are: "never" on either side.
    public static let distantPast = Instant(nanoseconds: .min)
    public static let distantFuture = Instant(nanoseconds: .max)

    /// The next instant: the first moment strictly after this one.
    public var successor: Instant { Instant(nanoseconds: nanoseconds == .max ? .max : nanoseconds + 1) }

    public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }

    /// This instant moved by `nanoseconds` (saturating at the ends).
    public func advanced(byNanoseconds delta: Int64) -> Instant {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(delta)
        return Instant(nanoseconds: overflow ? (delta < 0 ? .min : .max) : sum)
    }

    /// This instant moved by whole seconds.
    public func advanced(bySeconds delta: Int64) -> Instant {
        let (product, overflow) = delta.multipliedReportingOverflow(by: Self.perSecond)
        return advanced(byNanoseconds: overflow ? (delta < 0 ? .min : .max) : product)
    }

    public static func + (instant: Instant, span: TimeSpan) -> Instant { instant.advanced(bySeconds: span.seconds) }
    public static func - (instant: Instant, span: TimeSpan) -> Instant { instant.advanced(bySeconds: -span.seconds) }

    /// Nanoseconds from `earlier` to this instant (negative when it is later; saturating).
    public func nanoseconds(since earlier: Instant) -> Int64 {
        let (difference, overflow) = nanoseconds.subtractingReportingOverflow(earlier.nanoseconds)
        return overflow ? (earlier.nanoseconds < 0 ? .max : .min) : difference
    }

    /// Seconds from `earlier` to this instant, as a fraction.
    public func secondsSince(_ earlier: Instant) -> Double {
        Double(nanoseconds(since: earlier)) / Double(Self.perSecond)
    }

    /// Whether at least `span` has passed from `earlier` to this instant.
    public func isAtLeast(_ span: TimeSpan, after earlier: Instant) -> Bool {
        nanoseconds(since: earlier) >= span.nanoseconds
    }

    public var description: String {
        fraction == 0 ? "\(seconds)s" : "\(seconds).\(String(String(fraction + Self.perSecond).dropFirst()))s"
    }

    /// The real time now, to the nanosecond (CLOCK_REALTIME).
    public static func now() -> Instant {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Instant(seconds: Int64(spec.tv_sec)).advanced(byNanoseconds: Int64(spec.tv_nsec))
    }

    /// The moment a `Date` names (to its precision).
    public init(_ date: Date) {
        let seconds = date.timeIntervalSince1970
        let whole = seconds.rounded(.down)
        self = Instant(seconds: Int64(whole)).advanced(byNanoseconds: Int64(((seconds - whole) * 1e9).rounded()))
    }
}

extension TimeSpan {
    /// The span in nanoseconds (saturating).
    public var nanoseconds: Int64 {
        let (product, overflow) = seconds.multipliedReportingOverflow(by: Instant.perSecond)
        return overflow ? (seconds < 0 ? .min : .max) : product
    }
}
