import Foundation
import Testing
import TestSupport
import PrefetchCore

/// SPEC §9, generatively: seeded random feeds sharing content, changed over seeded passes
/// (URLs versioned, content changed, entries dropped and added, `prune` off so dropped files
/// stay), through the real binary against the test origin, each pass checked against a plain
/// reference of what the cache holds: a request is made for exactly the first resource (in
/// feed, then manifest order) of each content that no file in the cache holds and that some
/// resource needs; every other resource needing content takes it from the cache, and every
/// listed file holds its entry's bytes. The origin sends no validators, so current copies
/// are pinned and never asked. The seed is printed; `PREFETCH_SIMULATION_SEED=N` replays one.
@Suite(.serialized) struct LocalSourceSimulationTests {
    struct Entry: Equatable {
        var path: String
        var version: Int
        var content: Int
        var url: String { "/v\(version)/c\(content).bin" }
    }

    static let contents = (0..<5).map { FaultTests.bytes(4096, seed: 100 + UInt64($0)) }
    static let feedNames = ["a", "b", "c"]

    static var seeds: [UInt64] {
        if let text = ProcessInfo.processInfo.environment["PREFETCH_SIMULATION_SEED"], let seed = UInt64(text) { return [seed] }
        return Array(1...10)
    }

    @Test(arguments: seeds) func everyPassAsksForExactlyWhatTheCacheLacks(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        func roll(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
        let s = try FaultHarness()
        var feeds: [[Entry]] = Self.feedNames.indices.map { f in
            (0..<(2 + roll(3))).map { Entry(path: "p\(f)\($0).bin", version: roll(3), content: roll(Self.contents.count)) }
        }
        var nextPath = 10
        var disk: [String: Int] = [:]  // FEED/PATH → content: every file placed stays (no prune) until its path gets another
        var urls: [String: String] = [:]  // FEED/PATH → the URL its copy was recorded for
        for pass in 0..<8 {
            let label = "seed \(seed) pass \(pass) (replay: PREFETCH_SIMULATION_SEED=\(seed))"
            if pass > 0 {  // the seeded changes
                for f in feeds.indices {
                    var kept: [Entry] = []
                    for (i, old) in feeds[f].enumerated() {
                        var entry = old
                        switch roll(8) {
                        case 0, 1: entry.version = (entry.version + 1 + roll(2)) % 3  // a CMS's new URL, same content
                        case 2, 3: entry.content = roll(Self.contents.count)
                        case 4 where kept.count + (feeds[f].count - i - 1) > 0: continue  // dropped (its file stays)
                        default: break
                        }
                        kept.append(entry)
                    }
                    feeds[f] = kept
                    if roll(5) < 2 {
                        feeds[f].append(Entry(path: "p\(f)\(nextPath).bin", version: roll(3), content: roll(Self.contents.count)))
                        nextPath += 1
                    }
                }
            }
            // The reference: which content each entry needs, which of those no file holds, and
            // the first entry (feed, then manifest order) to need each: the one request each.
            let held = Set(disk.values)
            var expected: [String: Int] = [:]  // URL → requests this pass
            var leaders: Set<Int> = []
            var needing = 0, moved = 0
            for (f, entries) in feeds.enumerated() {
                for entry in entries {
                    let name = "\(Self.feedNames[f])/\(entry.path)"
                    guard disk[name] != entry.content else {
                        // Its content at its path already: a new URL changes only its record (placed from itself).
                        if let url = urls[name], url != entry.url { moved += 1 }
                        continue
                    }
                    needing += 1
                    if !held.contains(entry.content), leaders.insert(entry.content).inserted { expected[entry.url, default: 0] += 1 }
                }
            }
            // The manifests and the origin.
            for (f, entries) in feeds.enumerated() {
                for entry in entries { s.origin.serve(entry.url, OriginResource(Self.contents[entry.content])) }
                try s.feed("resources:\n" + entries.map {
                    "  - url: ORIGIN\($0.url)\n    path: \($0.path)\n    size: 4096\n    sha256: \(FaultTests.sha(Self.contents[$0.content]))\n"
                }.joined(), name: Self.feedNames[f])
            }
            let before = Dictionary(grouping: s.origin.requests, by: \.path).mapValues(\.count)
            let run = try s.runJSON()
            #expect(run.status == 0, "\(label): \(run.diagnostics)")
            let after = Dictionary(grouping: s.origin.requests, by: \.path).mapValues(\.count)
            var asked: [String: Int] = [:]
            for (path, count) in after where count != before[path] ?? 0 { asked[path] = count - (before[path] ?? 0) }
            #expect(asked == expected, "\(label): requests \(asked), expected \(expected); feeds \(feeds); disk \(disk)")
            let fromCache = run.events.filter { $0["type"] as? String == "placed" && $0["from"] is String }.count
            #expect(fromCache == needing - expected.values.reduce(0, +) + moved, "\(label): \(run.stdout)")
            for (f, entries) in feeds.enumerated() {
                for entry in entries {
                    let name = "\(Self.feedNames[f])/\(entry.path)"
                    #expect(s.digest(name) == FaultTests.sha(Self.contents[entry.content]), "\(label): \(name)")
                    disk[name] = entry.content
                    urls[name] = entry.url
                }
            }
        }
    }
}
