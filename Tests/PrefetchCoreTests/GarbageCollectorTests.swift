import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// What `gc` (and the end of every `run`) removes, and what it never touches.
@Suite struct GarbageCollectorTests {
    static func feed(_ yaml: String) throws -> Feed {
        try #require(FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: "f.yaml").feed)
    }

    @Test func expiryUsesTheShiftedClockPartialAgeTheRealOne() throws {
        let folder = try TemporaryFolder()
        let cache = folder.path
        try FileManager.default.createDirectory(atPath: cache + "/f", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: cache + "/.prefetch/partial", withIntermediateDirectories: true)
        try folder.write("f/old.bin", "x")
        try folder.write("f/new.bin", "y")
        let listed = CacheFolder.partialName(feed: "f", path: "new.bin")
        try folder.write(".prefetch/partial/" + listed, "partial")
        try folder.write(".prefetch/partial/" + CacheFolder.partialName(feed: "f", path: "gone.bin"), "orphan")
        let feed = try Self.feed("resources:\n  - url: https://e.com/old.bin\n    expires: 2030-01-01T00:00:00Z\n  - url: https://e.com/new.bin\n")
        let real = Instant.now()
        let far = Instant(seconds: 4_102_444_800)  // 2100: past the expiry, but the partial was written just now
        let removals = GarbageCollector.collect(feeds: [feed], cache: CacheFolder.openExisting(cache)!, now: far, realNow: real)
        #expect(removals.map(\.reason).sorted() == ["expired", "partial of a resource no longer listed"])
        #expect(removals.first { $0.reason == "expired" }?.key == ResourceKey(feed: "f", path: "old.bin"))
        // Eight days of real time later, the listed partial is abandoned too.
        let later = GarbageCollector.collect(feeds: [feed], cache: CacheFolder.openExisting(cache)!, now: real, realNow: real.advanced(bySeconds: 8 * 86_400))
        #expect(later.contains { $0.path == ".prefetch/partial/" + listed && $0.reason == "partial untouched for 7 days" })
    }

    @Test func pruneRemovesUnlistedFilesOfThatFeedOnly() throws {
        let folder = try TemporaryFolder()
        try FileManager.default.createDirectory(atPath: folder.path + "/f/sub", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder.path + "/other", withIntermediateDirectories: true)
        try folder.write("f/keep.bin", "k")
        try folder.write("f/sub/stray.bin", "s")
        try folder.write("other/x.bin", "o")
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/f/link", withDestinationPath: "/etc")
        let pruned = try Self.feed("prune: true\nresources:\n  - url: https://e.com/keep.bin\n")
        let removals = GarbageCollector.collect(feeds: [pruned], cache: CacheFolder.openExisting(folder.path)!, now: 0)
        #expect(removals.map(\.path).sorted() == ["f/link", "f/sub/stray.bin"])
        #expect(GarbageCollector.apply(removals).isEmpty)
        #expect(FileManager.default.fileExists(atPath: "/etc/passwd"))  // the link went, not its target
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/f/sub"))  // emptied folders go too
        #expect(FileManager.default.fileExists(atPath: folder.path + "/other/x.bin"))
        let unpruned = try Self.feed("resources:\n  - url: https://e.com/keep.bin\n")
        #expect(GarbageCollector.collect(feeds: [unpruned], cache: CacheFolder.openExisting(folder.path)!, now: 0).isEmpty)
    }

    /// The bug a user found: a resource's folder replaced by a symlink to a folder outside
    /// the cache, the resource expired, `gc` removed the file out there. Walking by folder
    /// descriptor, the symlink is never followed.
    @Test func anExpiredFileBehindASymlinkedFolderIsNeverReached() throws {
        let folder = try TemporaryFolder()
        let outside = try TemporaryFolder()
        try FileManager.default.createDirectory(atPath: folder.path + "/g", withIntermediateDirectories: true)
        try outside.write("x.bin", "not prefetch's")
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/g/sub", withDestinationPath: outside.path)
        let feed = try Self.feed("name: g\nresources:\n  - url: https://e.com/x.bin\n    path: sub/x.bin\n    expires: 2020-01-01T00:00:00Z\n")
        let removals = GarbageCollector.collect(feeds: [feed], cache: CacheFolder.openExisting(folder.path)!, now: Instant.now())
        #expect(removals.isEmpty, "\(removals.map(\.path))")
        #expect(GarbageCollector.apply(removals).isEmpty)
        #expect(FileManager.default.fileExists(atPath: outside.path + "/x.bin"))
    }

