/// Draws a `Timeline` across a width of columns (SPEC §2, `plan --timeline`): a header
/// naming this machine's zone, a ruler of days and hours, a line marking now, then per feed
/// a chart line and a line that says it in words, and a legend. Colour only on a terminal.
///
/// Each column is an equal slice of real time, so a day with a DST change is an hour
/// longer or shorter on the ruler. Glyphs (docs/commands.md, "The plan as a picture"):
/// `█` a window is open in that slice, `░` open but a condition holds the feed back now
/// (from now on), `·` closed, `│` a release, `▶` this machine starts (the release's jitter),
/// `◆` the work pending should be done, `▼` now.
public struct TimelineRenderer {
    public var width: Int
    public var color: Bool

    public init(width: Int = 100, color: Bool = false) {
        self.width = width
        self.color = color
    }

    /// The label column: feed names, cut to fit.
    static let labelWidth = 16

    public func text(_ timeline: Timeline) -> String {
        let chart = max(10, width - Self.labelWidth - 1)
        let span = timeline.end.seconds - timeline.start.seconds
        func column(_ instant: Instant) -> Int? {
            let offset = instant.seconds - timeline.start.seconds
            guard offset >= 0, offset < span else { return nil }
            return Int(offset * Int64(chart) / span)
        }
        // Column c covers [edge(c), edge(c + 1)).
        func edge(_ c: Int) -> Int64 { timeline.start.seconds + span * Int64(c) / Int64(chart) }
        let clock = timeline.clock
        let pad = String(repeating: " ", count: Self.labelWidth + 1)
        var out = "timeline in \(timeline.zoneName), this machine's zone\n"
            + Self.short(timeline.start, clock: clock, date: true) + " to " + Self.short(timeline.end, clock: clock, date: true)
            + " · 1 column = " + Self.duration(span / Int64(chart)) + "\n"

        // The ruler: day names at local midnights, hours between them.
        var days = [Character](repeating: " ", count: chart), hours = [Character](repeating: " ", count: chart)
        let first = LocalDay.containing(timeline.start.seconds, clock: clock).number
        let last = LocalDay.containing(timeline.end.seconds - 1, clock: clock).number
        let secondsPerColumn = Double(span) / Double(chart)
        let columnsPerDay = 86_400 / secondsPerColumn
        var dayEnd = -1
        for number in first...last {
            let day = LocalDay(number: number)
            guard let c = column(Instant(seconds: day.instant(minute: 0, clock: clock))), c > dayEnd else { continue }
            let name = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][day.weekday]
            let label = columnsPerDay >= 11 ? "\(name) \(Self.two(day.civil.month))-\(Self.two(day.civil.day))"
                : columnsPerDay >= 7 ? "\(name) \(Self.two(day.civil.day))" : Self.two(day.civil.day)
            guard c + label.count <= chart else { continue }
            for (i, character) in label.enumerated() { days[c + i] = character }
            dayEnd = c + label.count
        }
        // Hours every 1, 2, 3, 6 or 12 h: the first step that leaves 4 columns per label.
        if let step = [1, 2, 3, 6, 12].first(where: { Double($0 * 3600) / secondsPerColumn >= 4 }) {
            var hourEnd = -1
            for number in first...last {
                for hour in stride(from: 0, to: 24, by: step) {
                    let instant = LocalDay(number: number).instant(minute: hour * 60, clock: clock)
                    guard clock.civil(at: instant).hour == hour, let c = column(Instant(seconds: instant)),
                          c > hourEnd, c + 2 <= chart else { continue }
                    hours[c] = Self.two(hour).first!
                    hours[c + 1] = Self.two(hour).last!
                    hourEnd = c + 2
                }
            }
        }
        out += pad + String(days).trimmingTrailing() + "\n"
        if hours.contains(where: { $0 != " " }) { out += pad + String(hours).trimmingTrailing() + "\n" }
        if let c = column(timeline.now) {
            let label = "▼ now " + Self.short(timeline.now, clock: clock, date: false)
            let marker = c + label.count <= chart ? String(repeating: " ", count: c) + label
                : String(repeating: " ", count: max(0, c - label.count + 1)) + String(label.dropFirst(2)) + " ▼"
            out += pad + paint(marker, "31") + "\n"
        }

