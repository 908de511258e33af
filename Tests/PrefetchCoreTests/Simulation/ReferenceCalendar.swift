// An independent, brute-force reference of a feed's calendar (releases and transfer windows),
// written from SPEC.md §1 ("Cron", "DST", "Windows", "days", "jitter") and §5 ("Releases and
// freshness") alone, without looking at the planner's own Schedule/ or Plan/ code. The planner
// simulation compares the real planner against it. It favours obviously-correct over fast: real
// time is walked minute by minute, UTC offsets come from `TimeZone.secondsFromGMT(for:)`, and a
// local civil time is resolved to an instant by trying every offset segment around it.
//
// Times are Int64 seconds since the Unix epoch (UTC). "Local seconds" are the same count taken in
// the zone's civil time, as if that civil time were UTC (so plain arithmetic gives the civil date).

import Foundation

/// A 5-field cron expression (minute hour day-of-month month day-of-week) or a macro.
struct ReferenceCron: Sendable {
    private let minutes: Set<Int>, hours: Set<Int>, daysOfMonth: Set<Int>, months: Set<Int>, weekdays: Set<Int>
    private let dayOfMonthStar: Bool, weekdayStar: Bool
    /// True when the minute or the hour field contains `*` (periodic schedule), else fixed-time.
    let isPeriodic: Bool

    private static let macros = [
        "@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@weekly": "0 0 * * 0",
        "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
    ]
    private static let monthNames = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let dayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    /// Parses the expression; nil for anything it does not understand.
    init?(_ text: String) {
        var body = text.trimmingCharacters(in: .whitespaces)
        if body.hasPrefix("@") {
            guard let expansion = Self.macros[body] else { return nil }
            body = expansion
        }
        let fields = body.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count == 5,
              let minutes = Self.parseField(fields[0], 0, 59, names: [], firstName: 0),
              let hours = Self.parseField(fields[1], 0, 23, names: [], firstName: 0),
              let daysOfMonth = Self.parseField(fields[2], 1, 31, names: [], firstName: 0),
              let months = Self.parseField(fields[3], 1, 12, names: Self.monthNames, firstName: 1),
              let weekdays = Self.parseField(fields[4], 0, 7, names: Self.dayNames, firstName: 0)
        else { return nil }
        self.minutes = minutes
        self.hours = hours
        self.daysOfMonth = daysOfMonth
        self.months = months
        self.weekdays = Set(weekdays.map { $0 == 7 ? 0 : $0 })
        dayOfMonthStar = fields[2].hasPrefix("*")
        weekdayStar = fields[4].hasPrefix("*")
        isPeriodic = fields[0].contains("*") || fields[1].contains("*")
    }

    /// One field: a comma list of `*`, `n`, `a-b`, each optionally followed by `/step`
    /// (`*/s` = lo...hi, `a/s` = a...hi, `a-b/s` = a...b), every value within lo...hi.
    private static func parseField(_ text: String, _ lo: Int, _ hi: Int, names: [String], firstName: Int) -> Set<Int>? {
        func value(_ token: Substring) -> Int? {
            if !token.isEmpty, token.allSatisfy({ $0.isASCII && $0.isNumber }) { return Int(token) }
            return names.firstIndex(of: token.lowercased()).map { $0 + firstName }
        }
        var result = Set<Int>()
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = item.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { return nil }
            var step = 1
            if parts.count == 2 {
                guard parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let s = Int(parts[1]), s > 0 else { return nil }
                step = s
            }
            var first: Int, last: Int
            if parts[0] == "*" {
                (first, last) = (lo, hi)
            } else {
                let ends = parts[0].split(separator: "-", omittingEmptySubsequences: false)
                guard ends.count <= 2, let a = value(ends[0]) else { return nil }
                first = a
                if ends.count == 2 {
                    guard let b = value(ends[1]), a <= b else { return nil }
                    last = b
                } else {
                    last = parts.count == 2 ? hi : a
                }
            }
            guard lo <= first, last <= hi else { return nil }
            for v in stride(from: first, through: last, by: step) { result.insert(v) }
        }
        return result
    }

    /// Whether the local civil minute matches (weekday 0 = Sunday ... 6), with Vixie cron's
    /// DOM_STAR / DOW_STAR rule for the two day fields.
    func matches(year: Int, month: Int, day: Int, hour: Int, minute: Int, weekday: Int) -> Bool {
        guard minutes.contains(minute), hours.contains(hour), months.contains(month) else { return false }
        let dayOfMonthOK = daysOfMonth.contains(day), weekdayOK = weekdays.contains(weekday)
        return dayOfMonthStar || weekdayStar ? (dayOfMonthOK && weekdayOK) : (dayOfMonthOK || weekdayOK)
    }
}

/// Minutes of the local day, 0..<1440; start == end is the whole day; end < start wraps past midnight.
struct ReferenceWindow: Sendable {
    var start: Int
    var end: Int
}

