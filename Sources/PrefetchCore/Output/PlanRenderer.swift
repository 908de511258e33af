import Foundation

/// Prints a plan as aligned text (colour only on a terminal) or as JSON lines (SPEC §2).
public struct PlanRenderer {
    public var color = false

    public init(color: Bool = false) {
        self.color = color
    }

    // MARK: JSON

    /// One object per line: a `feed` line, its `resource` lines, and a final `total`.
    public func json(_ plan: Plan) -> String {
        var all = ""
        json(plan) { all += $0 }
        return all
    }

    /// Writes the JSON lines to `sink` in chunks of about 64 KiB.
    public func json(_ plan: Plan, to sink: @escaping (String) -> Void) {
        var out = ChunkedOutput(sink: sink)
        for feed in plan.feeds {
            out += Self.feedObject(feed, plan: plan).line + "\n"
            Self.writeResourceLines(feed, to: &out)
        }
        if let cache = plan.cache {
            out += Self.cacheObject(cache).line + "\n"
        }
        out += Self.totalObject(plan).line + "\n"
        out.flush()
    }

    /// A feed's `feed` line: its schedule, release, jitter, machine id and conditions.
    private static func feedObject(_ feed: FeedPlan, plan: Plan) -> JSONObject {
        var line = JSONObject()
        line.add("type", "feed")
        line.add("feed", feed.name)
        line.add("timezone", feed.zoneName)
        line.add("schedule", feed.schedule)
        line.add("windows", strings: feed.windows.map(\.description))
        line.add("next_releases", strings: feed.nextReleases.map { TimeFormat.rfc3339($0, clock: feed.clock) })
        line.add("current_release", feed.currentRelease.map { TimeFormat.rfc3339($0, clock: feed.clock) })
        line.add("jitter_s", feed.jitterOffset)
        line.add("jitter_max_s", feed.jitter.seconds)
        line.add("machine_id_source", plan.machineID.flatMap { $0.usable ? $0.source : nil })
        if let id = plan.machineID, !id.usable {
            line.add("machine_id_problem", "\(id.source) is \(id.value.isEmpty ? "empty" : id.value): the image baked no usable machine id")
        }
        line.add("window_open", feed.windowOpen)
        line.add("conditions", object: conditionsObject(plan.conditions, holds: feed.holds))
        return line
    }

    /// The conditions as probed, and whether each of the feed's checks holds.
    private static func conditionsObject(_ c: ConditionSnapshot, holds: [(name: String, ok: Bool)]) -> JSONObject {
        var conditions = JSONObject()
        // An unknown reading (SPEC §7) says so, why, and what it counts as.
        conditions.add("network", c.networkUnknown == nil ? (c.metered ? "metered" : "unmetered") : "unknown")
        conditions.add("network_source", c.networkSource)
        if let reason = c.networkUnknown {
            conditions.add("network_reason", reason)
            conditions.add("network_counts_as", c.metered ? "metered" : "unmetered")
        }
        conditions.add("power", c.powerUnknown == nil ? (c.onAC ? "ac" : "battery") : "unknown")
        conditions.add("battery", c.batteryLevel.map { Int64($0) })
        conditions.add("power_source", c.powerSource)
        if let reason = c.powerUnknown {
            conditions.add("power_reason", reason)
            conditions.add("power_counts_as", "ac")
        }
        conditions.add("free_bytes", c.freeBytes)
        conditions.add("free_source", c.freeSource)
        if let reason = c.freeUnknown {
            conditions.add("free_reason", reason)
            conditions.add("free_counts_as", "enough")
        }
        for check in holds { conditions.add(check.name + "_ok", check.ok) }
        return conditions
    }

    /// A `resource` line per row, its times formatted once each (rows share them).
    private static func writeResourceLines(_ feed: FeedPlan, to out: inout ChunkedOutput) {
        var times: [Instant: String] = [:]
        var offsets = ZoneOffsets(feed.clock)
        func time(_ instant: Instant) -> String {
            if let text = times[instant] { return text }
            let text = TimeFormat.rfc3339(instant, offsets: &offsets)
            times[instant] = text
            return text
        }
        for item in feed.items {
            var row = JSONObject()
            row.add("type", "resource")
            row.add("feed", item.feed)
            row.add("path", item.path)
            row.add("url", item.url)
            row.add("served_by", item.servedBy)
            row.add("state", item.status.rawValue)
            row.add("reason", item.reason)
            row.add("next", item.next.map(time))
            row.add("bytes", item.bytes)
            row.add("remaining", item.remaining)
            row.add("from", item.localSource)
            row.add("zsync", item.zsync)
            row.add("priority", item.priority.rawValue)
            row.add("window_end", item.windowEnd.map(time))
            row.add("eta", item.estimatedFinish.map(time))
            row.add("fits", item.fits)
            row.add("error", item.error)
            out += row.line + "\n"
            out.flushIfFull()
        }
    }

