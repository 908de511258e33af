import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// SPEC §6: the folder of a feed whose manifest is gone is kept for `removed_feed_grace`
/// (7d) from the first pass that noticed, then removed by `gc` and the end of `run`; never
/// at once, never when no manifest at all is found, never a folder prefetch did not record.
@Suite(.serialized) struct RemovedFeedTests {
    static let a = FaultTests.bytes(3000, seed: 600), b = FaultTests.bytes(4000, seed: 601)

    static func scenario() throws -> FaultHarness {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(a))
        s.origin.serve("/b.bin", OriginResource(b))
        try s.feed("resources:\n  - url: ORIGIN/a.bin\n", name: "t")
        try s.feed("resources:\n  - url: ORIGIN/b.bin\n    path: deep/b.bin\n", name: "u")
        #expect(try s.runJSON().status == 0)
        try s.dir.write("cache/other/keep.txt", "never recorded\n")
        return s
    }

    @Test func aRemovedFeedIsKeptForItsGraceThenRemoved() throws {
        let s = try Self.scenario()
        unlink(s.dir.url.appendingPathComponent("feeds/u.yaml").path)
        let noticed = try s.runJSON()
        #expect(noticed.status == 0 && noticed.stderr.contains("kept  u/  (its manifest is gone"), "\(noticed.stderr)")
        #expect(s.cached("u/deep/b.bin") == Self.b, "removed at once")
        let early = try s.run(["gc"], environment: ["PREFETCH_CLOCK_OFFSET": "+6d"])
        #expect(early.status == 0 && s.cached("u/deep/b.bin") == Self.b, "\(early.stdout)")
        let dry = try s.run(["gc", "--dry-run"], environment: ["PREFETCH_CLOCK_OFFSET": "+8d"])
        #expect(dry.stdout.contains("would remove  u/") && s.cached("u/deep/b.bin") == Self.b, "\(dry.stdout)")
        // A symlink planted in the folder is removed as a link; what it points at stays.
        let outside = try s.dir.write("outside/precious.txt", "not the cache's\n")
        #expect(symlink(s.dir.url.appendingPathComponent("outside").path, s.cache.appendingPathComponent("u/deep/link").path) == 0)
        let late = try s.run(["gc"], environment: ["PREFETCH_CLOCK_OFFSET": "+8d"])
        #expect(late.status == 0 && late.stdout.contains("removed  u/  (2 files;"), "\(late.stdout)\(late.stderr)")
        #expect(!s.exists("u"), "the folder stayed")
        #expect(FileManager.default.fileExists(atPath: outside), "removal followed a symlink out of the cache")
        #expect(s.state()?.resources.keys.contains { $0.feed == "u" } == false)
        #expect(s.cached("t/a.bin") == Self.a && s.cached("other/keep.txt") != nil, "something else was touched")
    }

    /// A manifest that comes back drops the notice: its grace starts afresh the next time.
    @Test func aManifestThatComesBackIsNotRemoved() throws {
        let s = try Self.scenario()
        let manifest = s.dir.url.appendingPathComponent("feeds/u.yaml")
        let text = try String(contentsOf: manifest, encoding: .utf8)
        unlink(manifest.path)
        #expect(try s.runJSON().status == 0)
        try text.write(to: manifest, atomically: true, encoding: .utf8)
        #expect(try s.runJSON(offset: "+1d").status == 0)
        unlink(manifest.path)
        let again = try s.runJSON(offset: "+8d")  // gone again: noticed anew, not 8 days old
        #expect(again.stderr.contains("kept  u/"), "\(again.stderr)")
        #expect(s.cached("u/deep/b.bin") == Self.b)
    }

    /// No manifest at all (an empty or unmounted feeds folder): nothing is scheduled.
    @Test func noManifestAtAllRemovesNothing() throws {
        let s = try Self.scenario()
        for name in ["t", "u"] { unlink(s.dir.url.appendingPathComponent("feeds/\(name).yaml").path) }
        _ = try s.run(["gc"], environment: ["PREFETCH_CLOCK_OFFSET": "+1d"])
        _ = try s.run(["gc"], environment: ["PREFETCH_CLOCK_OFFSET": "+30d"])
        #expect(s.cached("t/a.bin") == Self.a && s.cached("u/deep/b.bin") == Self.b)
    }
}
