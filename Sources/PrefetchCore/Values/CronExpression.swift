/// A parsed five-field cron expression (minute hour day-of-month month day-of-week),
/// as Vixie cron and cronie read it. Evaluation lives in the schedule code; this type
/// holds the sets of matching values and the two flags that evaluation needs.
public struct CronExpression: Sendable, Hashable, CustomStringConvertible {
    /// Matching minutes, bit n set for minute n (0–59).
    public var minutes: UInt64
    /// Matching hours, bit n for hour n (0–23).
    public var hours: UInt32
    /// Matching days of the month, bit n for day n (1–31).
    public var daysOfMonth: UInt32
    /// Matching months, bit n for month n (1–12).
    public var months: UInt16
    /// Matching weekdays, bit n for weekday n (0 = Sunday … 6 = Saturday).
    public var daysOfWeek: UInt8
    /// False when the day-of-month field begins with `*` (classic cron's "either day field" rule).
    public var dayOfMonthRestricted: Bool
    /// False when the day-of-week field begins with `*`.
    public var dayOfWeekRestricted: Bool
    /// True when the minute or hour field contains `*`: such a schedule follows real time
    /// across DST changes; a fixed-time one fires once per matching local time.
    public var isPeriodic: Bool
    /// The expression as written.
    public var source: String

    public var description: String { source }

    private static let macros: [String: String] = [
        "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
        "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
        "@hourly": "0 * * * *",
    ]

    private struct FieldSpec {
        let name: String
        let range: ClosedRange<Int>
        let names: [String]   // names[i] is value range.lowerBound + i, when present
    }