    /// The `cache` line (max_cache_size, SPEC §8): use before and after, and what makes room.
    private static func cacheObject(_ cache: CachePlan) -> JSONObject {
        var line = JSONObject()
        line.add("type", "cache")
        line.add("max_cache_size", cache.maxBytes)
        line.add("used", cache.used)
        line.add("used_after", cache.usedAfter)
        let utc = ZoneClock(TimeZone(identifier: "UTC")!)
        line.add("making_room", objects: cache.removals.map { room in
            var object = JSONObject()
            object.add("feed", room.feed)
            switch room.kind {
            case .file(let path): object.add("path", path)
            case .generation(let n): object.add("generation", Int64(n))
            }
            object.add("bytes", room.bytes)
            object.add("placed", TimeFormat.rfc3339(room.placed, clock: utc))
            return object
        })
        return line
    }

    /// The final `total` line: rows by state, bytes, and the throughput assumed.
    private static func totalObject(_ plan: Plan) -> JSONObject {
        var total = JSONObject()
        total.add("type", "total")
        let totals = Totals(plan)
        for status in ResourceStatus.allCases {
            total.add(status.rawValue, Int64(totals.count[status] ?? 0))
        }
        total.add("due_bytes", totals.bytes[.due] ?? 0)
        total.add("due_remaining", totals.remaining[.due] ?? 0)
        total.add("deferred_bytes", totals.bytes[.deferred] ?? 0)
        total.add("waiting_bytes", totals.bytes[.waiting] ?? 0)
        total.add("unknown_sizes", Int64(totals.unknownSizes))
        total.add("not_fitting", Int64(totals.notFitting))
        total.add("throughput_bps", plan.throughput)
        total.add("throughput_measured", plan.throughputMeasured)
        return total
    }

    // MARK: Text

    public func text(_ plan: Plan) -> String {
        var all = ""
        text(plan) { all += $0 }
        return all
    }

    /// Writes the text to `sink` in chunks of about 64 KiB.
    public func text(_ plan: Plan, to sink: @escaping (String) -> Void) {
        var out = ChunkedOutput(sink: sink)
        for feed in plan.feeds {
            out += header(feed, plan: plan)
            table(feed, into: &out)
            out += "\n"
        }
        out += footer(plan)
        out.flush()
    }

    private func header(_ feed: FeedPlan, plan: Plan) -> String {
        var out = paint(feed.name, "1") + "  (\(feed.zoneName))\n"
        var when: [String] = []
        if let schedule = feed.schedule { when.append("schedule \"\(schedule)\"") }
        if !feed.windows.isEmpty { when.append("window " + feed.windows.map(\.description).joined(separator: ", ")) }
        if let days = feed.days { when.append("on " + Weekday.allCases.filter(days.contains).map(\.name).joined(separator: ",")) }
        if when.isEmpty { when.append("released when the previous release finished longer than refresh ago") }
        out += "  " + when.joined(separator: " · ") + "\n"
        if feed.jitter.seconds > 0 {
            if let id = plan.machineID, !id.usable {
                out += "  jitter \(feed.jitter): the image baked no usable machine id (\(id.source) is \(id.value.isEmpty ? "empty" : id.value)), so no jitter (set PREFETCH_MACHINE_ID or machine_id, or let the machine boot once)\n"
            } else if let id = plan.machineID {
                out += "  jitter \(feed.jitter): this machine waits \(TimeSpan(seconds: feed.jitterOffset)) (machine id from \(id.source))\n"
            } else {
                out += "  jitter \(feed.jitter): no machine id found, so no jitter (set PREFETCH_MACHINE_ID or machine_id)\n"
            }
        }
        if let current = feed.currentRelease {
            var line = "  current release: " + TimeFormat.local(current, clock: feed.clock)
            if feed.jitterOffset > 0, feed.schedule != nil || feed.windows.isEmpty {
                line += ", transfers from " + TimeFormat.local(current.advanced(bySeconds: feed.jitterOffset), clock: feed.clock, withUTC: false)
            }
            out += line + "\n"
        }
        if feed.nextReleases.isEmpty {
            out += "  next release: " + (feed.schedule == nil && feed.windows.isEmpty
                                          ? "when this release finishes (+ refresh)\n" : "none\n")
        } else {
            out += "  next releases: " + TimeFormat.local(feed.nextReleases[0], clock: feed.clock) + "\n"
            for release in feed.nextReleases.dropFirst() {
                out += "                 " + TimeFormat.local(release, clock: feed.clock) + "\n"
            }
        }
        let c = plan.conditions
        var now: [String] = [feed.windowOpen ? "window open" : "window closed"]
        func mark(_ name: String) -> String {
            guard let check = feed.holds.first(where: { $0.name == name }) else { return "" }
            return check.ok ? " ✓" : " ✗"
        }
        let network = c.metered ? "metered" : "unmetered"
        if let reason = c.networkUnknown {
            now.append("network unknown (counts as \(network))\(mark("network")) [\(reason); \(c.networkSource)]")
        } else {
            now.append("network \(network)\(mark("network")) [\(c.networkSource)]")
        }
        let power = c.onAC ? "AC" : "battery" + (c.batteryLevel.map { " \($0)%" } ?? "")
        if let reason = c.powerUnknown {
            now.append("power unknown (counts as AC)\(mark("power"))\(mark("battery")) [\(reason)]")
        } else {
            now.append("power \(power)\(mark("power"))\(mark("battery")) [\(c.powerSource)]")
        }
        if let reason = c.freeUnknown {
            now.append("free unknown (counts as enough) [\(reason)]")
        } else {
            now.append("free " + (c.freeBytes.map { ByteSize.format($0) } ?? "unknown") + " [\(c.freeSource)]")
        }
        out += "  now: " + now.joined(separator: " · ") + "\n"
        return out
    }

