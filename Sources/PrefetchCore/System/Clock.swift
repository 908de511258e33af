import Foundation

/// The time every command reads: the system clock shifted by `PREFETCH_CLOCK_OFFSET`
/// (SPEC §5), or the moment `plan --at` names.
public enum Clock {
    /// The real time, to the nanosecond.
    public static func realNow() -> Instant {
        Instant.now()
    }

    /// Nanoseconds of `CLOCK_MONOTONIC`: for intervals (the watchdog's), which a wall clock
    /// set at boot (a kiosk starting in 1970) or by NTP must not stretch or shrink.
    public static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// `PREFETCH_CLOCK_OFFSET` (zero when unset).
    public static func offset(environment: [String: String]) throws(ValueError) -> TimeSpan {
        guard let text = environment["PREFETCH_CLOCK_OFFSET"], !text.isEmpty else { return .zero }
        do {
            return try TimeSpan.parse(text, signed: true)
        } catch {
            throw ValueError("PREFETCH_CLOCK_OFFSET: \(error.message)")
        }
    }

    /// The evaluation time: `--at` when given (RFC 3339 with `Z` or an offset, or `HH:MM`
    /// meaning today in the system's zone), else the shifted system clock.
    public static func now(at: String?, environment: [String: String], realNow: Instant = realNow(),
                           systemZone: TimeZone = .current) throws(ValueError) -> Instant {
        guard let at else { return realNow + (try offset(environment: environment)) }
        let chars = Array(at)
        if chars.count == 5, chars[2] == ":", let h = Int(String(chars[0..<2])), let m = Int(String(chars[3..<5])),
           chars.enumerated().allSatisfy({ $0.offset == 2 || ($0.element.isASCII && $0.element.isNumber) }),
           (0..<24).contains(h), (0..<60).contains(m) {
            let clock = ZoneClock(systemZone)
            let today = clock.civil(at: realNow.seconds)
            return Instant(seconds: clock.resolve(CivilTime(year: today.year, month: today.month, day: today.day, hour: h, minute: m)))
        }
        switch try? Timestamp.parse(at) {
        case .instant(let instant)?: return instant
        default:
            throw ValueError("--at takes an RFC 3339 time with Z or an offset (2026-03-29T02:30:00+02:00) or HH:MM, not '\(at)'")
        }
    }
}