        for row in timeline.rows {
            var cells = [(Character, String?)](repeating: ("·", nil), count: chart)
            for c in 0..<chart {
                let (low, high) = (edge(c), edge(c + 1))
                guard row.windows.contains(where: { $0.open < high && low < $0.close }) else { continue }
                cells[c] = !row.heldBy.isEmpty && high > timeline.now.seconds ? ("░", "33") : ("█", "32")
            }
            for release in row.releases { if let c = column(release) { cells[c] = ("│", "1") } }
            for start in row.starts + [row.nextStart].compactMap({ $0 }) where start > timeline.now || row.starts.contains(start) {
                if let c = column(start) { cells[c] = ("▶", "36") }
            }
            if let finish = row.finish, let c = column(finish) { cells[c] = ("◆", "35") }
            let label = row.feed.count > Self.labelWidth ? String(row.feed.prefix(Self.labelWidth - 1)) + "…" : row.feed
            out += paint(label, "1") + String(repeating: " ", count: Self.labelWidth + 1 - label.count)
            out += cells.map { cell in cell.1.map { paint(String(cell.0), $0) } ?? String(cell.0) }.joined() + "\n"
            out += wrapped(words(row, timeline: timeline), indent: pad, separator: " · ")
        }
        out += "\n" + wrapped(Self.legend, indent: "", separator: "  ")
        return out
    }

    static let legend = ["█ window open", "░ open, held back", "· closed", "│ release", "▶ this machine starts", "◆ done", "▼ now"]

    /// Parts joined by `separator`, on as many lines as the width needs (a part is never cut).
    func wrapped(_ parts: [String], indent: String, separator: String) -> String {
        var out = "", line = indent
        for part in parts {
            if line.count > indent.count, line.count + separator.count + part.count > width {
                out += line + "\n"
                line = indent
            }
            line += (line.count > indent.count ? separator : "") + part
        }
        return out + line + "\n"
    }

    /// A feed's line in words: when it starts, when it should be done, what holds it back.
    func words(_ row: Timeline.Row, timeline: Timeline) -> [String] {
        let clock = timeline.clock
        guard row.pendingCount > 0 else {
            let next = row.starts.first { $0 > timeline.now } ?? row.releases.first { $0 > timeline.now }
            return ["nothing pending"] + (next.map { ["next release starts " + Self.short($0, clock: clock, date: false)] } ?? [])
        }
        var parts: [String] = []
        let held = row.heldBy.isEmpty ? "" : "held back: " + row.heldBy.joined(separator: ", ")
        if let start = row.nextStart, start <= timeline.now {
            parts.append(held.isEmpty ? "due now" : "window open, " + held)
        } else {
            parts.append(row.nextStart.map { "starts " + Self.short($0, clock: clock, date: false) } ?? "no window within two weeks")
            if !held.isEmpty { parts.append(held + " now") }
        }
        var size = ByteSize.format(row.pendingBytes)
        if row.unknownSizes > 0 { size += " + \(row.unknownSizes) of unknown size" }
        if let finish = row.finish {
            parts.append("done by about " + Self.short(finish, clock: clock, date: false))
            parts.append(size + " at " + ByteSize.format(UInt64(timeline.throughput)) + "/s" + (timeline.throughputMeasured ? "" : " (assumed)"))
        } else {
            parts.append(size + " pending")
        }
        return parts
    }

    private func paint(_ text: String, _ code: String) -> String {
        color ? "\u{1b}[\(code)m\(text)\u{1b}[0m" : text
    }

    static func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }

    /// `Wed 02:20` (`Wed 2026-12-02 02:20` with the date), seconds rounded down.
    static func short(_ instant: Instant, clock: ZoneClock, date: Bool) -> String {
        let c = clock.civil(at: instant.seconds)
        let name = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][LocalDay.containing(instant.seconds, clock: clock).weekday]
        return name + (date ? " \(c.year)-\(two(c.month))-\(two(c.day))" : "") + " \(two(c.hour)):\(two(c.minute))"
    }

    /// A column's span: `36m`, `1h30m`, `4h2m` (whole minutes, or seconds under one).
    static func duration(_ seconds: Int64) -> String {
        seconds < 60 ? "\(seconds)s" : "\(TimeSpan(seconds: seconds / 60 * 60))"
    }
}

private extension String {
    func trimmingTrailing() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
