import Foundation
import Testing
@testable import PrefetchCore

/// `max_cache_size`'s admission and room making (SPEC §8), through the real decoder and
/// planner, over seeded random feeds, against `CacheCapReference`: a deliberately naive
/// reading of SPEC's words, written apart from `CacheBudget`.
/// A failure prints the seed (`PREFETCH_TEST_SEED` replays it) and the case.
@Suite struct CacheBudgetTests {
    static let seed = UInt64(ProcessInfo.processInfo.environment["PREFETCH_TEST_SEED"] ?? "") ?? 20_261_202
    static let cases = 400

    /// One random case: feeds (as manifests), copies already cached, the use, the candidates.
    struct Case {
        var manifests: [(name: String, yaml: String)] = []
        var items: [CacheCapReference.Item] = []
        var state = StateSnapshot()
        var cached = Set<ResourceKey>()
        var cap: UInt64 = 0
        var used: UInt64 = 0
        var rooms: [CacheUsage.Room] = []

        var description: String {
            "cap \(cap), used \(used)\n" + manifests.map { "--- \($0.name)\n\($0.yaml)" }.joined()
                + "--- cached: " + items.filter { $0.cachedLength != nil }.map { "\($0.feed)/\($0.path)=\($0.cachedLength!)" }.joined(separator: " ")
                + "\n--- rooms: " + rooms.map { "\($0.label) \($0.bytes)B @\($0.placed.seconds)" }.joined(separator: ", ")
        }
    }

    static func makeCase(_ random: inout SplitMix64) -> Case {
        var c = Case()
        c.cap = UInt64.random(in: 1...4_000, using: &random)
        // Names drawn so that their bytewise order differs from the order they are listed in.
        var names = Array(["b", "a", "c-1", "c", "a.2", "z9"].shuffled(using: &random).prefix(Int.random(in: 1...4, using: &random)))
        names.shuffle(using: &random)
        let priorities = ["high", "normal", "low"]
        for name in names {
            var yaml = "name: \(name)\nresources:\n"
            for i in 0..<Int.random(in: 1...7, using: &random) {
                let path = "r\(i).bin"
                let url = "https://e.com/\(name)/\(path)"
                yaml += "  - url: \(url)\n"
                // Sizes around the cap: some larger than it alone, some unknown.
                let size: UInt64? = Int.random(in: 0..<5, using: &random) == 0 ? nil : UInt64.random(in: 0...(c.cap * 5 / 4), using: &random)
                if let size { yaml += "    size: \(size)\n" }
                let priority = priorities.randomElement(using: &random)!
                if priority != "normal" || Bool.random(using: &random) { yaml += "    priority: \(priority)\n" }
                // A copy cached already (validated long ago, so due again): the new one replaces it.
                var cachedLength: UInt64?
                if Int.random(in: 0..<4, using: &random) == 0 {
                    let length = size ?? UInt64.random(in: 0...c.cap, using: &random)
                    let key = ResourceKey(feed: name, path: path)
                    var state = ResourceState(urlHash: try! ResourceURL.parse(url).identityHash)
                    state.length = length
                    state.placedAt = Instant(seconds: 1_000)
                    state.validatedAt = Instant(seconds: 1_000)
                    c.state.resources[key] = state
                    c.cached.insert(key)
                    cachedLength = length
                }
                c.items.append(CacheCapReference.Item(feed: name, path: path, index: i, priority: priority, size: size, cachedLength: cachedLength))
            }
            c.manifests.append((name, yaml))
        }
        // In use: sometimes already past the cap (a replacement under way).
        c.used = UInt64.random(in: 0...(c.cap * 11 / 10), using: &random)
        // Removable files are part of what is in use.
        for n in 0..<(c.used < 6 ? 0 : Int.random(in: 0...6, using: &random)) {
            c.rooms.append(CacheUsage.Room(feed: "x", kind: .file(path: "old\(n)"), bytes: UInt64.random(in: 1...(c.used / 6), using: &random),
                                           placed: Instant(seconds: Int64.random(in: 100...110, using: &random))))  // ties happen
        }
        return c
    }

