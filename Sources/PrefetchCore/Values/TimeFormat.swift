import Foundation

/// Formats instants for people and for JSON.
public enum TimeFormat {
    private static func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }

    /// `±HH:MM` for an offset in seconds.
    static func offsetText(_ seconds: Int64) -> String {
        let sign = seconds < 0 ? "-" : "+"
        let magnitude = Int(abs(seconds))
        return sign + two(magnitude / 3600) + ":" + two(magnitude % 3600 / 60)
    }

    /// RFC 3339 in the zone, whole seconds (rounded down), always a numeric offset:
    /// `2026-03-29T03:00:00+02:00`.
    public static func rfc3339(_ instant: Instant, clock: ZoneClock) -> String {
        rfc3339(seconds: instant.seconds, clock: clock)
    }

    public static func rfc3339(seconds instant: Int64, clock: ZoneClock) -> String {
        let offset = clock.offset(at: instant)
        let c = CivilTime(secondsAsUTC: instant + offset)
        return "\(c.year)-\(two(c.month))-\(two(c.day))T\(two(c.hour)):\(two(c.minute)):\(two(c.second))" + offsetText(offset)
    }

    /// `Mon 2026-11-30 02:30 +01:00 (01:30 UTC)`: local time with the UTC time beside it.
    public static func local(_ instant: Instant, clock: ZoneClock, withUTC: Bool = true) -> String {
        local(seconds: instant.seconds, clock: clock, withUTC: withUTC)
    }

    public static func local(seconds instant: Int64, clock: ZoneClock, withUTC: Bool = true) -> String {
        let offset = clock.offset(at: instant)
        let c = CivilTime(secondsAsUTC: instant + offset)
        let weekday = LocalDay.containing(instant, clock: clock).weekday
        let name = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][weekday]
        var text = "\(name) \(c.year)-\(two(c.month))-\(two(c.day)) \(two(c.hour)):\(two(c.minute))"
        if c.second != 0 { text += ":\(two(c.second))" }
        text += " " + offsetText(offset)
        if withUTC {
            let u = CivilTime(secondsAsUTC: instant)
            text += " (" + (u.day != c.day ? "\(two(u.month))-\(two(u.day)) " : "") + "\(two(u.hour)):\(two(u.minute)) UTC)"
        }
        return text
    }
}