/// Civil-date arithmetic on day numbers (days since 1970-01-01), proleptic Gregorian.
enum ReferenceCivil {
    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
    static func floorMod(_ a: Int64, _ b: Int64) -> Int64 { a - floorDiv(a, b) * b }
    static func weekday(ofDay day: Int64) -> Int { Int(floorMod(day + 4, 7)) }  // 1970-01-01 was a Thursday

    static func date(ofDay day: Int64) -> (year: Int, month: Int, day: Int) {
        let z = day + 719_468
        let era = floorDiv(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let d = dayOfYear - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (Int(yearOfEra + era * 400 + (m <= 2 ? 1 : 0)), Int(m), Int(d))
    }

    /// Whether `cron` matches the civil minute that starts at `localSeconds`.
    static func cron(_ cron: ReferenceCron, matchesLocal localSeconds: Int64) -> Bool {
        let day = floorDiv(localSeconds, 86400), secondOfDay = localSeconds - day * 86400
        let (y, m, d) = date(ofDay: day)
        return cron.matches(year: y, month: m, day: d, hour: Int(secondOfDay / 3600),
                            minute: Int(secondOfDay % 3600 / 60), weekday: weekday(ofDay: day))
    }
}

/// The zone's UTC offset as constant segments over [lo, hi): sampled every hour, each change
/// located to the second by bisection (assumes at most one offset change per hour).
struct ReferenceOffsets: Sendable {
    struct Segment: Sendable { var start: Int64; var end: Int64; var offset: Int64 }
    let zone: TimeZone
    let lo: Int64, hi: Int64
    private(set) var segments: [Segment] = []

    init(zone: TimeZone, from: Int64, to: Int64) {
        self.zone = zone
        lo = ReferenceCivil.floorDiv(from, 3600) * 3600
        hi = max(lo + 3600, ReferenceCivil.floorDiv(to, 3600) * 3600 + 3600)
        var current = Segment(start: lo, end: hi, offset: Self.offset(zone, lo))
        var hour = lo
        while hour < hi {
            let next = hour + 3600
            if Self.offset(zone, next) != current.offset {
                var (a, b) = (hour, next)  // offset(a) == current, offset(b) != current
                while b - a > 1 {
                    let mid = (a + b) / 2
                    if Self.offset(zone, mid) == current.offset { a = mid } else { b = mid }
                }
                current.end = b
                segments.append(current)
                current = Segment(start: b, end: hi, offset: Self.offset(zone, b))
            }
            hour = next
        }
        segments.append(current)
    }

    static func offset(_ zone: TimeZone, _ t: Int64) -> Int64 {
        Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(t))))
    }

    func offset(at t: Int64) -> Int64 {
        segments.first(where: { $0.start <= t && t < $0.end })?.offset ?? Self.offset(zone, t)
    }

    func localSeconds(at t: Int64) -> Int64 { t + offset(at: t) }

    /// The fixed-time rule: the first instant whose local time is `local`; when no instant has it
    /// (a spring-forward gap), the first instant after the gap.
    func resolve(_ local: Int64) -> Int64 {
        let margin: Int64 = 2 * 86400
        guard lo <= local - margin, local + margin <= hi else {
            return ReferenceOffsets(zone: zone, from: local - margin, to: local + margin).resolve(local)
        }
        let exact = segments.compactMap { s -> Int64? in
            let t = local - s.offset
            return s.start <= t && t < s.end ? t : nil
        }
        if let first = exact.min() { return first }
        // In a gap: the first instant whose local time is already past `local`.
        let after = segments.compactMap { s -> Int64? in
            let t = max(s.start, local - s.offset)
            return t < s.end ? t : nil
        }
        return after.min() ?? local - offset(at: local)
    }
}

struct ReferenceCalendar: Sendable {
    var zone: TimeZone
    var cron: ReferenceCron? = nil
    var windows: [ReferenceWindow] = []
    var days: Set<Int>? = nil
    var jitter: Int64 = 0

    private static let day: Int64 = 86400

    /// No windows and no days: always open.
    private var alwaysOpen: Bool { windows.isEmpty && days == nil }
    /// `days` without `windows` means whole days.
    private var effectiveWindows: [ReferenceWindow] { windows.isEmpty ? [ReferenceWindow(start: 0, end: 0)] : windows }

    /// One window occurrence: `nominal` is its opening before jitter, [open, close) after jitter.
    private struct Occurrence { var nominal: Int64; var open: Int64; var close: Int64 }

    /// The occurrences of every window opening on the local days `first...last` (weekday in `days`).
    private func occurrences(days first: Int64, _ last: Int64, _ table: ReferenceOffsets) -> [Occurrence] {
        var result: [Occurrence] = []
        for d in first...last where days?.contains(ReferenceCivil.weekday(ofDay: d)) ?? true {
            for w in effectiveWindows {
                let startLocal = d * Self.day + Int64(w.start) * 60
                var lengthMinutes = ReferenceCivil.floorMod(Int64(w.end - w.start), 1440)
                if lengthMinutes == 0 { lengthMinutes = 1440 }
                let nominal = table.resolve(startLocal)
                let close = table.resolve(startLocal + lengthMinutes * 60)
                let open = nominal + ReferenceCivil.floorMod(jitter, lengthMinutes * 60)
                result.append(Occurrence(nominal: nominal, open: open, close: close))
            }
        }
        return result
    }