    private static let fields: [FieldSpec] = [
        FieldSpec(name: "minute", range: 0...59, names: []),
        FieldSpec(name: "hour", range: 0...23, names: []),
        FieldSpec(name: "day-of-month", range: 1...31, names: []),
        FieldSpec(name: "month", range: 1...12,
                  names: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]),
        FieldSpec(name: "day-of-week", range: 0...7, names: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]),
    ]

    /// Parses a cron expression or macro; errors carry the character offset of the problem.
    public static func parse(_ text: String) throws(ValueError) -> CronExpression {
        let chars = Array(text)
        var start = 0
        while start < chars.count, chars[start] == " " || chars[start] == "\t" { start += 1 }
        if start < chars.count, chars[start] == "@" {
            let word = String(chars[start...]).trimmingSpaces().lowercased()
            if word == "@reboot" {
                throw ValueError("@reboot is not supported: prefetch schedules releases in time", at: start)
            }
            guard let expansion = macros[word] else {
                throw ValueError("unknown macro '\(word)'; use @hourly, @daily, @weekly, @monthly or @yearly", at: start)
            }
            var expression = try parseFields(Array(expansion), source: text, offsetBase: nil)
            expression.source = text
            return expression
        }
        return try parseFields(chars, source: text, offsetBase: 0)
    }

    private static func parseFields(_ chars: [Character], source: String, offsetBase: Int?) throws(ValueError) -> CronExpression {
        // Split on blanks, remembering where each field starts.
        var tokens: [(text: [Character], offset: Int)] = []
        var index = 0
        while index < chars.count {
            if chars[index] == " " || chars[index] == "\t" { index += 1; continue }
            let begin = index
            while index < chars.count, chars[index] != " ", chars[index] != "\t" { index += 1 }
            tokens.append((Array(chars[begin..<index]), begin))
        }
        func at(_ offset: Int) -> Int { offsetBase.map { $0 + offset } ?? 0 }
        guard tokens.count == 5 else {
            let found = tokens.count
            let position = found > 5 ? tokens[5].offset : chars.count
            throw ValueError("a cron expression has 5 fields (minute hour day-of-month month day-of-week); found \(found)", at: at(position))
        }
        var sets: [UInt64] = []
        for (number, token) in tokens.enumerated() {
            sets.append(try parseField(token.text, spec: fields[number]) { at(token.offset + $0) })
        }
        var daysOfWeek = sets[4]
        if daysOfWeek & (1 << 7) != 0 { daysOfWeek = (daysOfWeek | 1) & 0x7f }  // 7 is Sunday
        let hasStar = { (field: Int) in tokens[field].text.contains("*") }
        let expression = CronExpression(
            minutes: sets[0], hours: UInt32(sets[1]), daysOfMonth: UInt32(sets[2]),
            months: UInt16(sets[3]), daysOfWeek: UInt8(daysOfWeek),
            dayOfMonthRestricted: tokens[2].text.first != "*",
            dayOfWeekRestricted: tokens[4].text.first != "*",
            isPeriodic: hasStar(0) || hasStar(1),
            source: source)
        if !expression.canFire {
            throw ValueError("this schedule never fires: no selected month has the selected day of the month", at: at(tokens[2].offset))
        }
        return expression
    }

    /// False only for day-of-month/month combinations that no calendar has (`0 0 30 2 *`).
    private var canFire: Bool {
        if dayOfWeekRestricted { return true }  // either day field may match
        let longest = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        for month in 1...12 where months & (1 << month) != 0 {
            let allowed: UInt64 = (UInt64(1) << UInt64(longest[month] + 1)) - 2
            if UInt64(daysOfMonth) & allowed != 0 { return true }
        }
        return false
    }

    private static func parseField(_ text: [Character], spec: FieldSpec, at: (Int) -> Int) throws(ValueError) -> UInt64 {
        var set: UInt64 = 0
        var itemStart = 0
        for (position, piece) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            if position > 0 { itemStart += 1 }
            defer { itemStart += piece.count }
            if piece.isEmpty {
                throw ValueError("empty item in the \(spec.name) field", at: at(itemStart))
            }
            set |= try parseItem(Array(piece), spec: spec) { at(itemStart + $0) }
        }
        return set
    }

    private static func parseItem(_ item: [Character], spec: FieldSpec, at: (Int) -> Int) throws(ValueError) -> UInt64 {
        var rangePart = item
        var step = 1
        if let slash = item.firstIndex(of: "/") {
            rangePart = Array(item[..<slash])
            let stepText = item[(slash + 1)...]
            guard let value = Int(String(stepText)), value > 0, stepText.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                throw ValueError("step after '/' must be a whole number above 0 in the \(spec.name) field", at: at(slash + 1))
            }
            step = value
        }
        var low: Int
        var high: Int
        if rangePart == ["*"] {
            low = spec.range.lowerBound
            high = spec.range.upperBound  // day-of-week: to 7 (Sunday again), as cronie's `*` spans 0–7
        } else if let dash = rangePart.firstIndex(of: "-") {
            low = try value(Array(rangePart[..<dash]), spec: spec, at: at(0))
            high = try value(Array(rangePart[(dash + 1)...]), spec: spec, at: at(dash + 1))
            if low > high {
                throw ValueError("range \(String(rangePart)) runs backwards in the \(spec.name) field", at: at(0))
            }
        } else {
            low = try value(rangePart, spec: spec, at: at(0))
            // `a/step` means from a to the end of the field, as in cronie (for day-of-week
            // that is 7, Sunday: `1/2` is Mon, Wed, Fri and Sun).
            high = item.contains("/") ? spec.range.upperBound : low
        }
        var set: UInt64 = 0
        var current = low
        while current <= high {
            set |= 1 << UInt64(current)
            current += step
        }
        return set
    }

    private static func value(_ text: [Character], spec: FieldSpec, at offset: Int) throws(ValueError) -> Int {
        let word = String(text)
        if let number = Int(word), text.allSatisfy({ $0.isASCII && $0.isNumber }) {
            guard spec.range.contains(number) else {
                throw ValueError("\(number) is out of range for the \(spec.name) field (\(spec.range.lowerBound)–\(spec.range.upperBound))", at: offset)
            }
            return number
        }
        if let index = spec.names.firstIndex(of: word.lowercased()) {
            return spec.range.lowerBound + index
        }
        if word.isEmpty {
            throw ValueError("missing value in the \(spec.name) field", at: offset)
        }
        let expected = spec.names.isEmpty ? "a number" : "a number or a name such as \(spec.names[0])"
        throw ValueError("'\(word)' is not valid in the \(spec.name) field; expected \(expected)", at: offset)
    }
}

extension String {
    /// The string without leading and trailing blanks (spaces and tabs).
    func trimmingSpaces() -> String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
