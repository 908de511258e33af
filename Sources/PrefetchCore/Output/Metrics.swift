import Foundation

/// The metrics file of SPEC §6, in Prometheus' text exposition format (version 0.0.4)
/// without sample timestamps, for node_exporter's textfile collector. Pure: what to say
/// comes in as `Metrics.Snapshot`; every family has `# HELP` and `# TYPE`, in a fixed order.
enum Metrics {
    /// One feed's figures.
    struct Feed: Sendable, Equatable {
        var name: String
        var files: Int
        var bytes: UInt64
        /// `transfers_total` by result (`placed`, `fresh`, `failed`, `paused`), never going back.
        var transfers: [String: UInt64]
        var bodyBytes: UInt64
        /// `prefetch_reused_bytes_total` by `how` (`cache`, `delta`): bytes placed without fetching them (SPEC §9).
        var reusedBytes: [String: UInt64] = [:]
        var lastSuccess: Instant?
        /// `FeedPlan.nextScheduledWork(at:)`: `prefetch_next_wakeup_timestamp_seconds`.
        var nextScheduledWork: Instant?
        var missedWindows: Int
        var starved: Bool
        var releaseComplete: Bool
    }

    struct Snapshot: Sendable {
        var feeds: [Feed]
        /// Every origin ever held, and whether it is now.
        var origins: [(origin: String, held: Bool)]
        var lastRun: Instant
        var lastRunSeconds: Double
        /// Every feed source (SPEC §8) by label: 1 only when `ok`, and the last check that
        /// applied a copy or got a 304 (nil: none yet, said as 0).
        var sources: [(label: String, ok: Bool, lastSuccess: Instant?)] = []
        /// With `max_cache_size` (SPEC §8): the bytes of cached files and the cap.
        var cache: (used: UInt64, max: UInt64)? = nil
    }

    static let results = ["placed", "fresh", "failed", "paused"]
    /// How bytes were placed without being fetched (SPEC §9): from a local source, or a delta's seeds.
    static let reuses = ["cache", "delta"]

    static func render(_ snapshot: Snapshot) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for sample in samples { out += name + (sample.labels.isEmpty ? "" : "{\(sample.labels)}") + " " + sample.value + "\n" }
        }
        func feed(_ f: Feed) -> String { "feed=\(quote(f.name))" }
        let feeds = snapshot.feeds
        family("prefetch_files", "gauge", "Listed files in the cache.", feeds.map { (feed($0), String($0.files)) })
        family("prefetch_bytes", "gauge", "Bytes of the listed files in the cache.", feeds.map { (feed($0), String($0.bytes)) })
        family("prefetch_transfers_total", "counter", "Transfers by how they ended: placed, fresh (a 304), failed, paused.",
               feeds.flatMap { f in results.map { (feed(f) + ",result=\(quote($0))", String(f.transfers[$0] ?? 0)) } })
        family("prefetch_body_bytes_total", "counter", "Body bytes received.", feeds.map { (feed($0), String($0.bodyBytes)) })
        family("prefetch_reused_bytes_total", "counter", "Bytes placed without fetching them: from a file in the cache, or a delta's seeds.",
               feeds.flatMap { f in reuses.map { (feed(f) + ",how=\(quote($0))", String(f.reusedBytes[$0] ?? 0)) } })
        family("prefetch_last_success_timestamp_seconds", "gauge", "When the feed last finished a release (Unix time).",
               feeds.compactMap { f in f.lastSuccess.map { (feed(f), seconds($0)) } })
        family("prefetch_next_wakeup_timestamp_seconds", "gauge", "When the feed next has something to do (Unix time).",
               feeds.compactMap { f in f.nextScheduledWork.map { (feed(f), seconds($0)) } })
        family("prefetch_missed_windows", "gauge", "Windows missed in a row since the feed last finished a release.",
               feeds.map { (feed($0), String($0.missedWindows)) })
        family("prefetch_starved", "gauge", "1 when the missed windows reached starved_after.", feeds.map { (feed($0), $0.starved ? "1" : "0") })
        family("prefetch_release_complete", "gauge", "1 when every resource the release in force made due is in place and validated.",
               feeds.map { (feed($0), $0.releaseComplete ? "1" : "0") })
        family("prefetch_origin_held", "gauge", "1 while the origin is held after connection failures or 429/502/503/504.",
               snapshot.origins.map { ("origin=\(quote($0.origin))", $0.held ? "1" : "0") })
        family("prefetch_last_run_timestamp_seconds", "gauge", "When the last pass of run or daemon ended (Unix time).",
               [("", seconds(snapshot.lastRun))])
        family("prefetch_last_run_duration_seconds", "gauge", "How long the last pass took.",
               [("", format(snapshot.lastRunSeconds))])
        if let cache = snapshot.cache {
            family("prefetch_cache_bytes", "gauge", "Bytes of the cached files, as max_cache_size counts them (partials included, a hard-linked file once).",
                   [("", String(cache.used))])
            family("prefetch_cache_max_bytes", "gauge", "The cache's size cap, max_cache_size.", [("", String(cache.max))])
        }
        if !snapshot.sources.isEmpty {
            family("prefetch_source_ok", "gauge", "1 when the feed source's copy in force is current (ok), 0 when stale or never applied.",
                   snapshot.sources.map { ("source=\(quote($0.label))", $0.ok ? "1" : "0") })
            family("prefetch_source_last_success_timestamp_seconds", "gauge",
                   "When a check of the feed source last applied a copy or got a 304 (Unix time; 0 before any).",
                   snapshot.sources.map { ("source=\(quote($0.label))", $0.lastSuccess.map(seconds) ?? "0") })
        }
        return out
    }

    /// A label value, quoted and escaped as the format wants (backslash, quote, newline).
    static func quote(_ text: String) -> String {
        var out = "\""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out + "\""
    }

    /// Unix time in seconds, to the millisecond.
    static func seconds(_ instant: Instant) -> String {
        format(Double(instant.nanoseconds) / 1e9)
    }

    /// A number as the format reads it, to the millisecond, without trailing zeros.
    static func format(_ value: Double) -> String {
        var text = String(format: "%.3f", value)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }
}