    private func table(_ feed: FeedPlan, into out: inout ChunkedOutput) {
        guard !feed.items.isEmpty else {
            out += "  (no resources)\n"
            return
        }
        // Two passes over the rows, the widths first, then the text: a row's five cells are
        // made again rather than kept (kept, they would be five strings a row, held at once).
        let header = ["STATE", "PATH", "REASON", "NEXT", "BYTES"]
        // Many rows share a time (a window opening, a release): format each instant once.
        var times: [Instant: String] = [:]
        var offsets = ZoneOffsets(feed.clock)
        func time(_ instant: Instant) -> String {
            if let text = times[instant] { return text }
            let text = TimeFormat.local(instant, offsets: &offsets, withUTC: false)
            times[instant] = text
            return text
        }
        let items = feed.items
        func cells(_ i: Int) -> (next: String, bytes: String) {
            let values = items[values: i]
            let status = values.status
            var next = values.next.map(time) ?? "-"
            if status == .due {
                if let eta = values.estimatedFinish {
                    next = "eta " + time(eta)
                    if values.fits == false { next += " (after the window closes)" }
                } else {
                    next = "eta unknown"  // of unknown size
                }
            }
            let total = values.bytes
            var bytes = total.map { ByteSize.format($0) } ?? "?"
            if let remaining = values.remaining, let total, remaining != total, status != .fresh, status != .expired {
                bytes += " (\(ByteSize.format(remaining)) left)"
            }
            return (next, bytes)
        }
        var widths = header.map(Self.width)
        for i in items.indices {
            let (next, bytes) = cells(i)
            widths[0] = max(widths[0], items[values: i].status.rawValue.utf8.count)
            widths[1] = max(widths[1], Self.width(items.path(at: i)))
            widths[2] = max(widths[2], Self.width(items.reason(at: i)))
            widths[3] = max(widths[3], Self.width(next))
            widths[4] = max(widths[4], Self.width(bytes))
        }
        func line(_ status: String, _ colored: Bool, _ path: String, _ reason: String, _ next: String, _ bytes: String) {
            out += "  "
            if colored, color, let state = ResourceStatus(rawValue: status) {
                out += paint(status, Self.colors[state] ?? "0")
            } else {
                out += status
            }
            out.pad(widths[0] - status.utf8.count + 2)
            out += path
            out.pad(widths[1] - Self.width(path) + 2)
            out += reason
            out.pad(widths[2] - Self.width(reason) + 2)
            out += next
            out.pad(widths[3] - Self.width(next) + 2)
            out += bytes
            out += "\n"
            out.flushIfFull()
        }
        line(header[0], false, header[1], header[2], header[3], header[4])
        for i in items.indices {
            let (next, bytes) = cells(i)
            let reason = items.reason(at: i)
            // A row placed from a local source fetches nothing (SPEC §9): 0 bytes.
            line(items[values: i].status.rawValue, true, items.path(at: i), reason, next,
                 reason.hasPrefix(Planner.localSourcePrefix) ? ByteSize.format(0) : bytes)
        }
    }

