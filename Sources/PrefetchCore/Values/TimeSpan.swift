/// A length of time written as `90s`, `15m`, `2h`, `1d` or combined (`1h30m`).
///
/// Named `TimeSpan` so it does not shadow the standard library's `Duration`.
public struct TimeSpan: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The length in whole seconds (negative only for clock offsets).
    public var seconds: Int64

    /// Creates a span of `seconds`.
    public init(seconds: Int64) {
        self.seconds = seconds
    }

    public static let zero = TimeSpan(seconds: 0)
    public static func minutes(_ m: Int64) -> TimeSpan { TimeSpan(seconds: m * 60) }
    public static func hours(_ h: Int64) -> TimeSpan { TimeSpan(seconds: h * 3600) }

    public static func < (a: TimeSpan, b: TimeSpan) -> Bool { a.seconds < b.seconds }

    private static let units: [(Character, Int64)] = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)]

    /// Parses the manifest syntax: one or more `<digits><unit>` groups, units `d h m s`
    /// in that order, each at most once. With `signed`, a leading `+` or `-` is allowed
    /// (no sign means `+`).
    public static func parse(_ text: String, signed: Bool = false) throws(ValueError) -> TimeSpan {
        let chars = Array(text)
        var index = 0
        var sign: Int64 = 1
        if signed, let first = chars.first, first == "+" || first == "-" {
            sign = first == "-" ? -1 : 1
            index = 1
        }
        guard index < chars.count else {
            throw ValueError("expected a duration such as 90s, 15m, 2h, 1d or 1h30m")
        }
        var total: Int64 = 0
        var nextUnit = 0
        while index < chars.count {
            let start = index
            var number: Int64 = 0
            while index < chars.count, let digit = chars[index].wholeNumberValue, chars[index].isASCII {
                let (product, overflow1) = number.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = product.addingReportingOverflow(Int64(digit))
                if overflow1 || overflow2 { throw ValueError("duration is too large", at: start) }
                number = sum
                index += 1
            }
            if index == start, chars[index] == " " {
                throw ValueError("a duration has no spaces; write it as \(text.filter { $0 != " " })", at: index)
            }
            if index == start {
                throw ValueError("expected a number in duration '\(text)' (forms: 90s, 15m, 2h, 1d, 1h30m)", at: index)
            }
            guard index < chars.count else {
                throw ValueError("duration '\(text)' needs a unit: s, m, h or d (as in \(text)s)", at: index)
            }
            let unit = chars[index]
            guard let position = units.firstIndex(where: { $0.0 == unit }) else {
                throw ValueError("unknown duration unit '\(unit)'; use s, m, h or d", at: index)
            }
            guard position >= nextUnit else {
                throw ValueError("duration units must go from large to small, each once (as in 1h30m)", at: index)
            }
            nextUnit = position + 1
            let (scaled, overflow1) = number.multipliedReportingOverflow(by: units[position].1)
            let (sum, overflow2) = total.addingReportingOverflow(scaled)
            if overflow1 || overflow2 || sum > 100 * 365 * 86_400 {
                throw ValueError("duration is too large", at: start)
            }
            total = sum
            index += 1
        }
        return TimeSpan(seconds: sign * total)
    }

    /// The shortest manifest spelling: `0s`, `90s` → `1m30s`, `1h30m`, `2d`.
    public var description: String {
        if seconds == 0 { return "0s" }
        var rest = seconds.magnitude
        var out = seconds < 0 ? "-" : ""
        for (unit, size) in Self.units where rest >= UInt64(size) {
            out += "\(rest / UInt64(size))\(unit)"
            rest %= UInt64(size)
        }
        return out
    }
}
