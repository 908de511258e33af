import Foundation

/// A feed's reader index (SPEC §6), `CACHE/<feed>/.prefetch-index.json`: what a kiosk
/// application reads to know what is offline and whether the release in force arrived.
/// Built from the plan made after a pass, state.db and what is cached; pure.
///
/// Written as bytes, not through `JSONObject`'s strings: it is rewritten after every pass
/// that changed the feed (a revalidation of every file included), and a String grown piece
/// by piece costs far more per piece than bytes appended to a buffer.
enum ReaderIndex {
    /// One JSON object and a newline. `updated` is when it was written. Times are RFC 3339
    /// in the feed's zone, as in `plan --json`.
    ///
    static func render(_ feed: Feed, plan: FeedPlan, state: StateSnapshot, cached: CachedFiles,
                       size: (Resource) -> UInt64?, updated: Instant) -> [UInt8] {
        var text: [UInt8] = []
        render(feed, plan: plan, state: state, cached: cached, size: size, updated: updated) { text.append(contentsOf: $0) }
        return text
    }

    /// The same, handed to `write` in pieces of about 64 KiB as it is made, in three passes
    /// over the resources (`complete` first, as the head says it before the lists; then
    /// `files`; then `missing`). A large feed's index runs to tens of MB: made whole in one
    /// buffer it would be the largest thing at a revalidation `run`'s peak, and lists built
    /// apart and then joined would hold it twice.
    static func render(_ feed: Feed, plan: FeedPlan, state: StateSnapshot, cached: CachedFiles,
                       size: (Resource) -> UInt64?, updated: Instant, into write: ([UInt8]) -> Void) {
        let clock = plan.clock
        // Files placed together share their second: each second is formatted once.
        var formatted: [Int64: [UInt8]] = [:]
        func time(_ instant: Instant?) -> [UInt8]? {
            guard let seconds = instant?.seconds else { return nil }
            if let known = formatted[seconds] { return known }
            let text = Array(TimeFormat.rfc3339(seconds: seconds, clock: clock).utf8)
            formatted[seconds] = text
            return text
        }
        let rows = Rows(feed, plan)
        let release = releaseInForce(feed, plan: plan, state: state)
        let listed = feed.resources.indices.filter { cached.contains(feed: feed.name, position: $0) }
        var index = Writer(capacity: Writer.piece + 4096)
        index.bytes.append(UInt8(ascii: "{"))
        index.field("feed", string: feed.name, first: true)
        index.field("release", raw: time(release))
        index.field("complete", bool: isComplete(feed, rows: rows, release: release, state: state, cached: cached, plan: plan))
        index.field("updated", raw: time(updated))
        index.openList("files")
        for position in listed {
            let resource = feed.resources[position]
            let record = state.resources[ResourceKey(feed: feed.name, path: resource.path)]
            let validated = record?.validatedAt
            index.open()
            index.field("path", string: resource.path, first: true)
            index.field("size", number: record?.length ?? size(resource))
            index.field("sha256", string: record?.sha256)
            let url = resource.url.redacted
            index.field("url", string: url)
            // SPEC §8: the entry's url unless a mirror served it; §9: none for a copy of another URL's file (marked "")
            let served = record?.servedBy?.shown
            index.field("served_by", string: served == "" ? nil : served ?? url)
            index.field("fetched", raw: time(record?.placedAt))
            index.field("validated", raw: time(validated))
            index.field("current", bool: isCurrent(validated: validated, release: release))
            index.close()
            index.drain(over: Writer.piece, into: write)
        }
        index.closeList()
        index.openList("missing")
        var next = listed.makeIterator(), skip = next.next()
        for (position, resource) in feed.resources.enumerated() {
            if position == skip {
                skip = next.next()
                continue
            }
            let item = rows.item(position, plan)
            index.open()
            index.field("path", string: resource.path, first: true)
            index.field("state", string: item?.status.rawValue)
            index.field("reason", string: item?.reason)
            index.close()
            index.drain(over: Writer.piece, into: write)
        }
        index.closeList()
        index.bytes.append(contentsOf: Array("}\n".utf8))
        index.drain(over: 0, into: write)
    }

    /// Each resource's row in its feed's plan, by the resource's place in the manifest.
    private struct Rows {
        private var rows: [Int32]

        init(_ feed: Feed, _ plan: FeedPlan) {
            rows = [Int32](repeating: -1, count: feed.resources.count)
            // A row whose place or path does not match is of another manifest's plan: not used.
            for index in plan.items.indices {
                let row = Int(plan.items[values: index].row)
                guard row < rows.count, rows[row] < 0, feed.resources[row].path == plan.items.path(at: index) else { continue }
                rows[row] = Int32(index)
            }
        }

        func item(_ position: Int, _ plan: FeedPlan) -> PlanItem? {
            rows[position] < 0 ? nil : plan.items[Int(rows[position])]
        }
    }

    /// The release in force: a plan made before the pass recorded its release (the first
    /// one) knows none yet.
    static func releaseInForce(_ feed: Feed, plan: FeedPlan, state: StateSnapshot) -> Instant? {
        plan.currentRelease ?? state.feeds[feed.name]?.lastRelease
    }

    /// Whether a row counts toward `complete`: what the release made due, all but what is
    /// embargoed or expired.
    static func countsTowardCompletion(_ item: PlanItem?) -> Bool {
        !(item?.status == .expired || (item?.status == .deferred && item?.reason == "embargo"))
    }

