import Foundation
@testable import PrefetchCore

/// A feed made up for the planner simulation from a seed: its manifest (decoded by the real
/// decoder) and, beside it, what the independent reference needs to judge it — written
/// from the same choices, never read back from the decoded feed.
struct SimulatedFeed {
    struct Item {
        var path: String
        var url: String
        var sha256: String?
        var size: UInt64?
        var notBefore: Int64?
        var expires: Int64?
    }

    enum Mode: String { case schedule, windows, neither }

    var name: String
    var zone: String
    var cron: String?
    var windows: [ReferenceWindow]
    var days: Set<Int>?
    /// The effective refresh, in seconds (the default is 0s, or 1h for a feed with neither).
    var refresh: Int64
    var jitter: Int64
    var machineID: String
    var attempts: Int
    var backoff: Int64
    var maxBackoff: Int64
    var needsUnmetered: Bool
    var needsAC: Bool
    var items: [Item]

    var mode: Mode { cron != nil ? .schedule : (windows.isEmpty && days == nil ? .neither : .windows) }

    static let zones = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham", "Asia/Kolkata"]
    static let dayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    /// The jitter offset SPEC §1 gives this machine: SHA-256 of `ID + "\n" + FEED`, the first 8
    /// bytes as a big-endian integer, modulo the jitter in seconds (written here from SPEC).
    var jitterOffset: Int64 {
        guard jitter > 0 else { return 0 }
        let digest = SHA256.digest(Array((machineID + "\n" + name).utf8))
        let value = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int64(value % UInt64(jitter))
    }

    var calendar: ReferenceCalendar {
        ReferenceCalendar(zone: TimeZone(identifier: zone)!, cron: cron.flatMap(ReferenceCron.init), windows: windows,
                          days: days, jitter: jitterOffset)
    }

    static func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
    static func hhmm(_ minute: Int) -> String { two(minute / 60) + ":" + two(minute % 60) }

    static func rfc3339(_ seconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: TimeInterval(seconds))
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }

    /// The manifest.
    var yaml: String {
        var out = "name: \(name)\ntimezone: \(zone)\n"
        if let cron { out += "schedule: \"\(cron)\"\n" }
        if !windows.isEmpty {
            let list = windows.map { "\"\(Self.hhmm($0.start))-\(Self.hhmm($0.end))\"" }
            out += "window: " + (list.count == 1 ? list[0] : "[" + list.joined(separator: ", ") + "]") + "\n"
        }
        if let days { out += "days: [" + days.sorted().map { Self.dayNames[$0] }.joined(separator: ", ") + "]\n" }
        if jitter > 0 { out += "jitter: \(jitter)s\n" }
        out += "refresh: \(refresh)s\n"
        out += "retry: { attempts: \(attempts), backoff: \(backoff)s, max_backoff: \(maxBackoff)s }\n"
        var conditions: [String] = []
        if needsUnmetered { conditions.append("network: unmetered") }
        if needsAC { conditions.append("power: ac") }
        if !conditions.isEmpty { out += "conditions: { " + conditions.joined(separator: ", ") + " }\n" }
        out += "resources:\n"
        for item in items {
            out += "  - url: \(item.url)\n    path: \(item.path)\n"
            if let sha256 = item.sha256 { out += "    sha256: \(sha256)\n" }
            if let size = item.size { out += "    size: \(size)\n" }
            if let notBefore = item.notBefore { out += "    not_before: \(Self.rfc3339(notBefore))\n" }
            if let expires = item.expires { out += "    expires: \(Self.rfc3339(expires))\n" }
        }
        return out
    }

    /// The feed as prefetch reads it.
    func decoded() -> Feed? {
        let (feed, diagnostics) = FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: name + ".yaml")
        return diagnostics.contains { $0.severity == .error } ? nil : feed
    }

    static func hex(_ random: inout SplitMix64) -> String {
        (0..<4).map { _ in String(random.next(), radix: 16).leftPadded(16) }.joined()
    }

    /// A random feed: any zone of `zones`, a fixed or periodic schedule or none, windows
    /// (wrapping midnight, whole days, lists) or days or none, refresh from 0s to days,
    /// jitter, retry policies, conditions, and resources with embargoes and expiries.
    static func random(_ index: Int, start: Int64, days span: Int64, using random: inout SplitMix64) -> SimulatedFeed {
        func pick<T>(_ options: [T]) -> T { options[Int(random.next() % UInt64(options.count))] }
        func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
        let name = "f\(index)"
        var cron: String?
        var windows: [ReferenceWindow] = []
        var days: Set<Int>?
        let shape = random.next() % 5
        if shape == 0 || shape == 1 {  // a schedule, fixed-time or periodic, that fires at least weekly
            let minute = pick([0, 15, 30, 45, 5, 37]), hour = pick([0, 1, 2, 3, 4, 12, 22, 23])
            cron = pick(["\(minute) \(hour) * * *", "\(minute) \(hour) * * 1-5", "\(minute) \(hour) * * sun,wed",
                         "\(minute) \(hour) */2 * *", "\(minute) \(hour) * * 1/2", "*/30 * * * *", "\(minute) */6 * * *",
                         "@hourly", "@daily", "\(minute) \(hour),\((hour + 12) % 24) * * *"])
        }
        if shape == 1 || shape == 2 || shape == 3 {  // windows, or days alone
            if shape == 3 && chance(40) {
                days = Set((0..<7).filter { _ in chance(50) })
                if days!.isEmpty { days = [Int(random.next() % 7)] }
            } else {
                for _ in 0..<(chance(25) ? 2 : 1) {
                    let startMinute = Int(random.next() % 96) * 15 + (chance(20) ? Int(random.next() % 15) : 0)
                    let length = pick([15, 60, 120, 240, 480, 1440, 90, 30])
                    windows.append(ReferenceWindow(start: startMinute, end: (startMinute + length) % 1440))
                }
                if chance(30) {
                    days = Set((0..<7).filter { _ in chance(60) })
                    if days!.isEmpty { days = [Int(random.next() % 7)] }
                }
            }
        }
        let neither = cron == nil && windows.isEmpty && days == nil
        let refresh: Int64 = pick([0, 0, 1800, 3600, 6 * 3600, 86_400, 3 * 86_400, 60])
        let jitter: Int64 = pick([0, 0, 600, 3600, 3 * 3600, 37])
        let backoff: Int64 = pick([30, 60, 300])
        let maxBackoff: Int64 = max(backoff, pick([300, 3600, 600]))
        var items: [Item] = []
        for r in 0..<(1 + Int(random.next() % 3)) {
            var item = Item(path: "r\(r).bin", url: "https://origin.example/\(name)/r\(r).bin")
            if chance(40) { item.sha256 = hex(&random) }
            if chance(40) { item.size = 1000 + random.next() % 100_000 }
            if chance(20) { item.notBefore = start + Int64(random.next() % UInt64(span * 86_400)) }
            if chance(15) {
                let base = item.notBefore ?? start
                item.expires = base + Int64(random.next() % UInt64(span * 86_400)) - (chance(20) ? 86_400 * 3 : 0)
            }
            items.append(item)
        }
        return SimulatedFeed(name: name, zone: pick(zones), cron: cron, windows: windows, days: days,
                             refresh: neither && chance(30) ? 3600 : refresh, jitter: jitter,
                             machineID: "machine-\(random.next() % 10_000)", attempts: 1 + Int(random.next() % 5),
                             backoff: backoff, maxBackoff: maxBackoff, needsUnmetered: chance(30), needsAC: chance(30), items: items)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
