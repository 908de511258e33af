import Foundation

/// Formats instants for people and for JSON.
public enum TimeFormat {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

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
        rfc3339(seconds: instant, offset: clock.offset(at: instant))
    }

    /// As `rfc3339(_:clock:)`, with the zone's offsets from `offsets` (many instants in a row).
    static func rfc3339(_ instant: Instant, offsets: inout ZoneOffsets) -> String {
        rfc3339(seconds: instant.seconds, offsets: &offsets)
    }

    static func rfc3339(seconds instant: Int64, offsets: inout ZoneOffsets) -> String {
        rfc3339(seconds: instant, offset: offsets.offset(at: instant))
    }

    private static func rfc3339(seconds instant: Int64, offset: Int64) -> String {
        let c = CivilTime(secondsAsUTC: instant + offset)
        return TextWriter.string { w in
            w.number(c.year); w.byte("-"); w.two(c.month); w.byte("-"); w.two(c.day)
            w.byte("T"); w.two(c.hour); w.byte(":"); w.two(c.minute); w.byte(":"); w.two(c.second)
            w.offset(offset)
        }
    }

    /// `Mon 2026-11-30 02:30 +01:00 (01:30 UTC)`: local time with the UTC time beside it.
    public static func local(_ instant: Instant, clock: ZoneClock, withUTC: Bool = true) -> String {
        local(seconds: instant.seconds, clock: clock, withUTC: withUTC)
    }

    public static func local(seconds instant: Int64, clock: ZoneClock, withUTC: Bool = true) -> String {
        local(seconds: instant, offset: clock.offset(at: instant), withUTC: withUTC)
    }

    /// As `local(_:clock:withUTC:)`, with the zone's offsets from `offsets` (many instants in a row).
    static func local(_ instant: Instant, offsets: inout ZoneOffsets, withUTC: Bool = true) -> String {
        local(seconds: instant.seconds, offsets: &offsets, withUTC: withUTC)
    }

    static func local(seconds instant: Int64, offsets: inout ZoneOffsets, withUTC: Bool = true) -> String {
        local(seconds: instant, offset: offsets.offset(at: instant), withUTC: withUTC)
    }

    /// `instant` shown with the zone's `offset` in force then.
    private static func local(seconds instant: Int64, offset: Int64, withUTC: Bool) -> String {
        let c = CivilTime(secondsAsUTC: instant + offset)
        // The local day's weekday (`LocalDay.containing`), from the offset already found.
        let local = instant + offset
        let weekday = LocalDay(number: local >= 0 ? local / 86_400 : (local - 86_399) / 86_400).weekday
        return TextWriter.string { w in
            w.text(weekdays[weekday]); w.byte(" ")
            w.number(c.year); w.byte("-"); w.two(c.month); w.byte("-"); w.two(c.day)
            w.byte(" "); w.two(c.hour); w.byte(":"); w.two(c.minute)
            if c.second != 0 { w.byte(":"); w.two(c.second) }
            w.byte(" "); w.offset(offset)
            if withUTC {
                let u = CivilTime(secondsAsUTC: instant)
                w.text(" (")
                if u.day != c.day { w.two(u.month); w.byte("-"); w.two(u.day); w.byte(" ") }
                w.two(u.hour); w.byte(":"); w.two(u.minute); w.text(" UTC)")
            }
        }
    }

    /// Writes a time's text byte by byte into one string (a plan formats one per row:
    /// interpolating each part made a string of each).
    private struct TextWriter {
        private let buffer: UnsafeMutableBufferPointer<UInt8>
        private(set) var count = 0

        /// The longest text written: a weekday, a date of any year Int holds, a time, an
        /// offset and the UTC part.
        static let capacity = 96

        static func string(_ fill: (inout TextWriter) -> Void) -> String {
            String(unsafeUninitializedCapacity: capacity) { buffer in
                var writer = TextWriter(buffer: buffer)
                fill(&writer)
                return writer.count
            }
        }

        private init(buffer: UnsafeMutableBufferPointer<UInt8>) {
            self.buffer = buffer
        }

        mutating func byte(_ character: Unicode.Scalar) {
            buffer[count] = UInt8(ascii: character)
            count += 1
        }

        mutating func text(_ text: String) {
            for byte in text.utf8 {
                buffer[count] = byte
                count += 1
            }
        }

        /// `n` in decimal, as `"\(n)"` writes it.
        mutating func number(_ n: Int) {
            for digit in DecimalDigits(n) {
                buffer[count] = digit
                count += 1
            }
        }

        /// At least two digits (`two`).
        mutating func two(_ n: Int) {
            if n < 10 { byte("0") }
            number(n)
        }

        /// `±HH:MM` (`offsetText`).
        mutating func offset(_ seconds: Int64) {
            byte(seconds < 0 ? "-" : "+")
            let magnitude = Int(seconds.magnitude)
            two(magnitude / 3600)
            byte(":")
            two(magnitude % 3600 / 60)
        }
    }
}
