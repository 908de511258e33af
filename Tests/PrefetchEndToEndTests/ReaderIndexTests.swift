import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// SPEC §6: `CACHE/<feed>/.prefetch-index.json`, what a kiosk application reads: replaced
/// atomically by every command that changed the feed, left alone by a pass that did not.
@Suite(.serialized) struct ReaderIndexTests {
    static let a = FaultTests.bytes(5000, seed: 500), b = FaultTests.bytes(7000, seed: 501)

    static func index(_ s: FaultHarness, feed: String = "t") throws -> [String: Any] {
        let data = try Data(contentsOf: s.cache.appendingPathComponent("\(feed)/.prefetch-index.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func files(_ index: [String: Any]) -> [String: [String: Any]] {
        Dictionary(uniqueKeysWithValues: ((index["files"] as? [[String: Any]]) ?? []).map { ($0["path"] as? String ?? "", $0) })
    }

    static func missing(_ index: [String: Any]) -> [String: [String: Any]] {
        Dictionary(uniqueKeysWithValues: ((index["missing"] as? [[String: Any]]) ?? []).map { ($0["path"] as? String ?? "", $0) })
    }

    /// After a run: every file with its size, SHA-256, URL (query elided) and times, current;
    /// an embargoed resource is missing but does not make the release incomplete; a failed
    /// one does.
    @Test func theIndexSaysWhatIsOfflineAndWhetherTheReleaseArrived() throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(Self.a, etag: "\"a\""))
        s.origin.serve("/b.bin", OriginResource(Self.b, etag: "\"b\""))
        let header = "refresh: 1h\nretry: { attempts: 1, backoff: 1s }\nresources:\n  - url: ORIGIN/a.bin?token=SECRET\n    path: a.bin\n  - url: ORIGIN/b.bin\n"
            + "  - url: ORIGIN/later.bin\n    not_before: \"2099-01-01T00:00:00Z\"\n"
        try s.feed(header)
        let run = try s.runJSON()
        #expect(run.status == 0, "\(run.diagnostics)")
        var index = try Self.index(s)
        #expect(index["feed"] as? String == "t" && index["complete"] as? Bool == true, "\(index)")
        #expect(index["release"] is String && index["updated"] is String, "the first run's release is in force: \(index)")
        let files = Self.files(index)
        #expect(files["a.bin"]?["size"] as? Int == Self.a.count && files["a.bin"]?["sha256"] as? String == FaultTests.sha(Self.a))
        #expect(files["a.bin"]?["url"] as? String == s.origin.url("/a.bin?…"), "\(files["a.bin"] ?? [:])")
        #expect(files["b.bin"]?["current"] as? Bool == true && files["b.bin"]?["fetched"] is String && files["b.bin"]?["validated"] is String)
        #expect(Self.missing(index)["later.bin"]?["state"] as? String == "deferred" && Self.missing(index)["later.bin"]?["reason"] as? String == "embargo")
        let raw = try String(contentsOf: s.cache.appendingPathComponent("t/.prefetch-index.json"), encoding: .utf8)
        #expect(!raw.contains("SECRET"))
        // A resource that fails: the release is not complete, and the index says why.
        try s.feed(header + "  - url: ORIGIN/gone.bin\n")
        let failed = try s.runJSON()
        #expect(failed.status == 1)
        index = try Self.index(s)
        #expect(index["complete"] as? Bool == false)
        #expect(Self.missing(index)["gone.bin"]?["state"] as? String == "failed", "\(index)")
    }

