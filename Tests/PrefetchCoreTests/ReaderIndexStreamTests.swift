import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// The reader index (SPEC §6) is made and written in pieces: at 100,000 resources it is
/// about 33 MB, which a `run` must not hold whole.
@Suite struct ReaderIndexStreamTests {
    static let count = 3000

    static func feed() throws -> Feed {
        var yaml = "name: t\nrefresh: 1d\nresources:\n"
        for i in 0..<count { yaml += "  - url: https://e.com/r/\(i).bin?token=s\(i)\n    path: d\(i % 7)/f\(i).bin\n" }
        return try #require(FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: "t.yaml").feed)
    }

    static func plan(_ feed: Feed, cached: CachedFiles) throws -> FeedPlan {
        let input = PlanInput(feeds: [feed], cached: cached, conditions: ConditionSnapshot(freeBytes: 1 << 40, freeSource: "test"),
                              now: Instant(seconds: 1_800_000_000))
        return try #require(Planner.plan(input).feeds.first)
    }

    /// Every third resource cached, the rest missing: the pieces are bounded, there are many,
    /// and put together they are the index made whole, which lists every resource once.
    @Test func theIndexComesInBoundedPiecesThatMakeTheWhole() throws {
        let feed = try Self.feed()
        let keys = feed.resources.indices.filter { $0 % 3 == 0 }.map { ResourceKey(feed: "t", path: feed.resources[$0].path) }
        let cached = CachedFiles(keys, in: [feed])
        let plan = try Self.plan(feed, cached: cached)
        let at = Instant(seconds: 1_800_000_000)
        let whole = ReaderIndex.render(feed, plan: plan, state: StateSnapshot(), cached: cached, size: { _ in 7 }, updated: at)
        var pieces: [[UInt8]] = []
        ReaderIndex.render(feed, plan: plan, state: StateSnapshot(), cached: cached, size: { _ in 7 }, updated: at) {
            pieces.append(Array($0))
        }
        #expect(whole.count > 4 * (1 << 16), "the test's index must span several pieces: \(whole.count) bytes")
        #expect(pieces.count >= whole.count / (1 << 16))
        #expect(pieces.allSatisfy { $0.count <= (1 << 16) + 4096 }, "largest piece \(pieces.map(\.count).max() ?? 0)")
        #expect(pieces.flatMap { $0 } == whole)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(whole)) as? [String: Any])
        let files = try #require(object["files"] as? [[String: Any]]), missing = try #require(object["missing"] as? [[String: Any]])
        #expect(files.count == keys.count)
        #expect(missing.count == Self.count - keys.count)
        #expect(Set((files + missing).compactMap { $0["path"] as? String }) == Set(feed.resources.map(\.path)))
        #expect(files.allSatisfy { ($0["url"] as? String)?.hasSuffix("?…") == true }, "query values elided")
    }

    /// Written through the cache folder in pieces, the index on disk is the whole text, and
    /// no temporary file is left beside it.
    @Test func theStreamedIndexOnDiskIsTheWholeText() throws {
        let folder = try TemporaryFolder()
        let cache = try CacheFolder.open(folder.path + "/cache").get()
        let feed = try Self.feed()
        let plan = try Self.plan(feed, cached: CachedFiles())
        let at = Instant(seconds: 1_800_000_000)
        let whole = ReaderIndex.render(feed, plan: plan, state: StateSnapshot(), cached: CachedFiles(), size: { _ in nil }, updated: at)
        var calls = 0
        let written = cache.writeIndex(feed: "t") { write in
            ReaderIndex.render(feed, plan: plan, state: StateSnapshot(), cached: CachedFiles(), size: { _ in nil }, updated: at) {
                calls += 1
                write($0)
            }
        }
        #expect(throws: Never.self) { try written.get() }
        #expect(calls > 1)
        #expect(cache.readIndex(feed: "t", view: .writer) == whole)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path + "/cache/t")
        #expect(names == [CacheLayout.index])
    }
}
