/// Applies `CacheBudget`'s decision to a plan (SPEC §8): due rows the cap does not admit
/// become `deferred` (`cache full (max_cache_size)` or `larger than max_cache_size`, `next`
/// null), and the plan records the cap, the use and the room to be made. Pure.
enum CacheAdmission {
    /// `plan`'s rows must still be in manifest order (before `Planner.orderDueWork`).
    static func apply(_ plan: inout Plan, input: PlanInput) {
        guard let cap = input.maxCacheSize else { return }
        let usage = input.cacheUsage ?? CacheUsage(used: 0)
        var requests: [CacheBudget.Request] = []
        var rows: [(feed: Int, item: Int)] = []
        var contents = Set<Digest256>()  // SPEC §9: resources sharing a SHA-256 take its room once
        var sources = Set<String>()  // SPEC §9: a local source is not removed to make room
        for (f, feedPlan) in plan.feeds.enumerated() {
            for i in feedPlan.items.indices where feedPlan.items[values: i].status == .due {
                let item = feedPlan.items[values: i]
                let key = ResourceKey(feed: feedPlan.name, path: feedPlan.items.path(at: i))
                // The copy it replaces goes at the rename: the cache grows by the difference
                // (none when another path links it).
                let cached = input.cached.contains(feed: feedPlan.name, position: Int(item.row)) && !usage.linked.contains(key)
                let old = cached ? input.state.resources[key]?.length ?? 0 : 0
                if item.remaining == 0, case let reason = feedPlan.items.reason(at: i), reason.hasPrefix(Planner.localSourcePrefix) {
                    sources.insert(String(reason.dropFirst(Planner.localSourcePrefix.count).dropLast()))
                }
                let sha256 = f < input.feeds.count ? input.feeds[f].resources[Int(item.row)].digest : nil
                let shared = sha256.map { !contents.insert($0).inserted } ?? false
                requests.append(CacheBudget.Request(priority: item.priority, feed: feedPlan.name, index: i, bytes: item.bytes,
                                                    need: shared ? 0 : item.remaining.map { $0 - min($0, old) }))
                rows.append((f, i))
            }
        }
        let sourceFeeds = Set(sources.compactMap { $0.split(separator: "/", maxSplits: 1).first.map(String.init) })
        let candidates = usage.candidates.filter { room in
            switch room.kind {
            case .file: !sources.contains(room.label)
            case .generation: !sourceFeeds.contains(room.feed)  // it may hold an older generation's source
            }
        }.map { room in
            // A linked file's placement is when its record was made: it keeps its source's mtime (SPEC §9).
            // Any other's is its mtime, stamped at placement.
            guard case .file(let path) = room.kind, case let key = ResourceKey(feed: room.feed, path: path), usage.linked.contains(key),
                  let placed = input.state.resources[key]?.placedAt else {
                return room
            }
            var recorded = room
            recorded.placed = placed
            return recorded
        }
        let decision = CacheBudget.decide(cap: cap, used: usage.used, requests: requests, candidates: candidates.map { CacheBudget.Candidate(bytes: $0.bytes, placed: $0.placed) })
        for (verdict, row) in zip(decision.verdicts, rows) where verdict != .admitted {
            var item = plan.feeds[row.feed].items[row.item]
            item.status = .deferred
            item.reason = verdict == .tooLarge ? CacheBudget.tooLargeReason : CacheBudget.cacheFullReason
            item.next = nil
            item.windowEnd = nil
            item.nextOpening = nil
            plan.feeds[row.feed].items[row.item] = item
        }
        let waiting = decision.verdicts.contains(.cacheFull)
        plan.cache = CachePlan(maxBytes: cap, used: usage.used, usedAfter: decision.used,
                               removals: decision.removals.map { candidates[$0] },
                               moreRoomAt: waiting ? usage.moreRoomIn.map { input.now.advanced(bySeconds: $0) } : nil)
    }
}

extension PlanInput {
    /// With `max_cache_size` set, what the cache holds now (`CacheUsage`, read from disk),
    /// for the admission above; without, nothing is read.
    mutating func measureCache(_ maxCacheSize: ByteSize?, in cache: CacheFolder?) {
        guard let maxCacheSize else { return }
        self.maxCacheSize = maxCacheSize.bytes
        cacheUsage = CacheUsage.measure(cache, feeds: feeds, recorded: state.feeds.keys)
    }
}