    /// A pass that changed nothing leaves the index alone (same inode, same bytes); the
    /// next release's revalidation that fails leaves the copy in place but not current.
    @Test func aPassThatChangedNothingLeavesTheIndexAlone() throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(Self.a, etag: "\"a\""))
        try s.feed("refresh: 1h\nretry: { attempts: 1, backoff: 1s }\nresources:\n  - url: ORIGIN/a.bin\n")
        #expect(try s.runJSON().status == 0)
        let path = s.cache.appendingPathComponent("t/.prefetch-index.json").path
        // Every job placed: the index comes from the plan made before the run, which knew no
        // release yet; the release the run began is in force.
        let first = try Self.index(s)
        #expect(first["release"] is String, "\(first)")
        let before = try String(contentsOfFile: path, encoding: .utf8)
        var info = Glibc.stat()
        #expect(lstat(path, &info) == 0)
        let inode = info.st_ino
        #expect(try s.runJSON(offset: "+10m").status == 0)  // fresh: nothing to do
        #expect(lstat(path, &info) == 0 && info.st_ino == inode)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == before)
        // Two hours on, a new release; the revalidation fails: the copy stays, not current.
        s.origin.inject("/a.bin", [.status(500)])
        #expect(try s.runJSON(offset: "+2h").status == 1)
        let index = try Self.index(s)
        #expect(index["complete"] as? Bool == false && Self.files(index)["a.bin"]?["current"] as? Bool == false, "\(index)")
        #expect(s.cached("t/a.bin") == Self.a)
        // No stray temporary file is left beside it.
        #expect(s.dir.listing().filter { $0.contains(".prefetch-index.json.") }.isEmpty)
    }

    /// Issue 19: the run's own prune removed `b.bin` and `c.bin`, which the manifest no longer
    /// lists, and the index still listed both (a prune removal named no resource, so the feed
    /// did not count as changed). Now the run that prunes rewrites the index, for a plain
    /// feed and a `consistency: release` one (whose live generation the prune works on when
    /// no release is staged); and `gc` rewrites an index that lists a file the feed's folder
    /// no longer holds (one an earlier version left behind), even when it removes nothing.
    @Test(arguments: ["", "consistency: release\n"])
    func theRunsOwnPruneLeavesTheIndex(consistency: String) throws {
        let s = try FaultHarness()
        let c = FaultTests.bytes(3000, seed: 502)
        s.origin.serve("/a.bin", OriginResource(Self.a, etag: "\"a\""))
        s.origin.serve("/b.bin", OriginResource(Self.b, etag: "\"b\""))
        s.origin.serve("/c.bin", OriginResource(c, etag: "\"c\""))
        let header = "refresh: 1h\nprune: true\n" + consistency + "resources:\n  - url: ORIGIN/a.bin\n"
        try s.feed(header + "  - url: ORIGIN/b.bin\n  - url: ORIGIN/c.bin\n")
        #expect(try s.runJSON().status == 0)
        #expect(Set(Self.files(try Self.index(s)).keys) == ["a.bin", "b.bin", "c.bin"])
        let stale = try Data(contentsOf: s.cache.appendingPathComponent("t/.prefetch-index.json"))
        // The manifest drops b and c; a is fresh (nothing is transferred): the run prunes them.
        try s.feed(header)
        let run = try s.run(["run"], environment: ["PREFETCH_CLOCK_OFFSET": "+10m"])
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(!s.exists("t/b.bin") && !s.exists("t/c.bin") && s.cached("t/a.bin") == Self.a)
        var index = try Self.index(s)
        #expect(Set(Self.files(index).keys) == ["a.bin"], "the index lists pruned files: \(index)")
        #expect(Self.missing(index).isEmpty && index["complete"] as? Bool == true, "\(index)")
        // An index that still lists them (as an earlier version left it): `gc` rewrites it.
        try stale.write(to: s.cache.appendingPathComponent("t/.prefetch-index.json"))
        let gc = try s.run(["gc"])
        #expect(gc.status == 0 && gc.stdout.contains("gc: 0 files removed"), "\(gc.diagnostics)")
        index = try Self.index(s)
        #expect(Set(Self.files(index).keys) == ["a.bin"], "gc left a stale index: \(index)")
        // A current index is left alone by a `gc` that removes nothing (same inode).
        let path = s.cache.appendingPathComponent("t/.prefetch-index.json").path
        var before = Glibc.stat(), after = Glibc.stat()
        #expect(lstat(path, &before) == 0)
        #expect(try s.run(["gc"]).status == 0)
        #expect(lstat(path, &after) == 0 && after.st_ino == before.st_ino)
    }

    /// `gc` with `prune: true` never removes the index, and rewrites it when it removed a
    /// file of the feed; a manifest path may not start with `.prefetch`.
    @Test func gcKeepsTheIndexAndAPathMayNotClaimIt() throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(Self.a))
        s.origin.serve("/b.bin", OriginResource(Self.b))
        try s.feed("prune: true\nresources:\n  - url: ORIGIN/a.bin\n  - url: ORIGIN/b.bin\n")
        #expect(try s.runJSON().status == 0)
        try s.feed("prune: true\nresources:\n  - url: ORIGIN/a.bin\n")
        let gc = try s.run(["gc"])
        #expect(gc.status == 0 && gc.stdout.contains("t/b.bin"), "\(gc.stdout)\(gc.stderr)")
        let index = try Self.index(s)
        #expect(Set(Self.files(index).keys) == ["a.bin"], "\(index)")
        try s.feed("resources:\n  - url: ORIGIN/a.bin\n    path: .prefetch-index.json\n")
        let validate = try BinaryRunner.run(["validate", "feeds"], in: s.dir.url)
        #expect(validate.status == 2 && validate.stderr.contains("t.yaml:3:11: error: a path cannot start with '.prefetch'"), "\(validate.stderr)")
    }
}
