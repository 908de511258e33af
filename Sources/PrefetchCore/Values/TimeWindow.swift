/// A daily window `HH:MM-HH:MM` in a feed's local time: start inclusive, end exclusive.
/// An end at or before the start wraps past midnight; equal ends mean the whole day.
public struct TimeWindow: Sendable, Hashable, CustomStringConvertible {
    /// Minutes after local midnight when the window opens (0–1439).
    public var start: Int
    /// Minutes after local midnight when it closes (0–1440; `24:00` is accepted as an end).
    public var end: Int

    /// Creates a window from minute offsets.
    public init(start: Int, end: Int) {
        self.start = start
        self.end = end
    }

    /// True when the window covers the whole day (`00:00-00:00`, `06:00-06:00`, `00:00-24:00`).
    public var isWholeDay: Bool { start == end % 1440 }

    /// True when the window closes on the day after it opens.
    public var wrapsMidnight: Bool { !isWholeDay && end <= start }

    /// The window's length in minutes (1440 for a whole day).
    public var lengthMinutes: Int {
        isWholeDay ? 1440 : (end - start + 1440) % 1440
    }

    public var description: String { "\(Self.clock(start))-\(Self.clock(end))" }

    static func clock(_ minutes: Int) -> String {
        let h = minutes / 60, m = minutes % 60
        return (h < 10 ? "0" : "") + "\(h):" + (m < 10 ? "0" : "") + "\(m)"
    }

    /// Parses `HH:MM-HH:MM` (24-hour clock, two digits each; `24:00` only as an end).
    public static func parse(_ text: String) throws(ValueError) -> TimeWindow {
        let chars = Array(text)
        guard chars.count == 11, chars[5] == "-" else {
            throw ValueError("expected a window as HH:MM-HH:MM, as in \"01:00-05:00\"")
        }
        let start = try clockValue(Array(chars[0..<5]), at: 0, allow24: false)
        let end = try clockValue(Array(chars[6..<11]), at: 6, allow24: true)
        return TimeWindow(start: start, end: end)
    }

    private static func clockValue(_ chars: [Character], at offset: Int, allow24: Bool) throws(ValueError) -> Int {
        guard chars.count == 5, chars[2] == ":",
              let h = Int(String(chars[0..<2])), let m = Int(String(chars[3..<5])),
              chars.enumerated().allSatisfy({ $0.offset == 2 || ($0.element.isASCII && $0.element.isNumber) }) else {
            throw ValueError("expected a time as HH:MM (24-hour clock)", at: offset)
        }
        if allow24, h == 24, m == 0 { return 1440 }
        guard (0...23).contains(h) else { throw ValueError("hour \(h) is out of range (00–23)", at: offset) }
        guard (0...59).contains(m) else { throw ValueError("minute \(m) is out of range (00–59)", at: offset + 3) }
        return h * 60 + m
    }
}

/// A day of the week, numbered as cron does (0 = Sunday).
public enum Weekday: Int, Sendable, Hashable, CaseIterable, Comparable {
    case sun = 0, mon, tue, wed, thu, fri, sat

    /// The three-letter manifest name.
    public var name: String { ["sun", "mon", "tue", "wed", "thu", "fri", "sat"][rawValue] }

    public static func < (a: Weekday, b: Weekday) -> Bool { a.rawValue < b.rawValue }

    private static let fullNames = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]

    /// Parses `mon` … `sun` or the full English name, in any case.
    public static func parse(_ text: String) throws(ValueError) -> Weekday {
        let word = text.lowercased()
        if let day = allCases.first(where: { $0.name == word }) { return day }
        if let index = fullNames.firstIndex(of: word) { return Weekday(rawValue: index)! }
        throw ValueError("'\(text)' is not a day; use mon, tue, wed, thu, fri, sat or sun")
    }
}