    @Test func admissionAndRoomFollowTheReference() throws {
        var random = SplitMix64(seed: Self.seed)
        let now = Instant(seconds: 2_000_000_000)
        for index in 0..<Self.cases {
            let c = Self.makeCase(&random)
            let feeds = c.manifests.map { manifest -> Feed in
                let (feed, diagnostics) = FeedDecoder(config: Config()).decode(Array(manifest.yaml.utf8), file: manifest.name + ".yaml")
                #expect(diagnostics.filter { $0.severity == .error }.isEmpty, "\(diagnostics.map(\.headline))")
                return feed!
            }
            let plan = Planner.plan(PlanInput(feeds: feeds, state: c.state, cached: CachedFiles(c.cached, in: feeds),
                                              conditions: ConditionSnapshot(freeBytes: 1 << 50, freeSource: "test"), now: now,
                                              maxCacheSize: c.cap, cacheUsage: CacheUsage(used: c.used, candidates: c.rooms)))
            let expected = CacheCapReference.decide(cap: c.cap, used: c.used, items: c.items, rooms: c.rooms)
            var problems: [String] = []
            for item in plan.feeds.flatMap(\.items) {
                let want = expected.verdicts[item.feed + "/" + item.path]
                let got: String? = switch (item.status, item.reason) {
                case (.due, _): "admitted"
                case (.deferred, "cache full (max_cache_size)"): "cache full"
                case (.deferred, "larger than max_cache_size"): "too large"
                default: "\(item.status) \(item.reason)"
                }
                if got != want { problems.append("\(item.feed)/\(item.path): \(got ?? "-"), the reference says \(want ?? "-")") }
                if item.status == .deferred, item.next != nil { problems.append("\(item.feed)/\(item.path): next is not null") }
            }
            let removed = plan.cache?.removals.map(\.label) ?? []
            if removed != expected.removed { problems.append("removed \(removed), the reference removes \(expected.removed)") }
            if plan.cache?.usedAfter != expected.usedAfter {
                problems.append("used after \(plan.cache?.usedAfter ?? 0), the reference \(expected.usedAfter)")
            }
            if plan.cache?.used != c.used { problems.append("used \(plan.cache?.used ?? 0), not \(c.used)") }
            // What SPEC promises whatever the reference says: admitted work never passes the cap
            // (beyond what was in use already).
            if expected.usedAfter > max(c.cap, c.used) { problems.append("the reference passes the cap") }
            if !problems.isEmpty {
                Issue.record(Comment(rawValue: "seed \(Self.seed) (PREFETCH_TEST_SEED), case \(index):\n"
                    + problems.joined(separator: "\n") + "\n" + c.description))
                return
            }
        }
    }

    /// SPEC §9: an unlisted file's placement for the cap is when its record was made, not its
    /// mtime (a hard link keeps its source's): the file recorded later goes later, though its
    /// mtime is the older one.
    @Test func aLinkedFilesPlacementIsItsRecords() throws {
        let (feed, _) = FeedDecoder(config: Config()).decode(Array("name: t\nresources:\n  - url: https://e.com/new.bin\n    size: 100\n".utf8),
                                                             file: "t.yaml")
        var state = StateSnapshot()
        var linked = ResourceState(urlHash: "h")
        linked.placedAt = Instant(seconds: 500)  // recorded at 500; its mtime (the source's) is 100
        linked.length = 100
        state.resources[ResourceKey(feed: "x", path: "linked")] = linked
        let rooms = [CacheUsage.Room(feed: "x", kind: .file(path: "linked"), bytes: 100, placed: Instant(seconds: 100)),
                     CacheUsage.Room(feed: "x", kind: .file(path: "plain"), bytes: 100, placed: Instant(seconds: 200))]
        var usage = CacheUsage(used: 200, candidates: rooms)
        usage.linked = [ResourceKey(feed: "x", path: "linked")]  // another path holds its inode
        let plan = Planner.plan(PlanInput(feeds: [try #require(feed)], state: state, conditions: ConditionSnapshot(freeBytes: 1 << 50, freeSource: "test"),
                                          now: Instant(seconds: 2_000_000_000), maxCacheSize: 250, cacheUsage: usage))
        #expect(plan.cache?.removals.map(\.label) == ["x/plain"], "\(plan.cache?.removals.map(\.label) ?? [])")
    }

    /// SPEC's own cases, by hand: a smaller one fits after a larger one is skipped; room is
    /// made from the oldest; nothing goes when even all the room would not do.
    @Test func theRuleBySpecExamples() {
        let requests = [
            CacheBudget.Request(priority: .normal, feed: "b", index: 0, bytes: 600, need: 600),
            CacheBudget.Request(priority: .normal, feed: "a", index: 1, bytes: 700, need: 700),
            CacheBudget.Request(priority: .high, feed: "z", index: 0, bytes: 300, need: 300),
            CacheBudget.Request(priority: .low, feed: "a", index: 0, bytes: 1_500, need: 1_500),
            CacheBudget.Request(priority: .low, feed: "a", index: 2, bytes: nil, need: nil),
        ]
        // 1000 cap, 500 in use: z (high) 300 → 800; a#1 700 and b 600 do not fit → cache full;
        // a#0 is larger than the cap; the unknown one is admitted (held as its body arrives).
        let plain = CacheBudget.decide(cap: 1_000, used: 500, requests: requests, candidates: [])
        #expect(plain.verdicts == [.cacheFull, .cacheFull, .admitted, .tooLarge, .admitted])
        #expect(plain.used == 800 && plain.removals.isEmpty)
        // With the 500 in use removable: a#1 needs 500 freed, oldest first (250 @5, 150 @7, 100 @9);
        // then nothing is left for b.
        let rooms = [CacheBudget.Candidate(bytes: 100, placed: Instant(seconds: 9)), CacheBudget.Candidate(bytes: 250, placed: Instant(seconds: 5)),
                     CacheBudget.Candidate(bytes: 150, placed: Instant(seconds: 7))]
        let made = CacheBudget.decide(cap: 1_000, used: 500, requests: requests, candidates: rooms)
        #expect(made.verdicts == [.cacheFull, .admitted, .admitted, .tooLarge, .admitted])
        #expect(made.removals == [1, 2, 0], "oldest placement first: \(made.removals)")
        #expect(made.used == 1_000)
        // Room that would not be enough is not made; a smaller one after it uses it.
        let small = CacheBudget.decide(cap: 1_000, used: 900, requests: [
            CacheBudget.Request(priority: .normal, feed: "a", index: 0, bytes: 400, need: 400),
            CacheBudget.Request(priority: .normal, feed: "a", index: 1, bytes: 150, need: 150),
        ], candidates: [CacheBudget.Candidate(bytes: 100, placed: Instant(seconds: 5))])
        #expect(small.verdicts == [.cacheFull, .admitted] && small.removals == [0] && small.used == 950, "\(small)")
    }
}

/// SPEC §8's admission, read word by word, with nothing shared with `CacheBudget`: due
/// resources in the order high, normal, low priority, then feed name, then manifest order;
/// one larger than the cap alone is "too large"; one that would pass the cap is skipped
/// ("cache full") unless removing the oldest candidates makes it fit; one of unknown size
/// takes no room. The use is summed afresh at every step.
enum CacheCapReference {
    struct Item {
        var feed: String
        var path: String
        var index: Int
        var priority: String
        var size: UInt64?
        var cachedLength: UInt64?
    }