    /// A hostile cache, generated: for seeded random trees of listed, unlisted and expired
    /// files, symlinks planted at random places (a feed's folder, a folder on the way, a
    /// file, the partials folder) point into a decoy folder holding files of the same names.
    /// After `gc`, the decoy is exactly as it was, and nothing but the links themselves, and
    /// the files gc was meant to remove, is gone from the cache.
    @Test func aHostileCacheNeverLetsGCReachOutside() throws {
        let seed: UInt64 = UInt64(ProcessInfo.processInfo.environment["PREFETCH_GC_SEED"] ?? "") ?? 71
        var random = SplitMix64(seed: seed)
        for round in 0..<40 {
            let cache = try TemporaryFolder()
            let decoy = try TemporaryFolder()
            var yaml = "name: f\nprune: true\nresources:\n"
            var decoyFiles: Set<String> = []
            var expectedGone: Set<String> = []
            var expectedKept: Set<String> = []
            for index in 0..<6 {
                let depth = Int(random.next() % 3)
                let dirs = (0..<depth).map { "d\($0)" }
                let path = (dirs + ["r\(index).bin"]).joined(separator: "/")
                let kind = random.next() % 3  // 0 listed, 1 listed and expired, 2 unlisted
                if kind != 2 {
                    yaml += "  - url: https://e.com/r\(index).bin\n    path: \(path)\n"
                    if kind == 1 { yaml += "    expires: 2020-01-01T00:00:00Z\n" }
                }
                try FileManager.default.createDirectory(atPath: cache.path + "/f/" + dirs.joined(separator: "/"), withIntermediateDirectories: true)
                try cache.write("f/" + path, "cached \(index)")
                if kind == 0 { expectedKept.insert(path) } else { expectedGone.insert(path) }
                // The decoy mirrors the path, so a followed link would find a file to remove.
                try FileManager.default.createDirectory(atPath: decoy.path + "/" + dirs.joined(separator: "/"), withIntermediateDirectories: true)
                try decoy.write(path, "outside \(index)")
                decoyFiles.insert(path)
                try decoy.write("r\(index).bin", "outside top \(index)")
                decoyFiles.insert("r\(index).bin")
            }
            // Plant links: replace a folder on the way, add a link as a file, or link the partials.
            var links: [String] = []
            for _ in 0..<(1 + Int(random.next() % 3)) {
                switch random.next() % 4 {
                case 0:  // a folder on the way becomes a symlink into the decoy
                    let target = "f/d0"
                    guard FileManager.default.fileExists(atPath: cache.path + "/" + target) else { continue }
                    try FileManager.default.removeItem(atPath: cache.path + "/" + target)
                    try FileManager.default.createSymbolicLink(atPath: cache.path + "/" + target, withDestinationPath: decoy.path + "/d0")
                    links.append(target)
                    for p in expectedGone.union(expectedKept) where p.hasPrefix("d0/") { expectedGone.remove(p); expectedKept.remove(p) }
                case 1:  // a link as a file, named like a listed one
                    let name = "f/link\(links.count).bin"
                    try FileManager.default.createSymbolicLink(atPath: cache.path + "/" + name, withDestinationPath: decoy.path + "/r0.bin")
                    links.append(name)
                case 2:  // the partials folder is a link
                    try? FileManager.default.createDirectory(atPath: cache.path + "/.prefetch", withIntermediateDirectories: true)
                    try? FileManager.default.removeItem(atPath: cache.path + "/.prefetch/partial")
                    try FileManager.default.createSymbolicLink(atPath: cache.path + "/.prefetch/partial", withDestinationPath: decoy.path)
                    try decoy.write("orphan.part", "a partial's name")
                    decoyFiles.insert("orphan.part")
                default:  // a second feed's folder is a link
                    try? FileManager.default.createSymbolicLink(atPath: cache.path + "/h", withDestinationPath: decoy.path)
                }
            }
            let before = Dictionary(uniqueKeysWithValues: decoyFiles.map { ($0, try? Data(contentsOf: URL(fileURLWithPath: decoy.path + "/" + $0))) })
            let feeds = [try Self.feed(yaml), try Self.feed("name: h\nprune: true\nresources:\n  - url: https://e.com/r0.bin\n    expires: 2020-01-01T00:00:00Z\n")]
            let removals = GarbageCollector.collect(feeds: feeds, cache: CacheFolder.openExisting(cache.path)!, now: Instant.now())
            let failures = GarbageCollector.apply(removals)
            #expect(failures.isEmpty, "seed \(seed) round \(round): \(failures.map { $0.0.path })")
            for file in decoyFiles {
                let now = try? Data(contentsOf: URL(fileURLWithPath: decoy.path + "/" + file))
                #expect(now != nil && now == before[file] ?? nil, "seed \(seed) round \(round): gc touched \(decoy.path)/\(file) outside the cache")
            }
            for path in expectedGone { #expect(!FileManager.default.fileExists(atPath: cache.path + "/f/" + path), "seed \(seed) round \(round): \(path) stayed") }
            for path in expectedKept { #expect(FileManager.default.fileExists(atPath: cache.path + "/f/" + path), "seed \(seed) round \(round): \(path) went") }
        }
    }
}