    /// Display width: characters, counted fast for ASCII.
    private static func width(_ text: String) -> Int {
        text.utf8.allSatisfy { $0 < 0x80 } ? text.utf8.count : text.count
    }

    private static let colors: [ResourceStatus: String] = [
        .due: "32", .waiting: "33", .deferred: "36", .fresh: "2", .backoff: "33", .failed: "31", .expired: "2",
    ]

    private func footer(_ plan: Plan) -> String {
        let totals = Totals(plan)
        func part(_ status: ResourceStatus) -> String? {
            let count = totals.count[status] ?? 0
            guard count > 0 || status == .due else { return nil }
            var text = "\(status.rawValue) \(count)"
            if [.due, .waiting, .deferred].contains(status) {
                text += " (" + ByteSize.format(totals.bytes[status] ?? 0)
                if status == .due, let remaining = totals.remaining[.due], remaining != totals.bytes[.due] {
                    text += ", \(ByteSize.format(remaining)) to transfer"
                }
                text += ")"
            }
            return text
        }
        var out = "total: " + ResourceStatus.allCases.reversed().compactMap(part).joined(separator: " · ") + "\n"
        if totals.unknownSizes > 0 {
            out += "\(totals.unknownSizes) resource\(totals.unknownSizes == 1 ? "" : "s") of unknown size not counted in bytes\n"
        }
        if totals.notFitting > 0 {
            out += "\(totals.notFitting) due resource\(totals.notFitting == 1 ? "" : "s") may not finish before the window closes"
            out += " (at \(ByteSize.format(UInt64(plan.throughput)))/s, \(plan.throughputMeasured ? "measured by past runs" : "assumed before any run"))\n"
        }
        if let cache = plan.cache {
            out += "cache: \(ByteSize.format(cache.used)) used of max_cache_size \(ByteSize.format(cache.maxBytes))"
            if cache.usedAfter != cache.used { out += ", \(ByteSize.format(cache.usedAfter)) once the due work is placed" }
            out += "\n"
            if !cache.removals.isEmpty {
                out += "to make room: removes " + cache.removals.map { "\($0.label) (\(ByteSize.format($0.bytes)))" }.joined(separator: ", ") + "\n"
            }
        }
        return out
    }

    private func paint(_ text: String, _ code: String) -> String {
        color ? "\u{1b}[\(code)m\(text)\u{1b}[0m" : text
    }

    /// Counts and byte sums per state.
    struct Totals {
        var count: [ResourceStatus: Int] = [:]
        var bytes: [ResourceStatus: UInt64] = [:]
        var remaining: [ResourceStatus: UInt64] = [:]
        var unknownSizes = 0
        var notFitting = 0

        init(_ plan: Plan) {
            // By index, numbers only: a whole item would retain and release each of its strings.
            for feed in plan.feeds {
                let items = feed.items
                for i in items.indices {
                    let values = items[values: i]
                    let status = values.status
                    count[status, default: 0] += 1
                    bytes[status, default: 0] += values.bytes ?? 0
                    remaining[status, default: 0] += values.remaining ?? 0
                    if values.bytes == nil, status == .due || status == .waiting || status == .deferred { unknownSizes += 1 }
                    if values.fits == false { notFitting += 1 }
                }
            }
        }
    }
}

/// Text collected in a buffer and handed to a sink about every 64 KiB, so large plans
/// stream out instead of building one huge string. The buffer is bytes: appending a
/// string's UTF-8 is a copy, where appending to a `String` went through its generic
/// text-stream path (a plan appends a dozen pieces per row).
struct ChunkedOutput {
    let sink: (String) -> Void
    private var buffer: [UInt8] = []
    private static let chunk = 1 << 16

    init(sink: @escaping (String) -> Void) {
        self.sink = sink
        buffer.reserveCapacity(Self.chunk + 4096)
    }

    static func += (output: inout ChunkedOutput, text: String) {
        output.buffer.append(utf8: text)
    }

    static func += (output: inout ChunkedOutput, text: Substring) {
        output += String(text)
    }

    /// `count` spaces.
    mutating func pad(_ count: Int) {
        buffer.append(contentsOf: repeatElement(0x20, count: count))
    }

    mutating func flushIfFull() {
        if buffer.count >= Self.chunk { flush() }
    }

    mutating func flush() {
        guard !buffer.isEmpty else { return }
        sink(String(decoding: buffer, as: UTF8.self))
        buffer.removeAll(keepingCapacity: true)
    }
}