    static func decide(cap: UInt64, used: UInt64, items: [Item], rooms: [CacheUsage.Room])
        -> (verdicts: [String: String], removed: [String], usedAfter: UInt64) {
        let rank = ["high": 0, "normal": 1, "low": 2]
        let order = items.sorted { x, y in
            if rank[x.priority]! != rank[y.priority]! { return rank[x.priority]! < rank[y.priority]! }
            if x.feed != y.feed { return x.feed.utf8.lexicographicallyPrecedes(y.feed.utf8) }
            return x.index < y.index
        }
        // Oldest placement first; equal times in the order they were found.
        let oldestFirst = rooms.enumerated().sorted { $0.element.placed != $1.element.placed ? $0.element.placed < $1.element.placed : $0.offset < $1.offset }
            .map(\.element)
        var admitted: [Item] = []
        var removed: [CacheUsage.Room] = []
        var verdicts: [String: String] = [:]
        // The expected size: `size`, else the recorded length; what placing it adds is that less the copy it replaces.
        func grows(_ item: Item) -> UInt64 {
            guard let size = item.size ?? item.cachedLength else { return 0 }
            let old = item.cachedLength ?? 0
            return size > old ? size - old : 0
        }
        func use(removing: [CacheUsage.Room], admitting: [Item]) -> Int64 {
            Int64(used) - removing.reduce(0) { $0 + Int64($1.bytes) } + admitting.reduce(0) { $0 + Int64(grows($1)) }
        }
        for item in order {
            let name = item.feed + "/" + item.path
            if let size = item.size ?? item.cachedLength, size > cap {
                verdicts[name] = "too large"
                continue
            }
            let left = oldestFirst.filter { room in !removed.contains(room) }
            var fitted = false
            for k in 0...left.count {
                let trial = removed + left.prefix(k)
                if use(removing: trial, admitting: admitted + [item]) <= Int64(cap) {
                    removed = trial
                    fitted = true
                    break
                }
            }
            if fitted {
                admitted.append(item)
                verdicts[name] = "admitted"
            } else {
                verdicts[name] = "cache full"
            }
        }
        return (verdicts, removed.map(\.label), UInt64(max(0, use(removing: removed, admitting: admitted))))
    }
}
