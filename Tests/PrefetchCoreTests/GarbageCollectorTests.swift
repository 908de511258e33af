import Foundation
import Testing
@testable import PrefetchCore

/// What `gc` (and the end of every `run`) removes, and what it never touches.
@Suite struct GarbageCollectorTests {
    static func feed(_ yaml: String) throws -> Feed {
        try #require(FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: "f.yaml").feed)
    }

    @Test func expiryUsesTheShiftedClockPartialAgeTheRealOne() throws {
        let folder = try TemporaryFolderForUnitTests()
        let cache = folder.path
        try FileManager.default.createDirectory(atPath: cache + "/f", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: cache + "/.prefetch/partial", withIntermediateDirectories: true)
        folder.write("f/old.bin", "x")
        folder.write("f/new.bin", "y")
        let listed = CacheFolder.partialName(feed: "f", path: "new.bin")
        folder.write(".prefetch/partial/" + listed, "partial")
        folder.write(".prefetch/partial/" + CacheFolder.partialName(feed: "f", path: "gone.bin"), "orphan")
        let feed = try Self.feed("resources:\n  - url: https://e.com/old.bin\n    expires: 2030-01-01T00:00:00Z\n  - url: https://e.com/new.bin\n")
        let real = Instant.now()
        let far = Instant(seconds: 4_102_444_800)  // 2100: past the expiry, but the partial was written just now
        let removals = GarbageCollector.collect(feeds: [feed], cache: cache, now: far, realNow: real)
        #expect(removals.map(\.reason).sorted() == ["expired", "partial of a resource no longer listed"])
        #expect(removals.first { $0.reason == "expired" }?.key == ResourceKey(feed: "f", path: "old.bin"))
        // Eight days of real time later, the listed partial is abandoned too.
        let later = GarbageCollector.collect(feeds: [feed], cache: cache, now: real, realNow: real.advanced(bySeconds: 8 * 86_400))
        #expect(later.contains { $0.path == ".prefetch/partial/" + listed && $0.reason == "partial untouched for 7 days" })
    }

    @Test func pruneRemovesUnlistedFilesOfThatFeedOnly() throws {
        let folder = try TemporaryFolderForUnitTests()
        try FileManager.default.createDirectory(atPath: folder.path + "/f/sub", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder.path + "/other", withIntermediateDirectories: true)
        folder.write("f/keep.bin", "k")
        folder.write("f/sub/stray.bin", "s")
        folder.write("other/x.bin", "o")
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/f/link", withDestinationPath: "/etc")
        let pruned = try Self.feed("prune: true\nresources:\n  - url: https://e.com/keep.bin\n")
        let removals = GarbageCollector.collect(feeds: [pruned], cache: folder.path, now: 0)
        #expect(removals.map(\.path).sorted() == ["f/link", "f/sub/stray.bin"])
        #expect(GarbageCollector.apply(removals, cache: folder.path).isEmpty)
        #expect(FileManager.default.fileExists(atPath: "/etc/passwd"))  // the link went, not its target
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/f/sub"))  // emptied folders go too
        #expect(FileManager.default.fileExists(atPath: folder.path + "/other/x.bin"))
        let unpruned = try Self.feed("resources:\n  - url: https://e.com/keep.bin\n")
        #expect(GarbageCollector.collect(feeds: [unpruned], cache: folder.path, now: 0).isEmpty)
    }
}
