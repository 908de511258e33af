/// A feed's reader index (SPEC §6), `CACHE/<feed>/.prefetch-index.json`: what a kiosk
/// application reads to know what is offline and whether the release in force arrived.
/// Built from the plan made after a pass, state.db and what is cached; pure.
enum ReaderIndex {
    /// One JSON object (and a newline). `updated` is when it was written. Times are RFC 3339
    /// in the feed's zone, as in `plan --json`.
    static func render(_ feed: Feed, plan: FeedPlan, state: StateSnapshot, cached: Set<ResourceKey>,
                       size: (Resource) -> UInt64?, updated: Instant) -> String {
        let clock = plan.clock
        func time(_ instant: Instant?) -> String? { instant.map { TimeFormat.rfc3339($0, clock: clock) } }
        let items = Dictionary(plan.items.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        var files: [JSONObject] = []
        var missing: [JSONObject] = []
        var complete = true
        for resource in feed.resources {
            let key = ResourceKey(feed: feed.name, path: resource.path)
            let record = state.resources[key]
            let item = items[resource.path]
            // What the release made due: all but what is embargoed or expired.
            let counts = !(item?.status == .expired || (item?.status == .deferred && item?.reason == "embargo"))
            guard cached.contains(key) else {
                var entry = JSONObject()
                entry.add("path", resource.path)
                entry.add("state", item?.status.rawValue)
                entry.add("reason", item?.reason)
                missing.append(entry)
                if counts { complete = false }
                continue
            }
            let validated = record?.validatedAt
            let current = validated.map { at in plan.currentRelease.map { at >= $0 } ?? true } ?? false
            if counts && !current { complete = false }
            var entry = JSONObject()
            entry.add("path", resource.path)
            entry.add("size", record?.length ?? size(resource))
            entry.add("sha256", record?.sha256)
            entry.add("url", resource.url.redacted)
            entry.add("fetched", time(record?.placedAt))
            entry.add("validated", time(validated))
            entry.add("current", current)
            files.append(entry)
        }
        var index = JSONObject()
        index.add("feed", feed.name)
        index.add("release", time(plan.currentRelease))
        index.add("complete", complete)
        index.add("updated", time(updated))
        index.add("files", objects: files)
        index.add("missing", objects: missing)
        return index.line + "\n"
    }
}