    /// Whether a copy validated at `validated` is current: validated since the release began.
    static func isCurrent(validated: Instant?, release: Instant?) -> Bool {
        validated.map { at in release.map { at >= $0 } ?? true } ?? false
    }

    /// The index's `complete` without the rest of it (the metrics' `prefetch_release_complete`).
    static func isComplete(_ feed: Feed, plan: FeedPlan, state: StateSnapshot, cached: CachedFiles) -> Bool {
        isComplete(feed, rows: Rows(feed, plan), release: releaseInForce(feed, plan: plan, state: state), state: state, cached: cached,
                   plan: plan)
    }

    private static func isComplete(_ feed: Feed, rows: Rows, release: Instant?, state: StateSnapshot, cached: CachedFiles,
                                   plan: FeedPlan) -> Bool {
        feed.resources.indices.allSatisfy { position in
            guard countsTowardCompletion(rows.item(position, plan)) else { return true }
            let key = ResourceKey(feed: feed.name, path: feed.resources[position].path)
            return cached.contains(feed: feed.name, position: position) && isCurrent(validated: state.resources[key]?.validatedAt, release: release)
        }
    }

    /// `index` with `withdrawn` moved from `files` to `missing` (with their state and reason)
    /// and `complete` false: the live generation's index after files went from it while a
    /// release is staged beside it (its own plan describes the staged one). Nil when `index`
    /// is not an index.
    static func withdrawing(_ withdrawn: [(path: String, state: String, reason: String)], from index: [UInt8],
                            updated: Instant, clock: ZoneClock) -> [UInt8]? {
        guard var object = (try? JSONSerialization.jsonObject(with: Data(index))) as? [String: Any],
              let files = object["files"] as? [[String: Any]], let missing = object["missing"] as? [[String: Any]] else { return nil }
        let paths = Set(withdrawn.map(\.path))
        object["files"] = files.filter { !paths.contains($0["path"] as? String ?? "") }
        object["missing"] = missing + withdrawn.map { ["path": $0.path, "state": $0.state, "reason": $0.reason] }
        object["complete"] = false
        object["updated"] = TimeFormat.rfc3339(updated, clock: clock)
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return nil }
        return [UInt8](data) + [UInt8(ascii: "\n")]
    }

    /// The paths an index's `files` lists; nil when `index` is not an index.
    static func filePaths(_ index: [UInt8]) -> Set<String>? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(index))) as? [String: Any],
              let files = object["files"] as? [[String: Any]] else { return nil }
        return Set(files.compactMap { $0["path"] as? String })
    }

    /// JSON as bytes: objects of fields, in lists.
    private struct Writer {
        var bytes: [UInt8] = []
        private var firstInList = true
        private var firstField = true

        /// How much is held before it is handed on.
        static let piece = 1 << 16

        init(capacity: Int) { bytes.reserveCapacity(capacity) }

        /// Hands what is held to `write` when it is more than `limit` bytes, and keeps the
        /// buffer's storage for what follows.
        mutating func drain(over limit: Int, into hand: ([UInt8]) -> Void) {
            guard bytes.count > limit else { return }
            hand(bytes)
            bytes.removeAll(keepingCapacity: true)
        }

        mutating func open() {
            if !firstInList { bytes.append(UInt8(ascii: ",")) }
            firstInList = false
            bytes.append(UInt8(ascii: "{"))
            firstField = true
        }

        mutating func close() { bytes.append(UInt8(ascii: "}")) }

        private mutating func key(_ name: String, first: Bool) {
            if !(first || firstField) { bytes.append(UInt8(ascii: ",")) }
            firstField = false
            bytes.append(UInt8(ascii: "\""))
            bytes.append(utf8: name)
            bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        }

        mutating func field(_ name: String, string value: String?, first: Bool = false) {
            key(name, first: first)
            guard let value else { return bytes.append(contentsOf: Self.null) }
            if value.allUTF8Bytes({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
                bytes.append(UInt8(ascii: "\""))
                bytes.append(utf8: value)
                bytes.append(UInt8(ascii: "\""))
            } else {
                bytes.append(contentsOf: Array(JSONObject.quote(value).utf8))
            }
        }

        /// A value already quoted JSON text would need: here an RFC 3339 time, quoted.
        mutating func field(_ name: String, raw value: [UInt8]?) {
            key(name, first: false)
            guard let value else { return bytes.append(contentsOf: Self.null) }
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: value)
            bytes.append(UInt8(ascii: "\""))
        }

        mutating func field(_ name: String, number value: UInt64?) {
            key(name, first: false)
            guard let value else { return bytes.append(contentsOf: Self.null) }
            bytes.append(contentsOf: DecimalDigits(value))
        }

        mutating func field(_ name: String, bool value: Bool) {
            key(name, first: false)
            bytes.append(contentsOf: value ? Self.yes : Self.no)
        }

        /// `"name":[`; the objects that follow are its items.
        mutating func openList(_ name: String) {
            key(name, first: false)
            bytes.append(UInt8(ascii: "["))
            firstInList = true
        }

        mutating func closeList() { bytes.append(UInt8(ascii: "]")) }

        private static let null = Array("null".utf8), yes = Array("true".utf8), no = Array("false".utf8)
    }
}