    /// The nominal release instants (before jitter) in [from, to), sorted, without duplicates.
    func releases(from: Int64, to: Int64) -> [Int64] {
        guard from < to else { return [] }
        let table = ReferenceOffsets(zone: zone, from: from - 3 * Self.day, to: to + 3 * Self.day)
        var found: [Int64] = []
        if let cron, cron.isPeriodic {
            // Real time, minute by minute: every instant whose local time is a matching minute.
            for s in table.segments where s.end > from && s.start < to {
                let begin = max(s.start, from)
                var t = begin + ReferenceCivil.floorMod(-(begin + s.offset), 60)
                while t < min(s.end, to) {
                    if ReferenceCivil.cron(cron, matchesLocal: t + s.offset) { found.append(t) }
                    t += 60
                }
            }
        } else if let cron {
            // Local time, minute by minute: each matching civil minute once, by the fixed-time rule.
            let firstMinute = ReferenceCivil.floorDiv(from, 60) - 2 * 1440
            let lastMinute = ReferenceCivil.floorDiv(to, 60) + 2 * 1440
            for minute in firstMinute...lastMinute where ReferenceCivil.cron(cron, matchesLocal: minute * 60) {
                let t = table.resolve(minute * 60)
                if from <= t && t < to { found.append(t) }
            }
        } else if !alwaysOpen {
            let first = ReferenceCivil.floorDiv(from, Self.day) - 2, last = ReferenceCivil.floorDiv(to, Self.day) + 2
            found = occurrences(days: first, last, table).map(\.nominal).filter { from <= $0 && $0 < to }
        }
        return Array(Set(found)).sorted()
    }

    /// The occurrence containing t (latest close, then earliest open, when several do).
    private func interval(at t: Int64, _ table: ReferenceOffsets) -> (open: Int64, close: Int64)? {
        if alwaysOpen { return (Int64.min, Int64.max) }
        let today = ReferenceCivil.floorDiv(table.localSeconds(at: t), Self.day)
        let containing = occurrences(days: today - 2, today + 1, table).filter { $0.open <= t && t < $0.close }
        guard let best = containing.max(by: { ($0.close, -$0.open) < ($1.close, -$1.open) }) else { return nil }
        return (best.open, best.close)
    }

    /// Every non-empty window occurrence [open, close) after jitter that meets [from, to),
    /// sorted by opening (a simulation over weeks asks `isOpen` thousands of times: it looks
    /// them up here instead). Nil when always open.
    func openIntervals(from: Int64, to: Int64) -> [(open: Int64, close: Int64)]? {
        if alwaysOpen { return nil }
        let table = ReferenceOffsets(zone: zone, from: from - 4 * Self.day, to: to + 4 * Self.day)
        let first = ReferenceCivil.floorDiv(table.localSeconds(at: from), Self.day) - 2
        let last = ReferenceCivil.floorDiv(table.localSeconds(at: to), Self.day) + 1
        return occurrences(days: first, last, table).filter { $0.open < $0.close && $0.close > from && $0.open < to }
            .map { ($0.open, $0.close) }.sorted { $0.open < $1.open }
    }

    /// Whether transfers may run at instant t: some window occurrence contains t.
    func isOpen(at t: Int64) -> Bool { openInterval(at: t) != nil }

    /// The window occurrence containing t as [open, close) after jitter; nil when closed;
    /// (Int64.min, Int64.max) when there are neither windows nor days.
    func openInterval(at t: Int64) -> (open: Int64, close: Int64)? {
        interval(at: t, ReferenceOffsets(zone: zone, from: t - 4 * Self.day, to: t + 4 * Self.day))
    }

    /// The first instant in [t, t + horizon] at which isOpen is true, nil when none. Openness only
    /// ever begins at an occurrence's (jittered) opening, so the answer is t itself or such an opening.
    func nextOpen(atOrAfter t: Int64, horizon: Int64) -> Int64? {
        guard horizon >= 0 else { return nil }
        if alwaysOpen { return t }
        let table = ReferenceOffsets(zone: zone, from: t - 4 * Self.day, to: t + horizon + 4 * Self.day)
        if interval(at: t, table) != nil { return t }
        let first = ReferenceCivil.floorDiv(table.localSeconds(at: t), Self.day) - 2
        let last = ReferenceCivil.floorDiv(table.localSeconds(at: t + horizon), Self.day) + 1
        return occurrences(days: first, last, table)
            .filter { $0.open < $0.close && $0.open > t && $0.open <= t + horizon }
            .map(\.open).min()
    }
}
